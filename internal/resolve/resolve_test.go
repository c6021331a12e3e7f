package resolve_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/render"
	"github.com/persona-operator/persona-operator/internal/resolve"
)

// objects is a Lookup over objects of namespace "ns", counting reads.
type objects struct {
	items map[string]client.Object // kind/name
	reads int
}

func (o *objects) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	o.reads++
	kind := reflect.TypeOf(obj).Elem().Name()
	src, ok := o.items[kind+"/"+key.Name]
	clusterScoped := kind == "Namespace" || kind == "ClusterPromptLayer" || kind == "PromptPlatform"
	if !ok || (key.Namespace != "ns" && !clusterScoped) {
		return apierrors.NewNotFound(schema.GroupResource{Resource: kind}, key.Name)
	}
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(src).Elem())
	return nil
}

func (o *objects) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	l, ok := list.(*v1alpha1.ClusterPromptLayerList)
	if !ok {
		return fmt.Errorf("list of %T is not supported", list)
	}
	for _, obj := range o.items {
		if c, ok := obj.(*v1alpha1.ClusterPromptLayer); ok {
			l.Items = append(l.Items, *c)
		}
	}
	return nil
}

func set(objs ...client.Object) *objects {
	o := &objects{items: map[string]client.Object{}}
	for _, obj := range objs {
		o.items[reflect.TypeOf(obj).Elem().Name()+"/"+obj.GetName()] = obj
	}
	return o
}

func ptr[T any](v T) *T { return &v }

func persona(name string, spec v1alpha1.PersonaSpec) *v1alpha1.Persona {
	return &v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: spec}
}

func promptLayer(name string, spec v1alpha1.PromptLayerSpec) *v1alpha1.PromptLayer {
	return &v1alpha1.PromptLayer{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: spec}
}

func inherit(names ...string) []v1alpha1.PersonaName {
	out := make([]v1alpha1.PersonaName, len(names))
	for i, n := range names {
		out[i] = v1alpha1.PersonaName(n)
	}
	return out
}

func layers(names ...string) []v1alpha1.LayerReference {
	out := make([]v1alpha1.LayerReference, len(names))
	for i, n := range names {
		out[i] = v1alpha1.LayerReference{Name: n}
	}
	return out
}

func resolveOK(t *testing.T, lookup resolve.Lookup, p *v1alpha1.Persona) *resolve.Result {
	t.Helper()
	res, err := resolve.Resolve(context.Background(), lookup, p)
	if err != nil {
		t.Fatalf("resolve: %v", err)
	}
	return res
}

// TestAuraInheritance is Aura's Base/Agentic example: bodies concatenated,
// parents first.
func TestAuraInheritance(t *testing.T) {
	base := persona("base", v1alpha1.PersonaSpec{Prompt: "You are Aura, a coding assistant.\n"})
	agentic := persona("agentic", v1alpha1.PersonaSpec{Inherit: inherit("base"), Prompt: "## Critical Rules\n1. Complete every task before stopping.\n"})
	res := resolveOK(t, set(base), agentic)
	want := "You are Aura, a coding assistant.\n\n## Critical Rules\n1. Complete every task before stopping."
	if res.Bundle.Persona.Prompt != want {
		t.Errorf("prompt %q\nwant %q", res.Bundle.Persona.Prompt, want)
	}
	if !reflect.DeepEqual(res.Dependencies, []v1alpha1.Dependency{{Kind: "Persona", Name: "base"}}) {
		t.Errorf("dependencies %v", res.Dependencies)
	}
}

