// Package suggest finds the closest known name to a misspelled one, for
// "did you mean" hints.
package suggest

import (
	"fmt"
	"strings"
)

// maxNameBytes bounds the names worth a suggestion: nothing longer is a
// misspelling of a short key, and the edit distance is quadratic.
const maxNameBytes = 256

// Closest returns the candidate closest to name, or "" when none is close
// enough to be a plausible misspelling: within a third of the name's length in
// edits (at least one, at most three), or equal ignoring case. A name over
// 256 bytes gets no suggestion.
func Closest(name string, candidates []string) string {
	if len(name) > maxNameBytes {
		return ""
	}
	best, bestDist := "", -1
	limit := min(max(len(name)/3, 1), 3)
	lower := strings.ToLower(name)
	for _, c := range candidates {
		if strings.EqualFold(c, name) {
			return c
		}
		d := distance(lower, strings.ToLower(c))
		if d <= limit && (bestDist < 0 || d < bestDist) {
			best, bestDist = c, d
		}
	}
	return best
}

// distance is the Damerau–Levenshtein (optimal string alignment) distance.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

// Hint is `did you mean "x"?` for the candidate closest to name, or
// "<listLabel>: a, b, …" when none is close enough to be a misspelling.
func Hint(name string, candidates []string, listLabel string) string {
	if s := Closest(name, candidates); s != "" {
		return fmt.Sprintf("did you mean %q?", s)
	}
	return listLabel + ": " + strings.Join(candidates, ", ")
}
