package render

import (
	"bytes"
	"testing"
	"unicode"
)

// trimRightSpace trims what unicode.IsSpace reports, ASCII or not.
func TestTrimRightSpace(t *testing.T) {
	for _, s := range []string{"", " ", "a", "a \n\t", "a\u00a0", "a\u00a0 \n", " \u0085\u2003 x\u3000\r\n ", "\xff ", "a\xc2", "x\u00a0\u00a0 \u2028"} {
		if got, want := string(trimRightSpace([]byte(s))), string(bytes.TrimRightFunc([]byte(s), unicode.IsSpace)); got != want {
			t.Errorf("%q: got %q, want %q", s, got, want)
		}
	}
}