// TestDiamond checks the chain order of personas.md#inheritance and what wins where.
func TestDiamond(t *testing.T) {
	base := persona("base", v1alpha1.PersonaSpec{
		Prompt: "base", Model: ptr("base-model"), Harness: ptr(v1alpha1.HarnessCodex), Streaming: ptr(true),
		Vars:    map[string]string{"a": "base", "b": "base"},
		Context: &v1alpha1.PersonaContext{Workspace: ptr("base-ws"), Repos: []v1alpha1.Repo{{Name: "base/repo"}}},
		Layers:  layers("l1"),
		SystemPrompt: &v1alpha1.SystemPromptSpec{
			Platform:   map[string]v1alpha1.PlatformOverride{"waiver": {Remove: ptr(true)}, "workspace": {Replace: ptr("base workspace")}},
			Extensions: []v1alpha1.Extension{{ID: "one", Template: "base one"}, {ID: "two", Template: "base two"}},
		},
	})
	a := persona("a", v1alpha1.PersonaSpec{
		Inherit: inherit("base"), Prompt: "a", Model: ptr("a-model"),
		Vars:   map[string]string{"a": "a"},
		Layers: layers("l2", "l1"),
		SystemPrompt: &v1alpha1.SystemPromptSpec{
			Platform:   map[string]v1alpha1.PlatformOverride{"waiver": {Replace: ptr("a waiver")}},
			Extensions: []v1alpha1.Extension{{ID: "one", Template: "a one"}, {ID: "three", Template: "a three"}},
		},
	})
	b := persona("b", v1alpha1.PersonaSpec{
		Inherit: inherit("base"), Prompt: "b", Streaming: ptr(false),
		Context: &v1alpha1.PersonaContext{Repos: []v1alpha1.Repo{}},
		SystemPrompt: &v1alpha1.SystemPromptSpec{
			Platform: map[string]v1alpha1.PlatformOverride{"workspace": {Remove: ptr(true)}},
		},
	})
	p := persona("p", v1alpha1.PersonaSpec{
		Inherit: inherit("a", "b"), Prompt: "p",
		Layers:   layers("l3"),
		Variants: []v1alpha1.Variant{{Name: "fast", Model: "haiku"}},
	})
	pl := func(name, source string) *v1alpha1.PromptLayer {
		return promptLayer(name, v1alpha1.PromptLayerSpec{Source: source, Template: ptr(name)})
	}
	lookup := set(base, a, b, pl("l1", "app"), pl("l2", "run"), pl("l3", "user"))
	res := resolveOK(t, lookup, p)
	bundle := res.Bundle

	if bundle.Persona.Prompt != "base\n\na\n\nb\n\np" {
		t.Errorf("chain order: prompt %q, want base, a, b, p", bundle.Persona.Prompt)
	}
	if bundle.Persona.Model != "a-model" || bundle.Persona.Harness != "codex" || bundle.Persona.Streaming {
		t.Errorf("scalars %+v", bundle.Persona)
	}
	if !reflect.DeepEqual(bundle.Vars, map[string]string{"a": "a", "b": "base"}) {
		t.Errorf("vars %v", bundle.Vars)
	}
	if *bundle.Context.Workspace != "base-ws" || bundle.Context.Repos == nil || len(bundle.Context.Repos) != 0 {
		t.Errorf("context: an empty list set later must win: %+v", bundle.Context)
	}
	var keys []string
	for _, s := range bundle.Sections {
		keys = append(keys, s.Key)
		switch s.Key {
		case "waiver":
			if s.Template != "a waiver" || s.Origin != "persona/a" {
				t.Errorf("waiver %+v", s)
			}
		case "gitPush":
			if s.Origin != "default" {
				t.Errorf("gitPush origin %q", s.Origin)
			}
		}
	}
	if len(keys) != len(render.Catalog)-1 || strings.Contains(strings.Join(keys, ","), "workspace") {
		t.Errorf("sections %v: want every catalog key but workspace, which b removes", keys)
	}
	wantExt := []render.Extension{
		{ID: "one", Origin: "persona/a", Template: "a one"},
		{ID: "two", Origin: "persona/base", Template: "base two"},
		{ID: "three", Origin: "persona/a", Template: "a three"},
	}
	if !reflect.DeepEqual(bundle.Extensions, wantExt) {
		t.Errorf("extensions %+v", bundle.Extensions)
	}
	var layerNames []string
	for _, l := range bundle.Layers {
		layerNames = append(layerNames, l.Name+":"+l.Source+":"+l.Mode)
	}
	// In chain order, first occurrence kept: l1 (base), l2 (a), l3 (p); then by rank.
	if strings.Join(layerNames, ",") != "l3:user:append,l1:app:append,l2:run:append" {
		t.Errorf("layers %v", layerNames)
	}
	if !reflect.DeepEqual(bundle.Variants, []render.Variant{{Name: "fast", Model: "haiku"}}) {
		t.Errorf("variants %v", bundle.Variants)
	}
	if len(res.Dependencies) != 6 {
		t.Errorf("dependencies %v", res.Dependencies)
	}
}

