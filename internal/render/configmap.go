package render

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"time"
)

// The keys of the ConfigMap data (personas.md#delivery).
const (
	SystemPromptKey = "system-prompt.md"
	PersonaKey      = "persona.md"
	BundleKey       = "bundle.json"
	// RevisionKey is the operator's record of the revision the other keys
	// are (personas.md#revisions). ContentHash leaves it out: it tells
	// when and why the content was made, not what it is.
	RevisionKey = "revision.json"
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

// ConfigMap renders every key of the ConfigMap of b: the system prompt, one
// per variant, persona.md and bundle.json (personas.md#delivery). The renders
// share one budget of MaxPersonaDuration besides their own (personas.md#limits).
func (e *Engine) ConfigMap(b *Bundle) (*Output, error) {
	return e.ConfigMapBy(b, time.Time{})
}

// ConfigMapBy is ConfigMap within what is left of a budget already begun:
// the renders end by deadline too, when it is not zero and comes first (a
// second render charged to a Persona's one budget).
func (e *Engine) ConfigMapBy(b *Bundle, deadline time.Time) (*Output, error) {
	if !deadline.IsZero() && !time.Now().Before(deadline) {
		return nil, e.limits.personaDurationError() // nothing left of it
	}
	if e.limits.MaxPersonaDuration > 0 {
		if own := time.Now().Add(e.limits.MaxPersonaDuration); deadline.IsZero() || own.Before(deadline) {
			deadline = own
		}
	}
	prompt, err := e.render(b, "", deadline)
	if err != nil {
		return nil, err
	}
	data, err := e.configMapData(b, prompt, deadline)
	if err != nil {
		return nil, err
	}
	size := dataSize(data)
	if size > e.limits.MaxConfigMapBytes {
		return nil, &TooLargeError{Bytes: size, Limit: e.limits.MaxConfigMapBytes}
	}
	return &Output{Data: data, Hash: ContentHash(data), Bytes: size, Pieces: prompt.Pieces}, nil
}

// configMapData is the ConfigMap data of b, whose own system prompt is
// already rendered: it renders the variants' prompts.
func (e *Engine) configMapData(b *Bundle, prompt *Prompt, deadline time.Time) (map[string]string, error) {
	bundle, err := bundleText(b)
	if err != nil {
		return nil, err
	}
	data := map[string]string{
		SystemPromptKey: prompt.Text,
		PersonaKey:      b.PersonaMarkdown(),
		BundleKey:       bundle,
	}
	for _, v := range b.Variants {
		p, err := e.render(b, v.Name, deadline)
		if err != nil {
			return nil, err
		}
		data[VariantKey(v.Name)] = p.Text
	}
	return data, nil
}

// dataSize is what MaxConfigMapBytes bounds: every key and value together.
func dataSize(data map[string]string) int {
	size := 0
	for k, v := range data {
		size += len(k) + len(v)
	}
	return size
}

// ContentHash is sha256:<hex> over the JSON encoding of data, whose keys
// encoding/json writes sorted. The encoding goes into a pooled buffer
// rather than a new copy of the data.
func ContentHash(data map[string]string) string {
	if _, ok := data[RevisionKey]; ok {
		data = maps.Clone(data)
		delete(data, RevisionKey)
	}
	buf := buffers.Get().(*bytes.Buffer)
	defer putBuffer(buf)
	if err := json.NewEncoder(buf).Encode(data); err != nil {
		panic(err) // a map of strings always encodes
	}
	// Encode ends with a newline that json.Marshal does not write.
	sum := sha256.Sum256(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return "sha256:" + hex.EncodeToString(sum[:])
}
