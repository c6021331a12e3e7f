package render

import (
	"regexp/syntax"
	"strings"
	"testing"
)

// TestExpandedSizeBoundsTheProgram checks that the size estimated from the
// parse tree is never below the compiled program's, so that nothing larger
// than the limit is ever compiled.
func TestExpandedSizeBoundsTheProgram(t *testing.T) {
	for _, p := range []string{
		"", "a", "abc", "[a-j]", "a*", "a+?", "(a|b|c)", "(?:a{1000})", "(?:a{2,5}){3}", "a{0,}", "a{3,}",
		"(?i)straße", `\bword\b`, "(?m)^x$", "((a)(b))+", "(?:(?:a{10}){10}){10}", "x{0}", "(?:a|)*",
		"[^a-z0-9]+", "a{2,}b{0,3}(?:cd){1,}", "(?:ab){0,2}", `\p{Greek}+`, ".*", "(?s).*?", "a(?:.*X)?", strings.Repeat("[a-j]", 300) + "k",
	} {
		tree, err := syntax.Parse(p, syntax.Perl)
		if err != nil {
			t.Fatalf("%q: %v", p, err)
		}
		est := expandedSize(tree) + programOverhead
		prog, err := syntax.Compile(tree.Simplify())
		if err != nil {
			t.Fatalf("%q: %v", p, err)
		}
		if est < len(prog.Inst) {
			t.Errorf("%q: estimated %d instructions, compiles to %d", p, est, len(prog.Inst))
		}
	}
}

func TestCompileBoundedRefusesExpansion(t *testing.T) {
	for _, p := range []string{strings.Repeat("(?:a{1000})", 3000), strings.Repeat("(?:a{1000})", 11), strings.Repeat("a", 10_001)} {
		if _, err := compileBounded(p); err == nil || !strings.Contains(err.Error(), "over the limit of 10000") {
			t.Errorf("%.40q: %v, want the instruction limit", p, err)
		}
	}
	re, err := compileBounded("(?:a{10}){10}")
	if err != nil {
		t.Fatal(err)
	}
	if !re.regexp().MatchString(strings.Repeat("a", 100)) {
		t.Error("does not match")
	}
}

// TestMaxMatchLen: the bytes a match can span, by hand: a rune is up to 4
// bytes.
func TestMaxMatchLen(t *testing.T) {
	for p, want := range map[string]int{
		"abc": 12, "[a-z]": 4, "a{2,5}": 20, "(a|bc)": 8, "a*": -1, "a+b": -1, "x?y": 8,
		"^$": 0, `\b`: 0, "(?:)*": 0, "(?:a{3}){2}": 24, "a{2,}": -1,
	} {
		tree, err := syntax.Parse(p, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		if got := maxMatchLen(tree); got != want {
			t.Errorf("%q: %d, want %d", p, got, want)
		}
	}
}