func TestCycle(t *testing.T) {
	a := persona("a", v1alpha1.PersonaSpec{Inherit: inherit("b")})
	b := persona("b", v1alpha1.PersonaSpec{Inherit: inherit("a")})
	_, err := resolve.Resolve(context.Background(), set(a, b), a)
	var cycle *resolve.CycleError
	if !errors.As(err, &cycle) || err.Error() != "inheritance cycle: a -> b -> a" {
		t.Errorf("got %v", err)
	}
	self := persona("self", v1alpha1.PersonaSpec{Inherit: inherit("self")})
	if _, err := resolve.Resolve(context.Background(), set(), self); err == nil || err.Error() != "inheritance cycle: self -> self" {
		t.Errorf("got %v", err)
	}
}

func TestMissingReferences(t *testing.T) {
	p := persona("p", v1alpha1.PersonaSpec{
		Inherit: inherit("gone"),
		Layers:  layers("absent", "from-cm", "bad-key"),
		SystemPrompt: &v1alpha1.SystemPromptSpec{
			Extensions: []v1alpha1.Extension{{ID: "x", Template: `{{ include "fragment" . }}`}},
		},
	})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns", Labels: templateSource}, Data: map[string]string{"AGENTS.md": "agents"}}
	fromCM := promptLayer("from-cm", v1alpha1.PromptLayerSpec{TemplateFrom: &v1alpha1.TemplateSource{ConfigMapKeyRef: v1alpha1.ConfigMapKeyReference{Name: "cm", Key: "AGENTS.md"}}})
	badKey := promptLayer("bad-key", v1alpha1.PromptLayerSpec{TemplateFrom: &v1alpha1.TemplateSource{ConfigMapKeyRef: v1alpha1.ConfigMapKeyReference{Name: "cm", Key: "NOPE.md"}}})
	res, err := resolve.Resolve(context.Background(), set(cm, fromCM, badKey), p)
	var nf *resolve.NotFoundError
	if !errors.As(err, &nf) {
		t.Fatalf("got %v", err)
	}
	for _, want := range []string{
		`Persona "gone" (referenced by persona "p") not found`,
		`PromptLayer "absent" (referenced by persona "p") not found`,
		`key "NOPE.md" of ConfigMap "cm" (referenced by layer "bad-key") not found`,
		`PromptLayer "fragment" (referenced by extension "x") not found`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	// Every object read or missing is a dependency, so creating one re-renders.
	want := []v1alpha1.Dependency{
		{Kind: "ConfigMap", Name: "cm"}, {Kind: "Persona", Name: "gone"},
		{Kind: "PromptLayer", Name: "absent"}, {Kind: "PromptLayer", Name: "bad-key"},
		{Kind: "PromptLayer", Name: "fragment"}, {Kind: "PromptLayer", Name: "from-cm"},
	}
	if !reflect.DeepEqual(res.Dependencies, want) {
		t.Errorf("dependencies %v\nwant %v", res.Dependencies, want)
	}
}

func TestIncludesAreResolvedTransitively(t *testing.T) {
	p := persona("p", v1alpha1.PersonaSpec{
		Layers: layers("outer", "off"),
		SystemPrompt: &v1alpha1.SystemPromptSpec{
			Platform: map[string]v1alpha1.PlatformOverride{"workspace": {Replace: ptr(`{{ include "ws" . }}`)}},
		},
	})
	lookup := set(
		promptLayer("outer", v1alpha1.PromptLayerSpec{Template: ptr(`{{ include "middle" . }}`)}),
		promptLayer("middle", v1alpha1.PromptLayerSpec{Template: ptr(`{{ include "inner" . }}`)}),
		promptLayer("inner", v1alpha1.PromptLayerSpec{Template: ptr(`inner`)}),
		promptLayer("ws", v1alpha1.PromptLayerSpec{Template: ptr(`ws`)}),
		// A disable layer's template is never rendered, so its includes are not read.
		promptLayer("off", v1alpha1.PromptLayerSpec{Mode: "disable", Template: ptr(`{{ include "never" . }}`)}),
	)
	res := resolveOK(t, lookup, p)
	want := map[string]string{"middle": `{{ include "inner" . }}`, "inner": "inner", "ws": "ws"}
	if !reflect.DeepEqual(res.Bundle.Includes, want) {
		t.Errorf("includes %v", res.Bundle.Includes)
	}
	off := slices.IndexFunc(res.Bundle.Layers, func(l render.Layer) bool { return l.Name == "off" })
	if off < 0 {
		t.Fatalf("layer off is missing: %+v", res.Bundle.Layers)
	}
	if l := res.Bundle.Layers[off]; l.Mode != "disable" || l.Source != "package" {
		t.Errorf("defaults not applied: %+v", l)
	}
}

// TestSeedBenchLean resolves and renders Murmur's bench-lean persona.
func TestSeedBenchLean(t *testing.T) {
	p := persona("bench-lean", v1alpha1.PersonaSpec{
		Model:  ptr("claude-sonnet-4-6"),
		Prompt: "A lean benchmark persona: a compact workspace summary, no waiver reminder,\nand Codex-specific guidance.\n",
		SystemPrompt: &v1alpha1.SystemPromptSpec{
			Platform: map[string]v1alpha1.PlatformOverride{
				"workspace": {Replace: ptr("{{if .Repos}}Repos: {{range .Repos}}{{.Name}} at {{.Dir}} ({{.Branch}}); {{end}}{{end}}\n")},
				"waiver":    {Remove: ptr(true)},
			},
			Extensions: []v1alpha1.Extension{{ID: "harness_notes", Template: "{{if eq .Harness \"codex\"}}Run the test suite before every commit.{{end}}\n"}},
		},
		Context:  &v1alpha1.PersonaContext{Repos: []v1alpha1.Repo{{Name: "acme/api", Dir: "/w/api", Branch: "main"}, {Name: "acme/web", Dir: "/w/web", Branch: "dev"}}},
		Variants: []v1alpha1.Variant{{Name: "codex", Harness: v1alpha1.HarnessCodex}},
	})
	res := resolveOK(t, set(), p)
	base, err := render.Default().Render(res.Bundle, "")
	if err != nil {
		t.Fatal(err)
	}
	codex, err := render.Default().Render(res.Bundle, "codex")
	if err != nil {
		t.Fatal(err)
	}
	text := func(p *render.Prompt, name string) (string, bool) {
		for _, pc := range p.Pieces {
			if pc.Name == name {
				return pc.Text, true
			}
		}
		return "", false
	}
	if got, _ := text(base, "platform.workspace"); got != "Repos: acme/api at /w/api (main); acme/web at /w/web (dev);" {
		t.Errorf("workspace %q", got)
	}
	if _, ok := text(base, "platform.waiver"); ok {
		t.Error("waiver rendered although removed")
	}
	if _, ok := text(base, "extension.harness_notes"); ok {
		t.Error("the Codex note rendered for claude")
	}
	if _, ok := text(base, "platform.persona"); ok {
		t.Error("the persona section rendered for claude")
	}
	if got, _ := text(codex, "extension.harness_notes"); got != "Run the test suite before every commit." {
		t.Errorf("codex note %q", got)
	}
	if got, _ := text(codex, "platform.persona"); got != "A lean benchmark persona: a compact workspace summary, no waiver reminder,\nand Codex-specific guidance." {
		t.Errorf("codex persona section %q", got)
	}
}

// TestSeedBarePrompt resolves Murmur's bare-prompt: every section removed,
// one extension.
func TestSeedBarePrompt(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", "prompts_v1alpha1_persona_bare_prompt.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var sample v1alpha1.Persona
	if err := yaml.UnmarshalStrict(raw, &sample); err != nil {
		t.Fatal(err)
	}
	spec := sample.Spec
	if got := len(spec.SystemPrompt.Platform); got != len(render.Catalog) {
		t.Fatalf("the sample removes %d sections, want all %d", got, len(render.Catalog))
	}
	res := resolveOK(t, set(), persona("bare-prompt", spec))
	out, err := render.Default().ConfigMap(res.Bundle)
	if err != nil {
		t.Fatal(err)
	}
	// Every section removed: the prompt is the one extension's text.
	if got, want := out.Data["system-prompt.md"], spec.SystemPrompt.Extensions[0].Template; got != want {
		t.Errorf("got %q, want the extension %q", got, want)
	}
	// Without the extension and without caller prompts: no system prompt at all.
	spec.SystemPrompt.Extensions = nil
	res = resolveOK(t, set(), persona("bare-prompt", spec))
	if p, _ := render.Default().Render(res.Bundle, ""); p.Text != "" {
		t.Errorf("got %q, want no system prompt", p.Text)
	}
	// Caller prompts still reach the turn.
	turn := &render.Turn{Context: render.Context{UserSystemPrompt: ptr("From the requester."), AppendSystemPrompt: ptr("From the spawn.")}}
	if p, _ := render.Default().Render(res.Bundle.WithTurn(turn), ""); p.Text != "From the requester.\n\nFrom the spawn.\n" {
		t.Errorf("got %q", p.Text)
	}
}

// TestSeedModelAwareReviewer renders Murmur's model-aware-reviewer extension.
func TestSeedModelAwareReviewer(t *testing.T) {
	platform := map[string]v1alpha1.PlatformOverride{}
	for _, k := range render.Catalog {
		platform[k] = v1alpha1.PlatformOverride{Remove: ptr(true)}
	}
	spec := v1alpha1.PersonaSpec{
		Prompt: "Review the diff for correctness and style.\n",
		SystemPrompt: &v1alpha1.SystemPromptSpec{
			Platform: platform,
			Extensions: []v1alpha1.Extension{{ID: "model_notes", Template: "Model family: {{with .ModelFamily}}{{.}}{{else}}unknown{{end}}.\n" +
				"{{if eq .ModelFamily \"haiku\"}}Favor small, incremental edits over large rewrites.{{end}}\n"}},
		},
		Variants: []v1alpha1.Variant{{Name: "haiku", Model: "claude-haiku-4-5"}},
	}
	res := resolveOK(t, set(), persona("model-aware-reviewer", spec))
	out, err := render.Default().ConfigMap(res.Bundle)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"system-prompt.md":       "Model family: unknown.\n",
		"system-prompt.haiku.md": "Model family: haiku.\nFavor small, incremental edits over large rewrites.\n",
		"persona.md":             "Review the diff for correctness and style.\n",
	}
	for k, v := range want {
		if out.Data[k] != v {
			t.Errorf("%s = %q, want %q", k, out.Data[k], v)
		}
	}
}

