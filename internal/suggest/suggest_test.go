package suggest

import (
	"strings"
	"testing"
)

func TestClosest(t *testing.T) {
	catalog := []string{"persona", "workspace", "gitPush", "prMergeability", "prDashboardLink", "waiver", "tasks"}
	cases := []struct{ name, want string }{
		{"prMergability", "prMergeability"}, // one letter dropped
		{"workspcae", "workspace"},          // transposition
		{"GITPUSH", "gitPush"},              // case only
		{"waiverr", "waiver"},
		{"replce", ""}, // nothing close in this catalog
		{"xyz", ""},
	}
	for _, c := range cases {
		if got := Closest(c.name, catalog); got != c.want {
			t.Errorf("Closest(%q) = %q, want %q", c.name, got, c.want)
		}
	}
	if got := Closest("replce", []string{"replace", "remove"}); got != "replace" {
		t.Errorf("Closest(replce) = %q, want replace", got)
	}
}

func TestDistance(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"kitten", "sitting", 3}, {"ab", "ba", 1}, {"abc", "abc", 0},
	}
	for _, c := range cases {
		if got := distance(c.a, c.b); got != c.want {
			t.Errorf("distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestHint(t *testing.T) {
	known := []string{"model", "prompt"}
	if got, want := Hint("modle", known, "known keys"), `did you mean "model"?`; got != want {
		t.Errorf("Hint(modle) = %q, want %q", got, want)
	}
	if got, want := Hint("zzz", known, "known keys"), "known keys: model, prompt"; got != want {
		t.Errorf("Hint(zzz) = %q, want %q", got, want)
	}
	// A name too long to be a misspelling gets the list, even when it
	// differs from a candidate only in case.
	long := strings.Repeat("M", 257)
	if got := Closest(long, []string{strings.ToLower(long)}); got != "" {
		t.Errorf("Closest of a 257-byte name = %q, want none", got)
	}
}
