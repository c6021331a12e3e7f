package render

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	kjson "sigs.k8s.io/json"
)

// The keys of the ConfigMap data (personas.md#delivery).
const (
	SystemPromptKey = "system-prompt.md"
	PersonaKey      = "persona.md"
	BundleKey       = "bundle.json"
)

// VariantKey is the key of a variant's system prompt.
func VariantKey(variant string) string { return "system-prompt." + variant + ".md" }

// Output is everything the operator writes for one persona.
type Output struct {
	// Data is the ConfigMap data.
	Data map[string]string
	// Hash is sha256:<hex> of Data (ContentHash).
	Hash string
	// Bytes is the size of Data: every key and value.
	Bytes int
	// Pieces are the pieces of system-prompt.md.
	Pieces []Piece
}

// TooLargeError reports ConfigMap data over the limit (personas.md#conditions TooLarge).
type TooLargeError struct {
	Bytes, Limit int
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the rendered ConfigMap data is %d bytes, over the limit of %d bytes", e.Bytes, e.Limit)
}

// ConfigMap renders every key of the ConfigMap of b: the system prompt, one
// per variant, persona.md and bundle.json.
func (e *Engine) ConfigMap(b *Bundle) (*Output, error) {
	prompt, err := e.Render(b, "")
	if err != nil {
		return nil, err
	}
	bundle, err := MarshalBundle(b)
	if err != nil {
		return nil, err
	}
	data := map[string]string{
		SystemPromptKey: prompt.Text,
		PersonaKey:      withNewline(b.Persona.Prompt),
		BundleKey:       string(bundle),
	}
	for _, v := range b.Variants {
		p, err := e.Render(b, v.Name)
		if err != nil {
			return nil, err
		}
		data[VariantKey(v.Name)] = p.Text
	}
	size := 0
	for k, v := range data {
		size += len(k) + len(v)
	}
	if size > e.limits.MaxConfigMapBytes {
		return nil, &TooLargeError{Bytes: size, Limit: e.limits.MaxConfigMapBytes}
	}
	return &Output{Data: data, Hash: ContentHash(data), Bytes: size, Pieces: prompt.Pieces}, nil
}

// ContentHash is sha256:<hex> over the JSON encoding of data, whose keys
// encoding/json writes sorted.
func ContentHash(data map[string]string) string {
	raw, err := json.Marshal(data)
	if err != nil {
		panic(err) // a map of strings always encodes
	}
	sum := sha256.Sum256(raw)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// MarshalBundle serializes b as bundle.json: indented, HTML characters left
// as they are, one trailing newline. The same bundle gives the same bytes.
func MarshalBundle(b *Bundle) ([]byte, error) {
	out := *b
	out.Version = BundleVersion
	if out.Sections == nil {
		out.Sections = []Section{} // every section removed: [], not null
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(&out); err != nil {
		return nil, fmt.Errorf("encode bundle: %w", err)
	}
	return buf.Bytes(), nil
}

// UnmarshalBundle reads bundle.json strictly: unknown or differently cased
// fields, duplicate fields and other versions are errors.
func UnmarshalBundle(raw []byte) (*Bundle, error) {
	var b Bundle
	strict, err := kjson.UnmarshalStrict(raw, &b, kjson.DisallowUnknownFields, kjson.DisallowDuplicateFields)
	if err != nil {
		return nil, fmt.Errorf("read bundle: %w", err)
	}
	if len(strict) > 0 {
		return nil, fmt.Errorf("read bundle: %w", errors.Join(strict...))
	}
	if b.Version != BundleVersion {
		return nil, fmt.Errorf("read bundle: version %d is not supported (this build reads version %d)", b.Version, BundleVersion)
	}
	return &b, nil
}