// TestResolveReadsEachObjectOnce guards against repeated lookups in the
// diamond and in repeated includes.
func TestResolveReadsEachObjectOnce(t *testing.T) {
	base := persona("base", v1alpha1.PersonaSpec{})
	a := persona("a", v1alpha1.PersonaSpec{Inherit: inherit("base")})
	b := persona("b", v1alpha1.PersonaSpec{Inherit: inherit("base")})
	p := persona("p", v1alpha1.PersonaSpec{Inherit: inherit("a", "b", "a"), SystemPrompt: &v1alpha1.SystemPromptSpec{
		Extensions: []v1alpha1.Extension{{ID: "x", Template: `{{ include "f" . }}{{ include "f" . }}`}, {ID: "y", Template: `{{ include "f" . }}`}},
	}})
	lookup := set(base, a, b, promptLayer("f", v1alpha1.PromptLayerSpec{Template: ptr("f")}))
	resolveOK(t, lookup, p)
	if lookup.reads != 5 {
		t.Errorf("%d reads, want 5 (the PromptPlatform, base, a, b, f)", lookup.reads)
	}
}

// deepChain is c0 inheriting c1 inheriting ... c(n-1), each with a body.
func deepChain(n int) []client.Object {
	objs := make([]client.Object, n)
	for i := range n {
		spec := v1alpha1.PersonaSpec{Prompt: fmt.Sprintf("c%d", i)}
		if i+1 < n {
			spec.Inherit = inherit(fmt.Sprintf("c%d", i+1))
		}
		objs[i] = persona(fmt.Sprintf("c%d", i), spec)
	}
	return objs
}

