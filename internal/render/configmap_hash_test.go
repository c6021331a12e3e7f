package render

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
)

// ContentHash is the SHA-256 of what json.Marshal writes for the data
// (personas.md#delivery), HTML characters and newlines included.
func TestContentHashIsOfTheJSONEncoding(t *testing.T) {
	for _, data := range []map[string]string{
		nil,
		{},
		{"system-prompt.md": "a <b> & c\n", "persona.md": "\n", "bundle.json": "{\n}\n"},
		{"k": "ends with newline\n\n"},
	} {
		raw, err := json.Marshal(data)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(raw)
		if got, want := ContentHash(data), "sha256:"+hex.EncodeToString(sum[:]); got != want {
			t.Errorf("ContentHash(%q) = %s, want %s", data, got, want)
		}
	}
}

// The hash leaves revision.json out (personas.md#revisions), so a data map
// with it hashes as the same map without it, and the map is not changed.
func TestContentHashLeavesOutTheRevision(t *testing.T) {
	content := map[string]string{"system-prompt.md": "A\n", "persona.md": "\n", "bundle.json": "{}"}
	raw, err := json.Marshal(content)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	want := "sha256:" + hex.EncodeToString(sum[:])
	withRevision := map[string]string{"system-prompt.md": "A\n", "persona.md": "\n", "bundle.json": "{}", RevisionKey: `{"revision":2}`}
	if got := ContentHash(withRevision); got != want {
		t.Errorf("ContentHash with revision.json = %s, want %s (the hash of the other keys)", got, want)
	}
	if _, ok := withRevision[RevisionKey]; !ok {
		t.Error("ContentHash took revision.json out of its argument")
	}
}
