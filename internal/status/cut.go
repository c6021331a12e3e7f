package status

import (
	"strconv"
	"unicode/utf8"
)

// The longest condition message and Event note the operator writes: a
// template's fail text or an error can be of any length, and a status patch
// or an Event over the API server's own limits (32 KiB, 1 KiB) is refused,
// so a health check would never see the failure.
const (
	MaxConditionMessage = 4 << 10
	MaxEventNote        = 1 << 10
)

// Cut returns s when it is at most limit bytes long; otherwise its start,
// ended on a UTF-8 character boundary, and "… (cut: N more bytes)", N the
// bytes left out, limit bytes at most in all.
func Cut(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	keep := limit
	for {
		suffix := cutSuffix(len(s) - keep)
		end := min(keep, limit-len(suffix))
		for end > 0 && !utf8.RuneStart(s[end]) {
			end--
		}
		// The suffix's count grows with what is left out: recount until
		// the start and the suffix fit together.
		if end == keep {
			return s[:end] + suffix
		}
		keep = end
	}
}

func cutSuffix(n int) string { return "… (cut: " + strconv.Itoa(n) + " more bytes)" }