func TestChainLimit(t *testing.T) {
	t.Run("64 personas resolve", func(t *testing.T) {
		objs := deepChain(resolve.MaxChain)
		res, err := resolve.Resolve(context.Background(), set(objs...), objs[0].(*v1alpha1.Persona))
		if err != nil {
			t.Fatal(err)
		}
		// The bodies join in chain order: the root ancestor first.
		if !strings.HasPrefix(res.Bundle.Persona.Prompt, "c63\n\nc62\n\n") || !strings.HasSuffix(res.Bundle.Persona.Prompt, "c1\n\nc0") {
			t.Errorf("prompt %q", res.Bundle.Persona.Prompt)
		}
	})
	t.Run("65 personas are InheritanceTooDeep", func(t *testing.T) {
		objs := deepChain(resolve.MaxChain + 1)
		_, err := resolve.Resolve(context.Background(), set(objs...), objs[0].(*v1alpha1.Persona))
		var tooDeep *resolve.TooDeepError
		if !errors.As(err, &tooDeep) || err.Error() != `inheritance chain holds more than the limit of 64 personas (persona "c64" is the 65th)` {
			t.Errorf("got %v", err)
		}
	})
	t.Run("a 3,000-deep chain reads only what the limit allows", func(t *testing.T) {
		objs := deepChain(3000)
		lookup := set(objs...)
		// Every persona of the chain, as a validation of them all does.
		for _, o := range objs {
			_, _ = resolve.Resolve(context.Background(), lookup, o.(*v1alpha1.Persona))
		}
		// Each resolve reads at most 64 parents (MaxChain-1 of them inside
		// the limit, the 65th persona to find it is past it), then stops.
		if max := 3000 * resolve.MaxChain; lookup.reads > max {
			t.Errorf("%d reads for 3,000 resolves, over %d", lookup.reads, max)
		}
		_, err := resolve.Resolve(context.Background(), lookup, objs[0].(*v1alpha1.Persona))
		if err == nil || err.Error() != `inheritance chain holds more than the limit of 64 personas (persona "c64" is the 65th)` {
			t.Errorf("got %v", err)
		}
	})
}

