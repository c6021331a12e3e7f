package render_test

import (
	"strings"
	"testing"

	"github.com/persona-operator/persona-operator/internal/render"
)

// harnessPrompt is carried in bundle.json, the persona's and each
// variant's, omitted when empty (keep), and required of no reader: it
// changes how a launcher wires the prompt, never the prompt.
func TestBundleCarriesHarnessPrompt(t *testing.T) {
	b := bare("Body")
	b.Persona.Harness = "codex"
	before, err := render.MarshalBundle(b)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(before), "harnessPrompt") {
		t.Errorf("a bundle without harnessPrompt names it: %s", before)
	}
	b.Persona.HarnessPrompt = "replace"
	b.Variants = []render.Variant{{Name: "kept", HarnessPrompt: "keep"}, {Name: "plain", Model: "m"}}
	raw, err := render.MarshalBundle(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"persona":{"name":"p","namespace":"ns","harness":"codex","harnessPrompt":"replace"}`,
		`"variants":[{"name":"kept","harnessPrompt":"keep"},{"name":"plain","model":"m"}]`,
	} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("bundle.json %s\nlacks %s", raw, want)
		}
	}
	if strings.Contains(string(raw), "requires") {
		t.Errorf("bundle.json requires a feature: %s", raw)
	}
	got, err := render.UnmarshalBundle(raw)
	if err != nil {
		t.Fatal(err)
	}
	if got.Persona.HarnessPrompt != "replace" || got.Variants[0].HarnessPrompt != "keep" {
		t.Errorf("read back %+v %+v", got.Persona, got.Variants)
	}
	if mustRender(t, got, "") != "Body\n" || mustRender(t, got, "kept") != "Body\n" {
		t.Error("harnessPrompt changed the prompt")
	}
}

// ReadLaunches reads what a launcher needs of a bundle: a variant's fields
// over the persona's, the harness claude and harnessPrompt keep when unset.
func TestReadLaunches(t *testing.T) {
	raw := `{"version":1,"persona":{"name":"p","namespace":"n","prompt":"A long body","model":"gpt-5.1-codex","harness":"codex",` +
		`"reasoningEffort":"high","harnessPrompt":"replace"},"context":{},"sections":[{"key":"workspace","origin":"default","template":"W"}],` +
		`"variants":[{"name":"claude","harness":"claude","model":"claude-sonnet-4-5","harnessPrompt":"keep"},{"name":"low","reasoningEffort":"low"}]}`
	l, err := render.ReadLaunches([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	for variant, want := range map[string]render.Launch{
		"":       {Harness: "codex", Model: "gpt-5.1-codex", ReasoningEffort: "high", HarnessPrompt: "replace"},
		"claude": {Harness: "claude", Model: "claude-sonnet-4-5", ReasoningEffort: "high", HarnessPrompt: "keep"},
		"low":    {Harness: "codex", Model: "gpt-5.1-codex", ReasoningEffort: "low", HarnessPrompt: "replace"},
	} {
		if got, ok := l.For(variant); !ok || got != want {
			t.Errorf("variant %q: %+v, want %+v", variant, got, want)
		}
	}
	if _, ok := l.For("absent"); ok {
		t.Error("a variant the bundle lacks has settings")
	}

	bareRaw := `{"version":1,"persona":{"name":"p","namespace":"n"},"context":{},"sections":[]}`
	l, err = render.ReadLaunches([]byte(bareRaw))
	if err != nil {
		t.Fatal(err)
	}
	if want := (render.Launch{Harness: "claude", HarnessPrompt: "keep"}); l.Persona != want {
		t.Errorf("unset: %+v, want %+v", l.Persona, want)
	}
	if _, err := render.ReadLaunches([]byte(`{"persona":`)); err == nil {
		t.Error("read a truncated bundle")
	}
}
