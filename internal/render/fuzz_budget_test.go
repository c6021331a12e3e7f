package render

import (
	"errors"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// fuzzSlack is how far past its limit a render may run: the clock is read
// between calls, and every call is charged its worst case before it runs.
const fuzzSlack = 50 * time.Millisecond

// FuzzFunctionSetBounds renders templates built from the function set: the
// seeds (testdata/fuzz/FuzzFunctionSetBounds, and every worst case of
// TestEveryFunctionWorstCase) call each function with its worst arguments,
// and the fuzzer recombines them. Whatever the template, a render must end
// within the wall-time limit plus fuzzSlack, allocate at most worstAlloc, and
// fail, if it fails, with a RenderError.
func FuzzFunctionSetBounds(f *testing.F) {
	for _, name := range slices.Sorted(maps.Keys(worstCases)) {
		for _, src := range worstCases[name] {
			f.Add(src)
		}
	}
	calibrateWorkScale(f)
	e := NewEngine(DefaultLimits)
	f.Fuzz(func(t *testing.T, src string) {
		// The previous input's garbage is collected first, so that this
		// render neither pays for it nor counts it.
		elapsed, alloc, err := renderOneExtension(e, src, DefaultLimits.MaxDuration+fuzzSlack)
		if err != nil {
			var re *RenderError
			if !errors.As(err, &re) {
				t.Fatalf("error is not a RenderError: %v", err)
			}
		}
		if limit := DefaultLimits.MaxDuration + fuzzSlack; elapsed > limit {
			t.Fatalf("render of %.300q took %s, over %s: %.300v", src, elapsed, limit, err)
		}
		if alloc > worstAlloc {
			t.Fatalf("render of %.300q allocated %d MiB, over %d MiB: %.300v", src, alloc>>20, worstAlloc>>20, err)
		}
	})
}

// calibrateWorkScale scales the cost model to this binary, which under
// -fuzz carries coverage instrumentation: it times the worst-case matcher
// (a program of 33 instructions over 900 KB) and scales every step by how
// much slower it runs than the half of regexpStep it was measured at.
func calibrateWorkScale(f *testing.F) {
	re, err := compileBounded(strings.Repeat("[a-j]", 30) + "k")
	if err != nil {
		f.Fatal(err)
	}
	s := strings.Repeat("abcdefghij", 90_000)
	matcher := re.regexp()
	best := time.Duration(math.MaxInt64)
	for range 3 {
		start := time.Now()
		matcher.MatchString(s)
		best = min(best, time.Since(start))
	}
	step := best / time.Duration(re.insts*len(s))
	workScale = max(1, (2*step+regexpStep-1)/regexpStep)
	f.Cleanup(func() { workScale = 1 })
	f.Logf("a matcher step takes %s: work scaled by %d", step, workScale)
}
