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
	if !strings.HasPrefix(bundle, "{\"version\":1,") || !strings.HasSuffix(bundle, "}\n") || strings.Count(bundle, "\n") != 1 {
		t.Errorf("bundle.json is not versioned, compact JSON with a trailing newline:\n%s", bundle)
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
