package admission

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// want is one expected error: its path and type.
type want struct {
	field string
	typ   field.ErrorType
}

// Shorthands for the expected error types.
func required(f string) want     { return want{f, field.ErrorTypeRequired} }
func invalid(f string) want      { return want{f, field.ErrorTypeInvalid} }
func notSupported(f string) want { return want{f, field.ErrorTypeNotSupported} }
func duplicate(f string) want    { return want{f, field.ErrorTypeDuplicate} }
func forbidden(f string) want    { return want{f, field.ErrorTypeForbidden} }
func tooLong(f string) want      { return want{f, field.ErrorTypeTooLong} }
func tooMany(f string) want      { return want{f, field.ErrorTypeTooMany} }

// testCase is one object and the exact set of errors it must produce. hints
// are substrings the error at a path must contain (suggestions, section names).
type testCase struct {
	name  string
	doc   string
	want  []want
	hints map[string]string
}

// decode reads a YAML (or JSON) object the way kubectl-persona does.
func decode(t testing.TB, doc string) map[string]any {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		t.Fatalf("bad test document: %v\n%s", err, doc)
	}
	return obj
}

func runCases(t *testing.T, cases []testCase, validate func(map[string]any) field.ErrorList) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			errs := validate(decode(t, c.doc))
			assertErrors(t, errs, c.want)
			for path, sub := range c.hints {
				assertHint(t, errs, path, sub)
			}
			// Validate must dispatch to the same rules.
			if kind, _ := decode(t, c.doc)["kind"].(string); kind != "" {
				assertErrors(t, Validate(decode(t, c.doc)), c.want)
			}
		})
	}
}

// assertErrors checks that errs are exactly want, in any order, and that
// every error carries a path and renders.
func assertErrors(t *testing.T, errs field.ErrorList, expect []want) {
	t.Helper()
	var got []want
	for _, e := range errs {
		if e.Field == "" {
			t.Errorf("error without a field path: %v", e)
		}
		if !strings.HasPrefix(e.Error(), e.Field+": ") {
			t.Errorf("error does not start with its path: %q", e.Error())
		}
		got = append(got, want{e.Field, e.Type})
	}
	sortWants(got)
	w := slices.Clone(expect)
	sortWants(w)
	if !slices.Equal(got, w) {
		t.Errorf("errors:\n%s\nwant:\n%s", describe(errs), describeWants(w))
	}
}

func assertHint(t *testing.T, errs field.ErrorList, path, sub string) {
	t.Helper()
	for _, e := range errs {
		if e.Field == path && strings.Contains(e.Error(), sub) {
			return
		}
	}
	t.Errorf("no error at %s containing %q:\n%s", path, sub, describe(errs))
}

func sortWants(w []want) {
	slices.SortFunc(w, func(a, b want) int {
		return strings.Compare(a.field+"\x00"+string(a.typ), b.field+"\x00"+string(b.typ))
	})
}

func describe(errs field.ErrorList) string {
	if len(errs) == 0 {
		return "  (none)"
	}
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "  [%s] %s\n", e.Type, e.Error())
	}
	return b.String()
}

func describeWants(w []want) string {
	if len(w) == 0 {
		return "  (none)"
	}
	var b strings.Builder
	for _, x := range w {
		fmt.Fprintf(&b, "  [%s] %s\n", x.typ, x.field)
	}
	return b.String()
}

func TestValidateDispatch(t *testing.T) {
	bad := map[string]any{"metadata": map[string]any{"name": "Bad_Name"}, "spec": "nope"}
	for _, kind := range []any{"ConfigMap", "", nil, 5, "persona"} {
		obj := map[string]any{"kind": kind, "metadata": bad["metadata"], "spec": bad["spec"]}
		if errs := Validate(obj); errs != nil {
			t.Errorf("kind %#v: got errors for a kind that is not ours:\n%s", kind, describe(errs))
		}
	}
	if errs := Validate(nil); errs != nil {
		t.Errorf("nil object: %v", errs)
	}
	for _, kind := range []string{v1alpha1.PersonaKind, v1alpha1.PromptLayerKind, v1alpha1.ClusterPromptLayerKind} {
		obj := map[string]any{"kind": kind, "metadata": bad["metadata"], "spec": bad["spec"]}
		if errs := Validate(obj); len(errs) == 0 {
			t.Errorf("kind %s: a bad object passed", kind)
		}
	}
}

func TestEnvelope(t *testing.T) {
	cases := []testCase{
		{
			name: "misspelled spec at the top level",
			doc:  "kind: Persona\nmetadata: {name: p}\nsepc: {}\n",
			want: []want{invalid("sepc")},
			hints: map[string]string{
				"sepc": `unknown field; did you mean "spec"?`,
			},
		},
		{
			name: "unknown top-level key without a close match",
			doc:  "kind: Persona\nmetadata: {name: p}\nfrobnicate: 1\n",
			want: []want{invalid("frobnicate")},
			hints: map[string]string{
				"frobnicate": "known fields: apiVersion, kind, metadata, spec, status",
			},
		},
		{
			name: "status and apiVersion are allowed",
			doc:  "apiVersion: prompts.persona-operator.dev/v1alpha1\nkind: Persona\nmetadata: {name: p, namespace: ns, labels: {a: b}}\nstatus: {observedGeneration: 3}\n",
		},
		{
			name: "wrong envelope types",
			doc:  "apiVersion: 1\nkind: Persona\nmetadata: {name: p}\nstatus: []\nspec: []\n",
			want: []want{invalid("apiVersion"), invalid("status"), invalid("spec")},
		},
		{
			name: "metadata not an object",
			doc:  "kind: Persona\nmetadata: p\n",
			want: []want{invalid("metadata"), required("metadata.name")},
		},
		{
			name: "missing name",
			doc:  "kind: Persona\nspec: {}\n",
			want: []want{required("metadata.name")},
		},
		{
			name: "empty name",
			doc:  "kind: Persona\nmetadata: {name: ''}\n",
			want: []want{required("metadata.name")},
		},
		{
			name: "name not a string",
			doc:  "kind: Persona\nmetadata: {name: 5}\n",
			want: []want{invalid("metadata.name")},
		},
		{
			name: "null spec is an empty spec",
			doc:  "kind: Persona\nmetadata: {name: p}\nspec: null\n",
		},
	}
	runCases(t, cases, Validate)
}
