package render

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

func TestReRenderNeverReparses(t *testing.T) {
	e := NewEngine(DefaultLimits)
	b := typicalBundle()
	b.Includes = map[string]string{"frag": "fragment"}
	b.Extensions = append(b.Extensions, Extension{ID: "inc", Template: `{{ include "frag" . }}`})
	if _, err := e.ConfigMap(b); err != nil {
		t.Fatal(err)
	}
	first := e.cache.parses
	if first == 0 {
		t.Fatal("nothing parsed")
	}
	for range 3 {
		if _, err := e.ConfigMap(b); err != nil {
			t.Fatal(err)
		}
	}
	if e.cache.parses != first {
		t.Errorf("re-rendering parsed %d more templates", e.cache.parses-first)
	}
	// A changed template is parsed; the others are not.
	b.Extensions[0].Template += " "
	if _, err := e.Render(b, ""); err != nil {
		t.Fatal(err)
	}
	if e.cache.parses != first+1 {
		t.Errorf("one changed template caused %d parses", e.cache.parses-first)
	}
}

// densestSource is a 64 KiB source of the shape whose parse keeps the most
// memory per source byte (TestParsedSizeEstimate), made distinct by i.
func densestSource(i int) string {
	unit := "{{print " + strings.Repeat("(", 50) + "1" + strings.Repeat(")", 50) + "}}"
	head := fmt.Sprintf("%d\n", i)
	return head + strings.Repeat(unit, (64<<10-len(head))/len(unit))
}

// TestParseCacheBoundsMemory fills the cache with the densest 64 KiB
// sources and measures what it keeps: at most its two generations of
// maxCacheBytes, with the estimate's margin, although the sources are
// several times that many megabytes of parse trees.
func TestParseCacheBoundsMemory(t *testing.T) {
	const sources = 60 // about 300 MB of parse trees
	srcs := make([]string, sources)
	for i := range srcs {
		srcs[i] = densestSource(i)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c := newParseCache(&DefaultLimits)
	for i, src := range srcs {
		if p := c.get(KindExtension, fmt.Sprint("e", i), src); p.err != nil {
			t.Fatal(p.err)
		}
	}
	// srcs is garbage from here: what the cache keeps of them is its own.
	runtime.GC()
	runtime.ReadMemStats(&after)
	kept := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	bound := int64(2 * maxCacheBytes * 3 / 2)
	t.Logf("%d sources of 64 KiB: the cache keeps %.1f MiB in %d entries; bound %.1f MiB",
		sources, float64(kept)/(1<<20), len(c.current)+len(c.previous), float64(bound)/(1<<20))
	if kept > bound {
		t.Errorf("the cache keeps %d bytes, over %d", kept, bound)
	}
	if c.currBytes > maxCacheBytes {
		t.Errorf("current generation holds an estimated %d bytes, over %d", c.currBytes, maxCacheBytes)
	}
	if len(c.previous) == 0 {
		t.Error("no generation was retired")
	}
	runtime.KeepAlive(c)
}

// TestInspectKeepsNothing: admission's checks parse templates that may
// never be stored, and the cache must not grow with them.
func TestInspectKeepsNothing(t *testing.T) {
	e := NewEngine(DefaultLimits)
	for i := range 3 {
		if _, err := e.Inspect(KindExtension, "x", densestSource(i)); err != nil {
			t.Fatal(err)
		}
	}
	includes, err := e.Inspect(KindLayer, "l", `{{ include "a" . }}{{ .Nope }}`)
	if err == nil || !strings.Contains(err.Error(), ".Nope is not a template variable") {
		t.Errorf("Inspect found %v, want the unknown variable", err)
	}
	if len(includes) != 1 || includes[0] != "a" {
		t.Errorf("includes %q, want [a]", includes)
	}
	if n := len(e.cache.current) + len(e.cache.previous); n != 0 || e.cache.parses != 0 {
		t.Errorf("Inspect left %d entries in the cache after %d cached parses", n, e.cache.parses)
	}
	// A source the cache holds already is not parsed again.
	src := `Hello {{ .Name }}`
	e.cache.get(KindExtension, "h", src).err = errors.New("the cached parse")
	if _, err := e.Inspect(KindExtension, "h", src); err == nil || err.Error() != "the cached parse" {
		t.Errorf("Inspect of a cached source returned %v, not the cached parse's verdict", err)
	}
}

// TestIdleExecutorsKeepNoTrees: a pooled executor unbinds the trees it
// executed, so the cache's bound is the bound of every parse tree kept.
func TestIdleExecutorsKeepNoTrees(t *testing.T) {
	e := NewEngine(DefaultLimits)
	b := typicalBundle()
	b.Includes = map[string]string{"frag": `{{ define "d" }}x{{ end }}{{ template "d" }}`}
	b.Extensions = append(b.Extensions, Extension{ID: "inc", Template: `{{ include "frag" . }}`})
	if _, err := e.ConfigMap(b); err != nil {
		t.Fatal(err)
	}
	if len(e.pool.idle) == 0 {
		t.Fatal("no executor was returned to the pool")
	}
	for _, x := range e.pool.idle {
		if len(x.bound) == 0 {
			t.Fatal("the executor bound nothing")
		}
		for name, nt := range x.bound {
			if nt.Tree != nil {
				t.Errorf("an idle executor keeps the tree of %s", name)
			}
		}
	}
	// And the pooled executor renders again.
	if _, err := e.ConfigMap(b); err != nil {
		t.Fatal(err)
	}
}
