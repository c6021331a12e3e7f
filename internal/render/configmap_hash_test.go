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
