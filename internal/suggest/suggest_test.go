package suggest

import "testing"

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