func BenchmarkDeepChain(b *testing.B) {
	objs := deepChain(3000)
	lookup := set(objs...)
	for b.Loop() {
		for _, o := range objs {
			_, _ = resolve.Resolve(context.Background(), lookup, o.(*v1alpha1.Persona))
		}
	}
}

// templateSource is the label that makes a ConfigMap a templateFrom source.
var templateSource = map[string]string{"prompts.persona-operator.dev/template-source": "true"}

// allowingUnlabelled is a Lookup that reads unlabelled sources, as the
// manager does with --template-source-label=warn.
type allowingUnlabelled struct{ *objects }

func (allowingUnlabelled) ReadsUnlabelledSources() bool { return true }

func TestTemplateSourceLabel(t *testing.T) {
	layer := promptLayer("agents", v1alpha1.PromptLayerSpec{TemplateFrom: &v1alpha1.TemplateSource{ConfigMapKeyRef: v1alpha1.ConfigMapKeyReference{Name: "docs", Key: "AGENTS.md"}}})
	p := persona("p", v1alpha1.PersonaSpec{Layers: layers("agents")})
	const unlabelled = `ConfigMap "docs" (referenced by layer "agents") is not a template source: it lacks the label prompts.persona-operator.dev/template-source: "true"`
	for _, tc := range []struct {
		name   string
		labels map[string]string
		lookup func(*objects) resolve.Lookup
		want   string // the error; "" for the text
	}{
		{"labelled", templateSource, nil, ""},
		{"unlabelled", nil, nil, unlabelled},
		{"labelled other than true", map[string]string{"prompts.persona-operator.dev/template-source": "yes"}, nil, unlabelled},
		{"unlabelled, read all the same", nil, func(o *objects) resolve.Lookup { return allowingUnlabelled{o} }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "docs", Namespace: "ns", Labels: tc.labels}, Data: map[string]string{"AGENTS.md": "Read me."}}
			var lookup resolve.Lookup = set(cm, layer)
			if tc.lookup != nil {
				lookup = tc.lookup(set(cm, layer))
			}
			res, err := resolve.Resolve(context.Background(), lookup, p)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got := res.Bundle.Layers[0].Template; got != "Read me." {
					t.Errorf("template %q", got)
				}
				return
			}
			var nf *resolve.NotFoundError
			if !errors.As(err, &nf) || err.Error() != tc.want {
				t.Errorf("got %v, want %s", err, tc.want)
			}
			// It is awaited like a missing ConfigMap, and its label's arrival re-renders.
			if !slices.Contains(res.Dependencies, v1alpha1.Dependency{Kind: "ConfigMap", Name: "docs"}) {
				t.Errorf("dependencies %v", res.Dependencies)
			}
		})
	}
}
