package manifest

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/resolve"
	"github.com/persona-operator/persona-operator/test/fixtures"
)

// The set is a resolve.Lookup.
var _ resolve.Lookup = (*Set)(nil)

// summary lists the kept objects as ORIGIN Kind namespace/name.
func summary(s *Set) string {
	var b strings.Builder
	for _, o := range s.Objects() {
		b.WriteString(o.Origin.String() + " " + o.Kind + " " + o.Namespace + "/" + o.Name + "\n")
	}
	return b.String()
}

func problems(s *Set) string {
	var b strings.Builder
	for _, p := range s.Problems {
		b.WriteString(p.String() + "\n")
	}
	return b.String()
}

const (
	personaA = "apiVersion: prompts.persona-operator.dev/v1alpha1\nkind: Persona\nmetadata:\n  name: a\nspec:\n  prompt: A\n"
	layerL   = "apiVersion: prompts.persona-operator.dev/v1alpha1\nkind: PromptLayer\nmetadata: {name: l, namespace: team}\nspec: {template: L}\n"
	cmC      = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {k: v}\n"
	deploy   = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n"
)

func TestAddDocuments(t *testing.T) {
	tests := []struct {
		name, content     string
		objects, problems string
	}{
		{
			name:    "multi-document YAML, other kinds ignored",
			content: personaA + "---\n" + deploy + "---\n" + layerL + "---\n" + cmC,
			objects: "f:1 Persona default/a\nf:3 PromptLayer team/l\nf:4 ConfigMap default/c\n",
		},
		{
			name:    "empty and comment-only documents are not counted",
			content: "# license header\n---\n---\n\n" + personaA + "---\n# trailing\n...\n---\n" + cmC + "---\n",
			objects: "f:1 Persona default/a\nf:2 ConfigMap default/c\n",
		},
		{
			name:    "documents that are not objects are ignored",
			content: "just a string\n---\n[1, 2]\n---\nnull\n---\nresources: [a.yaml]\n---\n" + personaA,
			objects: "f:5 Persona default/a\n",
		},
		{
			name:    "a stream of JSON objects",
			content: "\n{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"j\"}}\n{\"apiVersion\": \"prompts.persona-operator.dev/v1alpha1\", \"kind\": \"Persona\", \"metadata\": {\"name\": \"k\"}}",
			objects: "f:1 ConfigMap default/j\nf:2 Persona default/k\n",
		},
		{
			name:    "a List's items",
			content: "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(strings.TrimSuffix(personaA, "\n"), "\n", "\n  ") + "\n- " + strings.ReplaceAll(strings.TrimSuffix(deploy, "\n"), "\n", "\n  ") + "\n",
			objects: "f:1:items[0] Persona default/a\n",
		},
		{
			name:     "an unknown kind and version of our group",
			content:  "apiVersion: prompts.persona-operator.dev/v1alpha1\nkind: Personna\n---\napiVersion: prompts.persona-operator.dev/v2\nkind: Persona\n",
			problems: "f:1: kind: Unsupported value: \"Personna\": prompts.persona-operator.dev/v1alpha1 has the kinds \"Persona\", \"PromptLayer\", \"ClusterPromptLayer\" and \"PromptPlatform\"\nf:2: apiVersion: Unsupported value: \"prompts.persona-operator.dev/v2\": supported values: \"prompts.persona-operator.dev/v1alpha1\"\n",
		},
		{
			name:     "invalid YAML names its document, the others are kept",
			content:  personaA + "---\nkind: [\n---\n" + cmC,
			objects:  "f:1 Persona default/a\nf:3 ConfigMap default/c\n",
			problems: "f:2: invalid YAML: ", // the rest is go-yaml's wording
		},
		{
			name:     "a repeated key in one of our objects",
			content:  personaA + "metadata: {name: b}\n",
			problems: "f:1: invalid YAML: line 7: ", // the rest is go-yaml's wording
		},
		{
			name:    "a repeated key elsewhere is not our business",
			content: deploy + "kind: Service\n",
		},
		{
			name:     "duplicates name both documents",
			content:  personaA + "---\n" + personaA + "---\n" + strings.Replace(personaA, "name: a", "name: a\n  namespace: other", 1),
			objects:  "f:1 Persona default/a\nf:2 Persona default/a\nf:3 Persona other/a\n",
			problems: "f:2 Persona/a: metadata.name: Duplicate value: \"a\": Persona default/a is also defined at f:1\n",
		},
		{
			name:    "byte order mark",
			content: "\ufeff" + personaA,
			objects: "f:1 Persona default/a\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New("")
			s.Add("f", []byte(tt.content))
			if got := summary(s); got != tt.objects {
				t.Errorf("objects:\n%s\nwant\n%s", got, tt.objects)
			}
			got := problems(s)
			if strings.HasSuffix(tt.problems, ": ") {
				if !strings.HasPrefix(got, tt.problems) {
					t.Errorf("problems:\n%s\nwant prefix\n%s", got, tt.problems)
				}
			} else if got != tt.problems {
				t.Errorf("problems:\n%s\nwant\n%s", got, tt.problems)
			}
		})
	}
}

