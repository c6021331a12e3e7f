package render

import (
	"strings"
	"unicode"
)

// Normalize removes a text piece's trailing whitespace and leading blank
// lines (SPEC §5). A piece that is empty afterwards is dropped by Join.
func Normalize(s string) string {
	s = strings.TrimRightFunc(s, unicode.IsSpace)
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 || strings.TrimSpace(s[:i]) != "" {
			return s
		}
		s = s[i+1:]
	}
}

// Join normalizes pieces and joins the non-empty ones with one blank line.
func Join(pieces ...string) string {
	var b strings.Builder
	for _, p := range pieces {
		p = Normalize(p)
		if p == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(p)
	}
	return b.String()
}

// Piece is one rendered, normalized, non-empty piece of a system prompt.
type Piece struct {
	// Name is platform.<key>, extension.<id>, layer.<name>,
	// userSystemPrompt or appendSystemPrompt.
	Name string
	// Origin is default, persona/<name> or layer/<name>.
	Origin string
	Text   string
}

// joinPieces joins pieces with one blank line and ends a non-empty result
// with one newline: the content of a system-prompt file.
func joinPieces(pieces []Piece) string {
	if len(pieces) == 0 {
		return ""
	}
	n := 0
	for _, p := range pieces {
		n += len(p.Text) + 2
	}
	var b strings.Builder
	b.Grow(n)
	for i, p := range pieces {
		if i > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(p.Text)
	}
	b.WriteByte('\n')
	return b.String()
}

// withNewline is s plus one trailing newline, or empty when s is empty.
func withNewline(s string) string {
	if s == "" {
		return ""
	}
	return s + "\n"
}
