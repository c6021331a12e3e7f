package render_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/persona-operator/persona-operator/internal/render"
)

func TestConfigMapData(t *testing.T) {
	b := bare("Hi {{ .Harness }}")
	b.Persona.Prompt = "Body."
	b.Variants = []render.Variant{{Name: "codex", Harness: "codex"}}
	out, err := render.Default().ConfigMap(b)
	if err != nil {
		t.Fatal(err)
	}
	bundle := out.Data["bundle.json"]
	// bundle.json holds the inputs, unrendered (personas.md#delivery): read back, it
	// renders the same ConfigMap.
	read, err := render.UnmarshalBundle([]byte(bundle))
	if err != nil {
		t.Fatalf("bundle.json does not read back: %v\n%s", err, bundle)
	}
	if again, err := render.Default().ConfigMap(read); err != nil || !reflect.DeepEqual(again.Data, out.Data) {
		t.Errorf("bundle.json read back renders %v (%v), want %v", again, err, out.Data)
	}
	want := map[string]string{
		"system-prompt.md":       "Hi claude\n",
		"system-prompt.codex.md": "Hi codex\n",
		"persona.md":             "Body.\n",
		"bundle.json":            bundle,
	}
	if !reflect.DeepEqual(out.Data, want) {
		t.Errorf("data %#v\nwant %#v", out.Data, want)
	}
	size := 0
	for k, v := range want {
		size += len(k) + len(v)
	}
	if out.Bytes != size {
		t.Errorf("bytes %d, want %d", out.Bytes, size)
	}
	// sha256 over the JSON object of the data, keys sorted.
	raw, _ := json.Marshal(want)
	sum := sha256.Sum256(raw)
	if wantHash := "sha256:" + hex.EncodeToString(sum[:]); out.Hash != wantHash {
		t.Errorf("hash %s, want %s", out.Hash, wantHash)
	}
	if !strings.HasPrefix(bundle, "{\n  \"version\": 1,") || !strings.HasSuffix(bundle, "}\n") {
		t.Errorf("bundle.json is not versioned, indented JSON with a trailing newline:\n%s", bundle)
	}
}

func TestConfigMapEmptyPrompts(t *testing.T) {
	out, err := render.Default().ConfigMap(bare())
	if err != nil {
		t.Fatal(err)
	}
	if out.Data["system-prompt.md"] != "" || out.Data["persona.md"] != "" {
		t.Errorf("want empty prompts, got %q and %q", out.Data["system-prompt.md"], out.Data["persona.md"])
	}
}

func TestBundleRoundTrip(t *testing.T) {
	b := bare("A <b> & {{ .Harness }}")
	b.Sections = render.DefaultSections()
	b.Layers = []render.Layer{layer("l", "app", "prepend", "L")}
	b.Includes = map[string]string{"i": "I"}
	b.Vars = map[string]string{"k": "v"}
	b.Context = render.Context{Workspace: new("w"), Repos: []render.Repo{{Name: "r", BranchCreated: true}}, Knowledge: &render.Knowledge{Injected: true}, GitHubGateway: new(false)}
	b.Variants = []render.Variant{{Name: "v", Model: "m"}}
	raw, err := render.MarshalBundle(b)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "A <b> & {{ .Harness }}") {
		t.Errorf("HTML characters escaped in bundle.json")
	}
	got, err := render.UnmarshalBundle(raw)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, b) {
		t.Errorf("round trip changed the bundle:\n%#v\n%#v", got, b)
	}
	again, _ := render.MarshalBundle(got)
	if string(again) != string(raw) {
		t.Error("bundle.json is not stable")
	}
	if mustRender(t, got, "") != mustRender(t, b, "") {
		t.Error("a bundle read back renders differently")
	}
}

func TestUnmarshalBundleIsStrict(t *testing.T) {
	for _, raw := range []string{
		`{"version": 2, "persona": {"name": "p", "namespace": "n"}, "context": {}, "sections": []}`,
		`{"version": 1, "persona": {"name": "p", "namespace": "n"}, "context": {}, "sections": [], "extra": 1}`,
		`{"version": 1} {}`,
		`not json`,
		`{"Version": 1, "persona": {"name": "p", "namespace": "n"}, "context": {}, "sections": []}`,
		`{"version": 1, "version": 1, "persona": {"name": "p", "namespace": "n"}, "context": {}, "sections": []}`,
	} {
		if _, err := render.UnmarshalBundle([]byte(raw)); err == nil {
			t.Errorf("accepted %s", raw)
		}
	}
}

func TestTooLarge(t *testing.T) {
	limits := render.DefaultLimits
	limits.MaxConfigMapBytes = 2000
	e := render.NewEngine(limits)
	_, err := e.ConfigMap(bare(`{{ repeat 2500 "x" }}`))
	var tl *render.TooLargeError
	if !errors.As(err, &tl) || tl.Limit != 2000 || tl.Bytes <= 2000 {
		t.Fatalf("got %v, want TooLargeError", err)
	}
	if !strings.Contains(err.Error(), "over the limit of 2000 bytes") {
		t.Errorf("message %q", err)
	}
}

func TestDeterministic(t *testing.T) {
	b := bare(`{{ range $k, $v := .Vars }}{{ $k }}={{ $v }};{{ end }} {{ keys (dict "z" 1 "a" 2 "m" 3) }} {{ toJson (dict "z" 1 "a" 2) }}`)
	b.Vars = map[string]string{"z": "1", "a": "2", "m": "3", "b": "4"}
	first, err := render.Default().ConfigMap(b)
	if err != nil {
		t.Fatal(err)
	}
	for range 50 {
		again, err := render.Default().ConfigMap(b)
		if err != nil {
			t.Fatal(err)
		}
		if again.Hash != first.Hash {
			t.Fatal("same bundle, different data")
		}
	}
	if got := first.Data["system-prompt.md"]; got != "a=2;b=4;m=3;z=1; [a m z] {\"a\":2,\"z\":1}\n" {
		t.Errorf("got %q", got)
	}
}
