package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/render"
)

// marshalPersona writes a Persona object as YAML for people to read: keys
// in the order of the API types (the prompt last, platform sections in
// render order), multi-line text as literal blocks. The result is checked
// to decode, as kubectl decodes it, to exactly obj; when it would not, the
// plain sorted encoding of sigs.k8s.io/yaml is used instead.
func marshalPersona(obj map[string]any) ([]byte, error) {
	want, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	root := &yamlv3.Node{Kind: yamlv3.MappingNode}
	for _, k := range []string{"apiVersion", "kind", "metadata", "spec"} {
		v, ok := obj[k]
		if !ok {
			continue
		}
		var t reflect.Type
		switch k {
		case "metadata":
			t = reflect.TypeFor[objectMeta]()
		case "spec":
			t = reflect.TypeFor[personaSpecOrder]()
		}
		root.Content = append(root.Content, stringNode(k), node(v, t, k))
	}
	var buf bytes.Buffer
	enc := yamlv3.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(root); err == nil && enc.Close() == nil && decodesTo(buf.Bytes(), want) {
		return buf.Bytes(), nil
	}
	plain, err := yaml.Marshal(obj)
	if err != nil {
		return nil, err
	}
	if !decodesTo(plain, want) {
		return nil, fmt.Errorf("internal error: the Persona does not encode to YAML that decodes to the same object")
	}
	return plain, nil
}

// decodesTo reports whether YAML decodes, as kubectl decodes it, to the
// object whose JSON encoding is want.
func decodesTo(doc, want []byte) bool {
	var v any
	if err := yaml.Unmarshal(doc, &v); err != nil {
		return false
	}
	got, err := json.Marshal(v)
	return err == nil && bytes.Equal(got, want)
}

// objectMeta orders the metadata of an imported object.
type objectMeta struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

// personaSpecOrder is v1alpha1.PersonaSpec with the prompt, the long text,
// moved last.
type personaSpecOrder struct {
	Description     string                     `json:"description"`
	Model           string                     `json:"model"`
	Harness         string                     `json:"harness"`
	ReasoningEffort string                     `json:"reasoningEffort"`
	Streaming       bool                       `json:"streaming"`
	Inherit         []string                   `json:"inherit"`
	Layers          []v1alpha1.LayerReference  `json:"layers"`
	SystemPrompt    *v1alpha1.SystemPromptSpec `json:"systemPrompt"`
	Vars            map[string]string          `json:"vars"`
	Context         *v1alpha1.PersonaContext   `json:"context"`
	Variants        []v1alpha1.Variant         `json:"variants"`
	Prompt          string                     `json:"prompt"`
}

// platformMap marks the map of platform sections, ordered as rendered.
var platformMap = reflect.TypeFor[map[string]v1alpha1.PlatformOverride]()

// node converts a JSON-shaped value to a YAML node. t is the Go type the
// value decodes into, when known: it orders the keys of objects.
func node(v any, t reflect.Type, path string) *yamlv3.Node {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch v := v.(type) {
	case map[string]any:
		n := &yamlv3.Node{Kind: yamlv3.MappingNode}
		for _, k := range orderedKeys(v, t) {
			n.Content = append(n.Content, stringNode(k), node(v[k], fieldType(t, k), path+"."+k))
		}
		return n
	case []any:
		n := &yamlv3.Node{Kind: yamlv3.SequenceNode}
		var elem reflect.Type
		if t != nil && t.Kind() == reflect.Slice {
			elem = t.Elem()
		}
		for _, e := range v {
			n.Content = append(n.Content, node(e, elem, path+"[]"))
		}
		return n
	case string:
		return stringNode(v)
	case bool:
		return &yamlv3.Node{Kind: yamlv3.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(v)}
	case nil:
		return &yamlv3.Node{Kind: yamlv3.ScalarNode, Tag: "!!null", Value: "null"}
	}
	// Numbers (int64, float64, json.Number): as JSON writes them.
	raw, _ := json.Marshal(v)
	tag := "!!int"
	if bytes.ContainsAny(raw, ".eE") {
		tag = "!!float"
	}
	return &yamlv3.Node{Kind: yamlv3.ScalarNode, Tag: tag, Value: string(raw)}
}

// orderedKeys are the keys of m in the order of the fields of struct type t,
// platform sections in render order, any other keys sorted after them.
func orderedKeys(m map[string]any, t reflect.Type) []string {
	var order []string
	switch {
	case t == platformMap:
		order = render.Catalog
	case t != nil && t.Kind() == reflect.Struct:
		for i := range t.NumField() {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			order = append(order, name)
		}
	}
	keys := slices.Sorted(maps.Keys(m))
	slices.SortStableFunc(keys, func(a, b string) int {
		return rank(order, a) - rank(order, b)
	})
	return keys
}

func rank(order []string, k string) int {
	if i := slices.Index(order, k); i >= 0 {
		return i
	}
	return len(order)
}

// fieldType is the type of key k in a value of type t, when known.
func fieldType(t reflect.Type, k string) reflect.Type {
	if t == nil {
		return nil
	}
	switch t.Kind() {
	case reflect.Map:
		return t.Elem()
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name == k {
				return f.Type
			}
		}
	}
	return nil
}

// plainSafe matches strings that read back as the same string when written
// without quotes, in YAML 1.1 (kubectl) and 1.2 alike.
var plainSafe = regexp.MustCompile(`^[A-Za-z/][A-Za-z0-9._/-]*( [A-Za-z0-9._/()-]+)*$`)

// yaml11Words are plain words that YAML 1.1 reads as booleans or null.
var yaml11Words = []string{"y", "n", "yes", "no", "on", "off", "true", "false", "null"}

// stringNode is a string scalar: plain when that is safe, a literal block
// when it has several lines, double-quoted otherwise. The encoder falls
// back to double quotes for text a block cannot hold.
func stringNode(s string) *yamlv3.Node {
	n := &yamlv3.Node{Kind: yamlv3.ScalarNode, Tag: "!!str", Value: s}
	switch {
	case strings.Contains(s, "\n"):
		n.Style = yamlv3.LiteralStyle
	case plainSafe.MatchString(s) && !slices.Contains(yaml11Words, strings.ToLower(s)):
	default:
		n.Style = yamlv3.DoubleQuotedStyle
	}
	return n
}
