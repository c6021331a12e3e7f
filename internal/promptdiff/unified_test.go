package promptdiff

import (
	"fmt"
	"strings"
	"testing"
)

// numbered is the lines prefix1..prefixN, each ended by a newline.
func numbered(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d\n", prefix, i+1)
	}
	return out
}

func join(parts ...[]string) string {
	var b strings.Builder
	for _, p := range parts {
		for _, l := range p {
			b.WriteString(l)
		}
	}
	return b.String()
}

// The expected diffs follow diff -u by hand: three lines of context, a
// hunk header -start,count +start,count with 1-based starts, a count of 1
// left out, an empty range starting at the line before it.
func TestUnified(t *testing.T) {
	ten := numbered("", 10)
	tenFive := append(append(numbered("", 4), "five\n"), numbered("", 10)[5:]...)
	twenty := numbered("", 20)
	twentyEdited := append([]string{}, twenty...)
	twentyEdited[1], twentyEdited[17] = "two\n", "eighteen\n"
	long := join(numbered("p", 100), []string{"old\n"}, numbered("s", 100))
	longEdited := join(numbered("p", 100), []string{"new\n"}, numbered("s", 100))
	tests := []struct {
		name           string
		a, b           string
		want           string
		added, removed int
	}{
		{name: "equal", a: "same\n", b: "same\n"},
		{name: "both empty"},
		{
			name: "a line replaced in the middle",
			a:    join(ten), b: join(tenFive),
			want:  "--- a\n+++ b\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n",
			added: 1, removed: 1,
		},
		{
			name: "from nothing",
			a:    "", b: "x\ny\n",
			want:  "--- a\n+++ b\n@@ -0,0 +1,2 @@\n+x\n+y\n",
			added: 2,
		},
		{
			name: "to nothing",
			a:    "x\n", b: "",
			want:    "--- a\n+++ b\n@@ -1 +0,0 @@\n-x\n",
			removed: 1,
		},
		{
			name: "lines appended",
			a:    "a\nb\n", b: "a\nb\n\nc\n",
			want:  "--- a\n+++ b\n@@ -1,2 +1,4 @@\n a\n b\n+\n+c\n",
			added: 2,
		},
		{
			name: "changes far apart are two hunks",
			a:    join(twenty), b: join(twentyEdited),
			want: "--- a\n+++ b\n" +
				"@@ -1,5 +1,5 @@\n 1\n-2\n+two\n 3\n 4\n 5\n" +
				"@@ -15,6 +15,6 @@\n 15\n 16\n 17\n-18\n+eighteen\n 19\n 20\n",
			added: 2, removed: 2,
		},
		{
			name: "changes close together are one hunk",
			a:    "1\n2\n3\n4\n5\n6\n7\n8\n", b: "1\nB\n3\n4\n5\n6\nG\n8\n",
			want:  "--- a\n+++ b\n@@ -1,8 +1,8 @@\n 1\n-2\n+B\n 3\n 4\n 5\n 6\n-7\n+G\n 8\n",
			added: 2, removed: 2,
		},
		{
			name: "no newline at the end",
			a:    "a\nb", b: "a\nc",
			want:  "--- a\n+++ b\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n",
			added: 1, removed: 1,
		},
		{
			name: "a long shared start and end: line numbers count them",
			a:    long, b: longEdited,
			want:  "--- a\n+++ b\n@@ -98,7 +98,7 @@\n p98\n p99\n p100\n-old\n+new\n s1\n s2\n s3\n",
			added: 1, removed: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Unified("a", "b", tt.a, tt.b)
			if got.Diff != tt.want {
				t.Errorf("diff =\n%s\nwant\n%s", got.Diff, tt.want)
			}
			if got.Added != tt.added || got.Removed != tt.removed {
				t.Errorf("+%d/-%d, want +%d/-%d", got.Added, got.Removed, tt.added, tt.removed)
			}
		})
	}
}

func TestCompare(t *testing.T) {
	old := Side{Label: "old", Personas: map[Ref]map[string]string{
		{"b", "same"}:    {"system-prompt.md": "S\n", "bundle.json": "{}"},
		{"b", "edited"}:  {"system-prompt.md": "A\n", "persona.md": "P\n", "bundle.json": "{1}", "system-prompt.gone.md": "G\n"},
		{"a", "removed"}: {"system-prompt.md": "R\n"},
		{"b", "bundle"}:  {"system-prompt.md": "B\n", "bundle.json": "{1}"},
	}}
	new := Side{Label: "new", Personas: map[Ref]map[string]string{
		{"b", "same"}:   {"system-prompt.md": "S\n", "bundle.json": "{}"},
		{"b", "edited"}: {"system-prompt.md": "B\n", "persona.md": "P\n", "bundle.json": "{2}", "system-prompt.fast.md": "F\n"},
		{"c", "added"}:  {"system-prompt.md": "N\n"},
		{"b", "bundle"}: {"system-prompt.md": "B\n", "bundle.json": "{2}"},
	}}
	got := Compare(old, new)
	want := []Persona{
		{Namespace: "a", Name: "removed", Status: Removed},
		{Namespace: "b", Name: "edited", Status: Changed, Keys: []Key{
			{Key: "system-prompt.fast.md", Diff: "--- old/b/edited/system-prompt.fast.md\n+++ new/b/edited/system-prompt.fast.md\n@@ -0,0 +1 @@\n+F\n", Added: 1},
			{Key: "system-prompt.gone.md", Diff: "--- old/b/edited/system-prompt.gone.md\n+++ new/b/edited/system-prompt.gone.md\n@@ -1 +0,0 @@\n-G\n", Removed: 1},
			{Key: "system-prompt.md", Diff: "--- old/b/edited/system-prompt.md\n+++ new/b/edited/system-prompt.md\n@@ -1 +1 @@\n-A\n+B\n", Added: 1, Removed: 1},
		}},
		{Namespace: "c", Name: "added", Status: Added},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Compare =\n%v\nwant\n%v", got, want)
	}
}