func TestReadPaths(t *testing.T) {
	dir := t.TempDir()
	fixtures.WriteFile(t, dir, "b/2.yaml", personaA)
	fixtures.WriteFile(t, dir, "b/10.yml", cmC)
	fixtures.WriteFile(t, dir, "a.json", `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "j"}}`)
	fixtures.WriteFile(t, dir, "README.md", "---\nnot: yaml: at all\n")
	fixtures.WriteFile(t, dir, ".git/config.yaml", "kind: [\n")
	fixtures.WriteFile(t, dir, "b/.hidden.yaml", "kind: [\n")
	single := fixtures.WriteFile(t, t.TempDir(), "single.txt", layerL)

	s, err := Read([]string{dir, single, filepath.Join(dir, "b/2.yaml"), "-"}, Options{Namespace: "ns", Stdin: strings.NewReader(deploy + "---\n" + cmC)})
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(dir, "a.json") + ":1 ConfigMap ns/j\n" +
		filepath.Join(dir, "b/10.yml") + ":1 ConfigMap ns/c\n" +
		filepath.Join(dir, "b/2.yaml") + ":1 Persona ns/a\n" +
		single + ":1 PromptLayer team/l\n" +
		"<stdin>:2 ConfigMap ns/c\n"
	if got := summary(s); got != want {
		t.Errorf("objects:\n%s\nwant\n%s", got, want)
	}
	// The stdin ConfigMap repeats b/10.yml's.
	if got := problems(s); !strings.HasPrefix(got, "<stdin>:2 ConfigMap/c: metadata.name: Duplicate value") {
		t.Errorf("problems: %s", got)
	}
	if s.Documents != 6 {
		t.Errorf("documents = %d, want 6", s.Documents)
	}

	if _, err := Read([]string{"-", "-"}, Options{Stdin: strings.NewReader("")}); err == nil {
		t.Error("reading stdin twice is no error")
	}
	if _, err := Read([]string{filepath.Join(dir, "missing.yaml")}, Options{}); err == nil {
		t.Error("a missing file is no error")
	}
}

func TestGet(t *testing.T) {
	s := New("team")
	s.Add("f", []byte(personaA+"---\n"+layerL+"---\n"+cmC))
	ctx := context.Background()

	var p v1alpha1.Persona
	if err := s.Get(ctx, client.ObjectKey{Namespace: "team", Name: "a"}, &p); err != nil {
		t.Fatal(err)
	}
	if p.Name != "a" || p.Namespace != "team" || p.Spec.Prompt != "A" || p.Kind != "Persona" {
		t.Errorf("persona = %+v", p)
	}
	var l v1alpha1.PromptLayer
	if err := s.Get(ctx, client.ObjectKey{Namespace: "team", Name: "l"}, &l); err != nil || *l.Spec.Template != "L" {
		t.Errorf("layer: %v %+v", err, l)
	}
	var cm corev1.ConfigMap
	if err := s.Get(ctx, client.ObjectKey{Namespace: "team", Name: "c"}, &cm); err != nil || cm.Data["k"] != "v" {
		t.Errorf("configmap: %v %+v", err, cm)
	}
	for _, tc := range []struct {
		key client.ObjectKey
		obj client.Object
	}{
		{client.ObjectKey{Namespace: "other", Name: "a"}, &v1alpha1.Persona{}},
		{client.ObjectKey{Namespace: "team", Name: "a"}, &v1alpha1.PromptLayer{}},
		{client.ObjectKey{Namespace: "team", Name: "zz"}, &corev1.ConfigMap{}},
	} {
		if err := s.Get(ctx, tc.key, tc.obj); !apierrors.IsNotFound(err) {
			t.Errorf("Get(%v, %T) = %v, want NotFound", tc.key, tc.obj, err)
		}
	}
	if err := s.Get(ctx, client.ObjectKey{Namespace: "team", Name: "a"}, &corev1.Secret{}); err == nil || apierrors.IsNotFound(err) {
		t.Errorf("Get of a Secret = %v, want an error", err)
	}
}

func TestPersonasSorted(t *testing.T) {
	s := New("")
	s.Add("f", []byte(strings.Replace(personaA, "name: a", "name: z", 1)+"---\n"+personaA+"---\n"+strings.Replace(personaA, "name: a", "name: b\n  namespace: aaa", 1)))
	var got []string
	for _, p := range s.Personas() {
		got = append(got, p.Namespace+"/"+p.Name)
	}
	if strings.Join(got, " ") != "aaa/b default/a default/z" {
		t.Errorf("personas = %v", got)
	}
}
