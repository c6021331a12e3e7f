package admission

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

func TestStructKeysFollowJSONTags(t *testing.T) {
	got := structOf(reflect.TypeFor[v1alpha1.PersonaSpec]()).names
	want := []string{"description", "model", "harness", "reasoningEffort", "harnessPrompt", "streaming", "prompt",
		"inherit", "layers", "systemPrompt", "vars", "context", "variants", "revisionHistoryLimit", "rollout"}
	if !slices.Equal(got, want) {
		t.Errorf("PersonaSpec keys = %v, want %v", got, want)
	}
	got = structOf(reflect.TypeFor[v1alpha1.PromptLayerSpec]()).names
	want = []string{"description", "source", "mode", "template", "templateFrom"}
	if !slices.Equal(got, want) {
		t.Errorf("PromptLayerSpec keys = %v, want %v", got, want)
	}
	got = structOf(reflect.TypeFor[v1alpha1.ClusterPromptLayerSpec]()).names
	want = []string{"description", "position", "template", "namespaceSelector", "personaSelector"}
	if !slices.Equal(got, want) {
		t.Errorf("ClusterPromptLayerSpec keys = %v, want %v", got, want)
	}
}

// shapeTest exercises the walk on types the API does not use today:
// embedded structs, untagged and skipped fields, numbers, bytes, interfaces.
type shapeTest struct {
	shapeInline `json:",inline"`
	*shapePtr
	Named   shapeInline `json:"named,omitempty"`
	Untag   string
	Skipped string `json:"-"`
	Count   int    `json:"count"`
	Ratio   float64
	Raw     []byte            `json:"raw"`
	Any     any               `json:"any"`
	Nested  map[string][]bool `json:"nested"`
	private string            //nolint:unused // the walk must pass over an unexported field
}

type shapeInline struct {
	A string `json:"a"`
}

type shapePtr struct {
	B bool `json:"b"`
}

func TestShape(t *testing.T) {
	typ := reflect.TypeFor[shapeTest]()
	if got, want := structOf(typ).names, []string{"a", "b", "named", "Untag", "count", "Ratio", "raw", "any", "nested"}; !slices.Equal(got, want) {
		t.Fatalf("keys = %v, want %v", got, want)
	}
	cases := []struct {
		name string
		v    any
		want []want
	}{
		{"valid", map[string]any{
			"a": "x", "b": true, "named": map[string]any{"a": "y"}, "Untag": "z", "count": float64(3),
			"Ratio": 0.5, "raw": "aGk=", "any": []any{1, "x"}, "nested": map[string]any{"k": []any{true, false}},
		}, nil},
		{"integers of any Go type", map[string]any{"count": int64(3)}, nil},
		{"int", map[string]any{"count": 3}, nil},
		{"nulls", map[string]any{"a": nil, "named": nil, "nested": map[string]any{"k": nil}}, nil},
		{"unknown and skipped keys", map[string]any{"Skipped": "x", "private": "y", "A": "z"}, []want{
			invalid("Skipped"), invalid("private"), invalid("A"),
		}},
		{"wrong types", map[string]any{
			"a": 1, "b": "true", "named": "x", "count": 1.5, "Ratio": "1", "raw": 5, "nested": map[string]any{"k": []any{"true", nil}},
		}, []want{
			invalid("a"), invalid("b"), invalid("named"), invalid("count"), invalid("Ratio"), invalid("raw"),
			invalid("nested.k[0]"), invalid("nested.k[1]"),
		}},
		{"not an object", []any{}, []want{invalid("x")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			errs := checkShape(field.NewPath("x"), c.v, typ)
			for _, e := range errs {
				e.Field = strings.TrimPrefix(e.Field, "x.")
			}
			assertErrors(t, errs, c.want)
		})
	}
}

// TestRobustness feeds values no decoder produces, cycles and absurd types:
// the validators must report them, not panic or hang.
func TestRobustness(t *testing.T) {
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	cyclic["knowledge"] = cyclic
	objects := []map[string]any{
		nil,
		{},
		{"metadata": nil, "spec": nil},
		{"metadata": map[string]any{"name": []string{"x"}}, "spec": map[string]string{"model": "x"}},
		{"metadata": map[string]any{"name": "p"}, "spec": map[string]any{
			"inherit":      []string{"a"},
			"vars":         map[string]string{"a": "b"},
			"context":      cyclic,
			"systemPrompt": map[string]any{"platform": cyclic, "extensions": []any{cyclic, 5, nil}},
			"layers":       []any{map[string]any{"name": cyclic}},
			"variants":     []any{map[string]any{"name": 1.5, "harness": struct{}{}}},
			"description":  make(chan int),
			"streaming":    func() {},
		}},
		{"metadata": map[string]any{"name": "l"}, "spec": map[string]any{
			"template": cyclic, "templateFrom": cyclic, "mode": 7, "source": []any{},
		}},
		{"metadata": map[string]any{"name": "l"}, "spec": map[string]any{
			"templateFrom": map[string]any{"configMapKeyRef": map[string]any{"name": 1, "key": false}},
		}},
		{"": cyclic, "\x00": nil, "spec": map[string]any{"": 1, "a.b[c]": cyclic}},
	}
	for i, obj := range objects {
		for _, validate := range []func(map[string]any) field.ErrorList{ValidatePersona, ValidatePromptLayer} {
			for _, e := range validate(obj) {
				if e.Field == "" {
					t.Errorf("object %d: error without a path: %v", i, e)
				}
				_ = e.Error()
			}
		}
	}
}
