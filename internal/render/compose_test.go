package render_test

import (
	"testing"

	"github.com/persona-operator/persona-operator/internal/render"
)

func TestNormalize(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", ""},
		{"   \n\t\n", ""},
		{"hello", "hello"},
		{"hello  \n\n", "hello"},
		{"\n\n  hello", "  hello"}, // leading blank lines go, indentation stays
		{" \t\n  x\n\n  y \n", "  x\n\n  y"},
		{"a\r\n\r\n", "a"},
		{"a  \nb", "a  \nb"}, // only the piece's trailing whitespace goes
	}
	for _, c := range cases {
		if got := render.Normalize(c.in); got != c.want {
			t.Errorf("Normalize(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestComposition covers personas.md#composition: normalizing, dropping empty pieces, joining
// with one blank line, layer ranks and modes, and the literal prompts last.
func TestComposition(t *testing.T) {
	cases := []struct {
		name   string
		bundle func() *render.Bundle
		want   string
	}{
		{"nothing remains", func() *render.Bundle { return bare() }, ""},
		{"empty pieces dropped", func() *render.Bundle { return bare("", "A", "  \n\n", "B") }, "A\n\nB\n"},
		{"pieces normalized", func() *render.Bundle { return bare("\n\n  A  \n\n", "B\n\n\n") }, "  A\n\nB\n"},
		{"template output normalized", func() *render.Bundle {
			return bare("{{ if true }}\n\nA\n{{ end }}\n\n", "{{ if false }}B{{ end }}", "C")
		}, "A\n\nC\n"},
		{"layers sorted by rank, custom between package and app", func() *render.Bundle {
			b := bare("Base")
			b.Layers = []render.Layer{
				layer("r", "run", "append", "R"),
				layer("c1", "team-a", "append", "C1"),
				layer("a", "app", "append", "A"),
				layer("u", "user", "append", "U"),
				layer("c2", "team-b", "append", "C2"),
				layer("p", "package", "append", "P"),
			}
			return b
		}, "Base\n\nU\n\nP\n\nC1\n\nC2\n\nA\n\nR\n"},
		{"prepend goes before the text so far", func() *render.Bundle {
			b := bare("Base")
			b.Layers = []render.Layer{layer("x", "package", "prepend", "X"), layer("y", "app", "prepend", "Y")}
			return b
		}, "Y\n\nX\n\nBase\n"},
		{"replace makes the whole text", func() *render.Bundle {
			b := bare("Base")
			b.Layers = []render.Layer{layer("x", "package", "append", "X"), layer("y", "app", "replace", "Y"), layer("z", "run", "append", "Z")}
			return b
		}, "Y\n\nZ\n"},
		{"disable empties, later layers add", func() *render.Bundle {
			b := bare("Base")
			b.Layers = []render.Layer{layer("x", "package", "disable", ""), layer("y", "run", "append", "Y")}
			return b
		}, "Y\n"},
		{"disable as last layer leaves nothing", func() *render.Bundle {
			b := bare("Base")
			b.Layers = []render.Layer{layer("x", "run", "disable", "ignored")}
			return b
		}, ""},
		{"a layer rendering to nothing is skipped, even replace", func() *render.Bundle {
			b := bare("Base")
			b.Layers = []render.Layer{layer("x", "package", "replace", "{{ if false }}X{{ end }}\n  \n")}
			return b
		}, "Base\n"},
		{"empty source ranks as package, empty mode appends", func() *render.Bundle {
			b := bare("Base")
			b.Layers = []render.Layer{layer("a", "app", "append", "A"), layer("d", "", "", "D")}
			return b
		}, "Base\n\nD\n\nA\n"},
		{"user and appended prompts come last, literally, whatever the layers do", func() *render.Bundle {
			b := bare("Base")
			b.Layers = []render.Layer{layer("x", "run", "disable", "")}
			b.Context.UserSystemPrompt = new("User {{ .Harness }}\n\n")
			b.Context.AppendSystemPrompt = new("\n\nAppended")
			return b
		}, "User {{ .Harness }}\n\nAppended\n"},
		{"user prompt alone", func() *render.Bundle {
			b := bare()
			b.Context.UserSystemPrompt = new("U")
			return b
		}, "U\n"},
		// Prism's composition examples.
		{"prism: package, app replace, run", func() *render.Bundle {
			b := bare("Base instruction.")
			b.Layers = []render.Layer{layer("pkg", "package", "append", "Package rule."), layer("app", "app", "replace", "App rule."), layer("run", "run", "append", "Run rule.")}
			return b
		}, "App rule.\n\nRun rule.\n"},
		{"prism: app replace sorts after user append", func() *render.Bundle {
			b := bare("Base instruction.")
			b.Layers = []render.Layer{layer("app", "app", "replace", "You are concise."), layer("user", "user", "append", "Prefer bullet points.")}
			return b
		}, "You are concise.\n"},
		{"prism: request/response example", func() *render.Bundle {
			b := bare("Base")
			b.Layers = []render.Layer{layer("app", "app", "replace", "App"), layer("run", "run", "append", "Run")}
			return b
		}, "App\n\nRun\n"},
		{"prism: SYSTEM.md and AGENTS.md", func() *render.Bundle {
			b := bare("You are helpful.")
			b.Layers = []render.Layer{layer("agents-md", "app", "append", "Project rule."), layer("system-md", "user", "append", "Global system policy.")}
			return b
		}, "You are helpful.\n\nGlobal system policy.\n\nProject rule.\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := mustRender(t, c.bundle(), ""); got != c.want {
				t.Errorf("got %q\nwant %q", got, c.want)
			}
		})
	}
}

func TestSortLayersIsStable(t *testing.T) {
	ls := []render.Layer{layer("b", "x", "", ""), layer("a", "run", "", ""), layer("c", "y", "", ""), layer("d", "user", "", "")}
	render.SortLayers(ls)
	var got string
	for _, l := range ls {
		got += l.Name
	}
	if got != "dbca" {
		t.Errorf("order %q, want dbca", got)
	}
}
