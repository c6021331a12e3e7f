// Package promptdiff says what changed between two renders of personas: the
// unified diff of each ConfigMap key for kubectl-persona diff, and the
// sections and lines one render changed for the operator's Rendered Event.
// Both read their line changes from Unified, so the CLI and the Event count
// alike.
package promptdiff

import (
	"fmt"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
)

// ContextLines is the number of unchanged lines around each change, as in
// diff -u and kubectl diff.
const ContextLines = 3

// Text is the difference between two texts.
type Text struct {
	// Diff is the unified diff with ContextLines of context; empty when
	// the texts are equal.
	Diff string
	// Added and Removed count the lines the diff adds and removes.
	Added, Removed int
}

// Unified diffs a (named from in the --- header) against b (named to in the
// +++ header), line by line.
func Unified(from, to, a, b string) Text {
	if a == b {
		return Text{}
	}
	w := newWindow(splitLines(a), splitLines(b))
	// Without auto-junk: a prompt's blank lines, frequent as they are,
	// are lines like any other and must match as such.
	m := difflib.NewMatcherWithJunk(w.a, w.b, false, nil)
	var t Text
	for _, op := range m.GetOpCodes() {
		if op.Tag != 'e' {
			t.Removed += op.I2 - op.I1
			t.Added += op.J2 - op.J1
		}
	}
	var d strings.Builder
	fmt.Fprintf(&d, "--- %s\n+++ %s\n", from, to)
	for _, hunk := range m.GetGroupedOpCodes(ContextLines) {
		first, last := hunk[0], hunk[len(hunk)-1]
		fmt.Fprintf(&d, "@@ -%s +%s @@\n", hunkRange(w.skipped+first.I1, last.I2-first.I1), hunkRange(w.skipped+first.J1, last.J2-first.J1))
		for _, op := range hunk {
			if op.Tag == 'e' {
				writeLines(&d, ' ', w.a[op.I1:op.I2])
				continue
			}
			writeLines(&d, '-', w.a[op.I1:op.I2])
			writeLines(&d, '+', w.b[op.J1:op.J2])
		}
	}
	t.Diff = d.String()
	return t
}

// window is the part of two line lists that the matcher compares: the
// lines they share at the start and at the end are left out but for the
// context a hunk shows, so that a small edit of a long prompt costs little.
type window struct {
	a, b []string
	// skipped is the number of lines left out at the start.
	skipped int
}

func newWindow(a, b []string) window {
	prefix := 0
	for prefix < len(a) && prefix < len(b) && a[prefix] == b[prefix] {
		prefix++
	}
	suffix := 0
	for suffix < len(a)-prefix && suffix < len(b)-prefix && a[len(a)-1-suffix] == b[len(b)-1-suffix] {
		suffix++
	}
	start := max(0, prefix-ContextLines)
	keep := min(suffix, ContextLines)
	return window{a: a[start : len(a)-suffix+keep], b: b[start : len(b)-suffix+keep], skipped: start}
}

// hunkRange is a hunk header's range: start,count with a 1-based start, or
// only the start for one line; an empty range starts at the line before.
func hunkRange(start, count int) string {
	switch count {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, count)
}

func writeLines(d *strings.Builder, mark byte, lines []string) {
	for _, l := range lines {
		d.WriteByte(mark)
		d.WriteString(l)
		if !strings.HasSuffix(l, "\n") {
			d.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

// splitLines splits s into lines that keep their newline; a last line
// without one is a line too.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// Lines counts the lines of s.
func Lines(s string) int { return len(splitLines(s)) }
