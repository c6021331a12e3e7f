package render

import (
	"bytes"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Normalize removes a text piece's trailing whitespace and leading blank
// lines (personas.md#composition). A piece that is empty afterwards is dropped by Join.
func Normalize(s string) string {
	start, end := normalizedBounds([]byte(s))
	return s[start:end]
}

// normalizedBounds returns the bounds of the normalized text within b.
func normalizedBounds(b []byte) (start, end int) {
	end = len(trimRightSpace(b))
	for {
		i := bytes.IndexByte(b[start:end], '\n')
		if i < 0 || len(bytes.TrimSpace(b[start:start+i])) > 0 {
			return start, end
		}
		start += i + 1
	}
}

// trimRightSpace is bytes.TrimRightFunc(b, unicode.IsSpace), which decodes
// every rune through a function value, with most pieces' ending trimmed
// byte by byte first.
func trimRightSpace(b []byte) []byte {
	for len(b) > 0 && asciiSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	if len(b) > 0 && b[len(b)-1] >= utf8.RuneSelf {
		b = bytes.TrimRightFunc(b, unicode.IsSpace)
	}
	return b
}

// asciiSpace reports the ASCII bytes that unicode.IsSpace reports.
func asciiSpace(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\v', '\f', '\r':
		return true
	}
	return false
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
	// Origin is default, platform/default, persona/<name>, layer/<name>
	// or clusterlayer/<name>.
	Origin string
	Text   string
}

// span is a rendered, normalized piece held as bounds in a render's output
// buffer, so that composing pieces moves no text.
type span struct {
	section, origin string
	start, end      int
}

// appendNonEmpty appends s to spans unless normalizing left it empty: an
// empty piece is dropped (personas.md#composition).
func appendNonEmpty(spans []span, s span) []span {
	if s.start < s.end {
		return append(spans, s)
	}
	return spans
}

// joinSpans joins the spans of buf with one blank line and ends a non-empty
// result with one newline: the content of a system-prompt file. The pieces
// it returns share the result's memory.
func joinSpans(buf []byte, spans []span) (string, []Piece) {
	if len(spans) == 0 {
		return "", nil
	}
	n := 0
	for _, s := range spans {
		n += s.end - s.start + 2
	}
	var b strings.Builder
	b.Grow(n)
	for i, s := range spans {
		if i > 0 {
			b.WriteString("\n\n")
		}
		b.Write(buf[s.start:s.end])
	}
	b.WriteByte('\n')
	text := b.String()
	pieces := make([]Piece, len(spans))
	at := 0
	for i, s := range spans {
		end := at + s.end - s.start
		pieces[i] = Piece{Name: s.section, Origin: s.origin, Text: text[at:end]}
		at = end + len("\n\n")
	}
	return text, pieces
}

// withNewline is s plus one trailing newline, or empty when s is empty.
func withNewline(s string) string {
	if s == "" {
		return ""
	}
	return s + "\n"
}
