package render_test

import (
	"slices"
	"testing"

	"github.com/persona-operator/persona-operator/internal/render"
)

func replaceBy(origin, template string) render.Override {
	return render.Override{Origin: origin, Template: &template}
}

func removeBy(origin string) render.Override { return render.Override{Origin: origin} }

// TestComposeSections covers promptplatforms.md#composition: the platform's
// sections replace the shipped defaults, and the chain's overrides act on
// the result, a later level deciding a key.
func TestComposeSections(t *testing.T) {
	const persona = "persona/p"
	type section struct{ origin, template string }
	cases := []struct {
		name            string
		platform, chain map[string]render.Override
		changed         map[string]section // keys not shipped as default
		gone            []string
	}{
		{name: "no platform, no overrides"},
		{
			name:     "a section the platform replaces",
			platform: map[string]render.Override{"workspace": replaceBy(render.OriginPlatform, "Work in /src.")},
			changed:  map[string]section{"workspace": {"platform/default", "Work in /src."}},
		},
		{
			name:     "a section the platform removes",
			platform: map[string]render.Override{"ghGateway": removeBy(render.OriginPlatform)},
			gone:     []string{"ghGateway"},
		},
		{
			name:     "a Persona re-replaces a section the platform replaced",
			platform: map[string]render.Override{"workspace": replaceBy(render.OriginPlatform, "Work in /src.")},
			chain:    map[string]render.Override{"workspace": replaceBy(persona, "Work in /tmp.")},
			changed:  map[string]section{"workspace": {"persona/p", "Work in /tmp."}},
		},
		{
			name:     "a Persona replaces a section the platform removed",
			platform: map[string]render.Override{"knowledge": removeBy(render.OriginPlatform)},
			chain:    map[string]render.Override{"knowledge": replaceBy(persona, "Notes live in /notes.")},
			changed:  map[string]section{"knowledge": {"persona/p", "Notes live in /notes."}},
		},
		{
			name:     "a Persona removes a section the platform replaced",
			platform: map[string]render.Override{"completion": replaceBy(render.OriginPlatform, "Say done.")},
			chain:    map[string]render.Override{"completion": removeBy(persona)},
			gone:     []string{"completion"},
		},
		{
			name: "the platform and the Persona act on different keys",
			platform: map[string]render.Override{
				"commitSigning": removeBy(render.OriginPlatform),
				"waiver":        replaceBy(render.OriginPlatform, ""),
			},
			chain:   map[string]render.Override{"tasks": replaceBy(persona, "No tasks.")},
			changed: map[string]section{"waiver": {"platform/default", ""}, "tasks": {"persona/p", "No tasks."}},
			gone:    []string{"commitSigning"},
		},
	}
	shipped := map[string]string{}
	for _, s := range render.DefaultSections() {
		shipped[s.Key] = s.Template
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := render.ComposeSections(c.platform, c.chain)
			var keys []string
			for _, s := range got {
				keys = append(keys, s.Key)
				want, ok := c.changed[s.Key]
				if !ok {
					want = section{"default", shipped[s.Key]}
				}
				if s.Origin != want.origin || s.Template != want.template {
					t.Errorf("%s = %q from %q, want %q from %q", s.Key, s.Template, s.Origin, want.template, want.origin)
				}
			}
			wantKeys := slices.DeleteFunc(slices.Clone(render.Catalog), func(k string) bool { return slices.Contains(c.gone, k) })
			if !slices.Equal(keys, wantKeys) {
				t.Errorf("keys %v, want %v", keys, wantKeys)
			}
		})
	}
}

// TestComposeSectionsEveryRemoved gives no sections at all, which
// bundle.json writes as [].
func TestComposeSectionsEveryRemoved(t *testing.T) {
	all := map[string]render.Override{}
	for _, k := range render.Catalog {
		all[k] = removeBy(render.OriginPlatform)
	}
	if got := render.ComposeSections(all); got != nil {
		t.Errorf("got %d sections, want none", len(got))
	}
}

// Without the structuredOutput section (removed, or replaced by an empty
// template) the shipped completion, expectedOutput and
// opencodeStructuredOutput no longer ask for a structured output the
// prompt never describes (personas.md#platform-sections); one the platform
// or a Persona replaced stays as written, and with structuredOutput present,
// even replaced, nothing changes.
func TestSectionsWithoutStructuredOutput(t *testing.T) {
	render1 := func(t *testing.T, sections []render.Section) map[string]string {
		t.Helper()
		b := bare()
		b.Persona.Harness = "opencode"
		b.Context.ExpectedOutput = new("respond")
		b.Sections = sections
		p, err := render.Default().Render(b, "")
		if err != nil {
			t.Fatal(err)
		}
		text := map[string]string{}
		for _, pc := range p.Pieces {
			text[pc.Name] = pc.Text
		}
		return text
	}
	const (
		completion   = "Finish the task before you end your turn; your final answer is delivered automatically to your parent agent."
		respond      = "You are expected to respond; no pull request or push is needed."
		structured   = "Finish the task by producing the structured output; it is delivered automatically to your parent agent."
		respondInOut = "You are expected to respond in the structured output; no pull request or push is needed."
	)
	for name, persona := range map[string]render.Override{
		"removed":                 removeBy("persona/p"),
		"replaced by nothing":     replaceBy("persona/p", ""),
		"replaced by white space": replaceBy("persona/p", "\n  \n"),
	} {
		t.Run(name, func(t *testing.T) {
			sections := render.ComposeSections(nil, map[string]render.Override{"structuredOutput": persona})
			text := render1(t, sections)
			if text["platform.completion"] != completion || text["platform.expectedOutput"] != respond {
				t.Errorf("completion %q, expectedOutput %q; want %q, %q", text["platform.completion"], text["platform.expectedOutput"], completion, respond)
			}
			if got, ok := text["platform.opencodeStructuredOutput"]; ok {
				t.Errorf("opencodeStructuredOutput renders %q without a structured output", got)
			}
			for _, s := range sections {
				if s.Key == "completion" && s.Origin != "default" {
					t.Errorf("completion's origin %q, want default: it is shipped", s.Origin)
				}
			}
		})
	}

	t.Run("replaced completion stays", func(t *testing.T) {
		sections := render.ComposeSections(map[string]render.Override{"completion": replaceBy(render.OriginPlatform, "Say done.")},
			map[string]render.Override{"structuredOutput": removeBy("persona/p")})
		if got := render1(t, sections)["platform.completion"]; got != "Say done." {
			t.Errorf("completion %q, want the platform's", got)
		}
	})
	t.Run("structuredOutput replaced, not empty", func(t *testing.T) {
		sections := render.ComposeSections(nil, map[string]render.Override{"structuredOutput": replaceBy("persona/p", "End with JSON.")})
		text := render1(t, sections)
		if text["platform.completion"] != structured || text["platform.expectedOutput"] != respondInOut {
			t.Errorf("completion %q, expectedOutput %q; want the shipped texts", text["platform.completion"], text["platform.expectedOutput"])
		}
		if _, ok := text["platform.opencodeStructuredOutput"]; !ok {
			t.Error("opencodeStructuredOutput does not appear")
		}
	})
}
