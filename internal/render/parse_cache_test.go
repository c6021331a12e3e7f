package render

import "testing"

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

func TestParseCacheGenerations(t *testing.T) {
	c := newParseCache(&DefaultLimits)
	big := string(make([]byte, 60<<10))
	for i := range maxCacheBytes/(60<<10) + 10 {
		c.get(KindExtension, string(rune('a'+i%26))+string(rune('a'+i/26)), big)
	}
	if c.currBytes > maxCacheBytes {
		t.Errorf("current generation holds %d bytes, over %d", c.currBytes, maxCacheBytes)
	}
	if len(c.previous) == 0 {
		t.Error("no generation was retired")
	}
}
