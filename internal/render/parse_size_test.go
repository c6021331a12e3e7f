package render

import (
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// measuredSize is the heap that parsing src n times keeps alive, per parse.
func measuredSize(t *testing.T, src string, n int) (measured, estimated int) {
	t.Helper()
	keep := make([]*parsed, n)
	srcs := make([]string, n)
	for i := range srcs {
		// Distinct copies, so that each parse keeps its own source.
		srcs[i] = strings.Clone(src)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range keep {
		keep[i] = parseTemplate("extension.x", srcs[i], &DefaultLimits)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if keep[0].err != nil {
		t.Fatalf("the source does not parse: %v", keep[0].err)
	}
	measured = int(after.HeapAlloc-before.HeapAlloc) / n
	estimated = estimateSize(keep[0], src)
	runtime.KeepAlive(keep)
	return measured, estimated
}

// TestParsedSizeEstimate calibrates estimateSize: for small sources and for
// 64 KiB sources of the densest shape of each kind of node, the estimate is
// within a factor of 1.5 of the heap the parse keeps.
func TestParsedSizeEstimate(t *testing.T) {
	fill := func(unit string) string { return strings.Repeat(unit, (64<<10)/len(unit)) }
	for _, c := range []struct{ name, src string }{
		{"text", "You are a careful reviewer.\n"},
		{"typical", `You review {{ .Name }} for {{ .Namespace }}.{{ if .Streaming }} Stream.{{ end }}` + "\n"},
		{"numbers", "{{ print " + strings.Repeat("1 ", 32<<10-8) + "}}"},
		{"dots", fill("{{.}}")},
		{"vars", fill("{{$}}")},
		{"text-dots", fill("a{{.}}")},
		{"ifs", fill("{{if 1}}{{end}}")},
		{"ranges", fill("{{range 1}}{{end}}")},
		{"fields", fill("{{.Name}}")},
		{"strings", fill(`{{"a"}}`)},
		{"parens", "{{ print " + strings.Repeat("(1) ", 16<<10-8) + "}}"},
		{"decls", fill("{{$a:=1}}")},
		{"nested", fill("{{print " + strings.Repeat("(", 50) + "1" + strings.Repeat(")", 50) + "}}")},
		{"chains", fill("{{(1).a}}")},
		{"range-vars", fill("{{range $i,$e:=.}}{{end}}")},
		{"defines", defines(64 << 10)},
	} {
		n := 20
		if len(c.src) < 1024 {
			n = 2000
		}
		m, e := measuredSize(t, c.src, n)
		ratio := float64(e) / float64(m)
		t.Logf("%-10s source %6d bytes: kept %8d, estimated %8d (%.2f), %.1f bytes per source byte",
			c.name, len(c.src), m, e, ratio, float64(m)/float64(len(c.src)))
		if ratio < 1/1.5 || ratio > 1.5 {
			t.Errorf("%s: estimated %d bytes, the parse keeps %d", c.name, e, m)
		}
		if bound := DefaultLimits.MaxParsedBytes(len(c.src)); len(c.src) > 1024 && m > bound {
			t.Errorf("%s: the parse keeps %d bytes, over MaxParsedBytes' %d", c.name, m, bound)
		}
	}
}

// defines is a source of about n bytes of small distinct defined templates.
func defines(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n-32; i++ {
		b.WriteString(`{{define "` + strconv.Itoa(i) + `"}}{{end}}`)
	}
	return b.String()
}
