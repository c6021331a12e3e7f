package admission

import (
	"encoding/json"
	"fmt"
	"regexp"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/persona-operator/persona-operator/internal/suggest"
)

// presence is what a raw map holds under a key. The semantic checks read
// values through it so that a value of the wrong type, already reported by
// the strict walk, is skipped rather than reported again.
type presence int

const (
	absent    presence = iota // no key, or null
	wrongType                 // a value of another JSON type
	present                   // a value of the expected type
)

// lookup returns m[key] and whether it is set: present and not null.
func lookup(m map[string]any, key string) (any, bool) {
	v, ok := m[key]
	return v, ok && v != nil
}

func getString(m map[string]any, key string) (string, presence) {
	v, ok := lookup(m, key)
	if !ok {
		return "", absent
	}
	s, ok := v.(string)
	if !ok {
		return "", wrongType
	}
	return s, present
}

func getBool(m map[string]any, key string) (bool, presence) {
	v, ok := lookup(m, key)
	if !ok {
		return false, absent
	}
	b, ok := v.(bool)
	if !ok {
		return false, wrongType
	}
	return b, present
}

func getMap(m map[string]any, key string) (map[string]any, presence) {
	v, ok := lookup(m, key)
	if !ok {
		return nil, absent
	}
	mm, ok := v.(map[string]any)
	if !ok {
		return nil, wrongType
	}
	return mm, present
}

// getList is the list at key, or nil when it is absent or no list.
func getList(m map[string]any, key string) []any {
	l, _ := m[key].([]any)
	return l
}

// sortedKeys returns the keys of m in order, so errors come out in the same
// order on every run.

var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// KeyPath is the path of key k under p. Plain keys read as fields
// (spec.systemPrompt.platform.waiver), as users write them; any other key is
// bracketed (spec.vars[a.b]) so that the path stays unambiguous. A key
// longer than maxShownBytes is cut, as values are: every error under it
// carries its path, and one key of a megabyte in a hundred errors' paths
// took the heap past the manager's limit.
func KeyPath(p *field.Path, k string) *field.Path {
	if len(k) > maxShownBytes {
		k = truncate(k)
		if p == nil {
			return field.NewPath(k)
		}
		return p.Key(k)
	}
	switch {
	case p == nil:
		// A top-level key: a bracket needs a parent to hang on.
		return field.NewPath(k)
	case plainKey.MatchString(k):
		return p.Child(k)
	}
	return p.Key(k)
}

// maxShownBytes bounds the bad values and keys quoted in messages, so that a
// huge value cannot blow up an error message.
const maxShownBytes = 64

// shortValue is v as quoted in an error: scalars as they are (long strings
// cut), lists and objects omitted.
func shortValue(v any) any {
	switch v := v.(type) {
	case string:
		return truncate(v)
	case bool, float64, float32, int64, int32:
		return v
	case int:
		return int64(v)
	case int8, int16, uint, uint8, uint16, uint32, uint64, json.Number:
		return truncate(fmt.Sprint(v))
	}
	return field.OmitValueType{}
}

func truncate(s string) string { return cut(s, maxShownBytes) }

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// jsonType names the JSON type of a raw value, for type mismatch messages.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case float64, float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, json.Number:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("a Go %T", v)
}

// typeError reports a value whose JSON type is not the expected one, e.g.
// "must be a boolean, not a string".
func typeError(p *field.Path, v any, want string) *field.Error {
	return field.Invalid(p, shortValue(v), fmt.Sprintf("must be %s, not %s", want, jsonType(v)))
}

// unknownField reports a key the schema does not declare, with the closest
// known key as a suggestion, or the list of known keys when none is close.
func unknownField(p *field.Path, key string, known []string) *field.Error {
	return field.Invalid(p, truncate(key), "unknown field; "+suggest.Hint(key, known, "known fields"))
}
