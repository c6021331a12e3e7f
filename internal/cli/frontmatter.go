package cli

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// bom is the UTF-8 byte order mark some editors put first in a file.
const bom = "\xef\xbb\xbf"

// splitFrontMatter splits a Markdown file into its YAML front matter and
// body: a file whose first line is "---" has front matter up to the next
// line that is "---", and the body is everything after that line's newline,
// unchanged. A file without front matter is all body. A leading byte order
// mark is dropped; "---" lines may end in spaces and "\r".
func splitFrontMatter(raw []byte) (front, body []byte, err error) {
	raw = bytes.TrimPrefix(raw, []byte(bom))
	first, rest, ok := cutLine(raw)
	if !isFence(first) {
		return nil, raw, nil
	}
	if !ok {
		return nil, nil, errors.New("the front matter opened by --- on line 1 is not closed by a --- line")
	}
	start := len(raw) - len(rest)
	for pos := start; pos < len(raw); {
		line, next, more := cutLine(raw[pos:])
		if isFence(line) {
			return raw[start:pos], next, nil
		}
		if !more {
			break
		}
		pos = len(raw) - len(next)
	}
	return nil, nil, errors.New("the front matter opened by --- on line 1 is not closed by a --- line")
}

// cutLine cuts the first line of b, without its "\n", from the rest; ok is
// false when b has no newline.
func cutLine(b []byte) (line, rest []byte, ok bool) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return b, nil, false
	}
	return b[:i], b[i+1:], true
}

// isFence reports whether a line is "---", allowing trailing blanks and "\r".
func isFence(line []byte) bool {
	return string(bytes.TrimRight(line, " \t\r")) == "---"
}

// maxNameLength is the longest Persona name (personas.md#writing-a-persona-spec).
const maxNameLength = 63

// personaName converts a name from a persona file to a valid Persona name
// (^[a-z][a-z0-9-]{0,62}$): lower-cased, every run of other characters
// replaced by "-", leading and trailing "-" trimmed, "p-" prefixed when it
// does not start with a letter, cut to 63 characters.
func personaName(s string) (string, error) {
	var b strings.Builder
	other := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			if other {
				b.WriteByte('-')
				other = false
			}
			b.WriteRune(r)
			continue
		}
		other = true
	}
	name := strings.Trim(b.String(), "-")
	if name == "" {
		return "", fmt.Errorf("%q has no letter or digit to make a Persona name of", s)
	}
	if name[0] < 'a' || name[0] > 'z' {
		name = "p-" + name
	}
	if len(name) > maxNameLength {
		name = strings.TrimRight(name[:maxNameLength], "-")
	}
	return name, nil
}

// baseName is a file's name without its directory and .md extension.
func baseName(path string) string {
	base := filepath.Base(path)
	if ext := filepath.Ext(base); strings.EqualFold(ext, ".md") || strings.EqualFold(ext, ".markdown") {
		base = strings.TrimSuffix(base, ext)
	}
	return base
}
