package status

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCut(t *testing.T) {
	// "… (cut: N more bytes)" is 22 bytes and the digits of N ("…" is 3 bytes).
	for _, tc := range []struct {
		name, s string
		limit   int
		want    string
	}{
		{"within the limit", "abc", 3, "abc"},
		{"empty", "", 0, ""},
		// 40 bytes into 30: a 24-byte suffix keeps 6 and cuts 34.
		{"ascii", strings.Repeat("a", 40), 30, "aaaaaa… (cut: 34 more bytes)"},
		// "é" is 2 bytes: 6 bytes end between two of them.
		{"two-byte runes", strings.Repeat("é", 20), 30, "ééé… (cut: 34 more bytes)"},
		// "€" is 3 bytes: 6 bytes end between the second and the third,
		// so 54 of 60 are cut.
		{"three-byte runes", strings.Repeat("€", 20), 30, "€€… (cut: 54 more bytes)"},
		// 7 bytes would end inside the second "€" (bytes 5 to 7): 5 are
		// kept, 57 of 62 cut, 29 bytes in all.
		{"ends inside a rune", "xy" + strings.Repeat("€", 20), 31, "xy€… (cut: 57 more bytes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Cut(tc.s, tc.limit)
			if got != tc.want {
				t.Errorf("Cut(%q, %d) = %q, want %q", tc.s, tc.limit, got, tc.want)
			}
			if len(got) > tc.limit || !utf8.ValidString(got) {
				t.Errorf("%q: %d bytes, valid UTF-8 %v", got, len(got), utf8.ValidString(got))
			}
		})
	}
}

// The count gains a digit when the start shrinks to fit its suffix.
func TestCutCountGainsADigit(t *testing.T) {
	// 105 bytes into 100: a 23-byte suffix (1 digit) would keep 77 and cut
	// 28, whose 2 digits leave room for 76, cutting 29.
	got := Cut(strings.Repeat("a", 105), 100)
	if want := strings.Repeat("a", 76) + "… (cut: 29 more bytes)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
