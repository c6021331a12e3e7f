package render_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/persona-operator/persona-operator/internal/render"
)

// TestVariables covers the typed data of personas.md#variables and personas.md#model.
func TestVariables(t *testing.T) {
	cases := []struct {
		name  string
		tmpl  string
		setup func(b *render.Bundle)
		want  string
	}{
		{"harness defaults to claude", "{{ .Harness }}", func(b *render.Bundle) { b.Persona.Harness = "" }, "claude\n"},
		{"harness set", "{{ .Harness }}", func(b *render.Bundle) { b.Persona.Harness = "codex" }, "codex\n"},
		{"workspace and slug default to namespace and name", "{{ .Workspace }} {{ .Slug }} {{ .AgentRef }}", nil, "ns p ns/p\n"},
		{"workspace and slug from context", "{{ .AgentRef }}", func(b *render.Bundle) {
			b.Context.Workspace, b.Context.Slug = new("acme"), new("fixer")
		}, "acme/fixer\n"},
		{"model family", "{{ .Model }}={{ .ModelFamily }}", func(b *render.Bundle) { b.Persona.Model = "claude-sonnet-4-6" }, "claude-sonnet-4-6=sonnet\n"},
		{"reasoning effort and streaming", "{{ .ReasoningEffort }} {{ .Streaming }}", func(b *render.Bundle) {
			b.Persona.ReasoningEffort, b.Persona.Streaming = "high", true
		}, "high true\n"},
		{"repos in input order", "{{ range .Repos }}{{ .Name }}:{{ .Branch }}:{{ .BranchCreated }};{{ end }}", func(b *render.Bundle) {
			b.Context.Repos = []render.Repo{{Name: "z/z", Branch: "b1", BranchCreated: true}, {Name: "a/a", Branch: "b2"}}
		}, "z/z:b1:true;a/a:b2:false;\n"},
		{"fork fields", "{{ with index .Repos 0 }}{{ .BaseRepo }} {{ .BaseCloneURL }} {{ .BaseBranch }} {{ .ForkOwner }} {{ .CloneURL }} {{ .Dir }}{{ end }}", func(b *render.Bundle) {
			b.Context.Repos = []render.Repo{{BaseRepo: "up/r", BaseCloneURL: "https://x/up/r", BaseBranch: "main", ForkOwner: "me", CloneURL: "https://x/me/r", Dir: "/w/r"}}
		}, "up/r https://x/up/r main me https://x/me/r /w/r\n"},
		{"flight messages sorted by field", "{{ range .FlightMessages }}{{ .Field }}/{{ .Flight }}/{{ .Description }} {{ end }}", func(b *render.Bundle) {
			b.Context.FlightMessages = []render.FlightMessage{{Field: "zeta", Flight: "f1", Description: "d1"}, {Field: "alpha", Flight: "f2", Description: "d2"}}
		}, "alpha/f2/d2 zeta/f1/d1\n"},
		{"knowledge", "{{ .Knowledge.Injected }} {{ .Knowledge.CreationEnabled }}", func(b *render.Bundle) {
			b.Context.Knowledge = &render.Knowledge{CreationEnabled: true}
		}, "false true\n"},
		{"tasks", "{{ range .Tasks }}{{ .ID }} {{ .Subject }} {{ .Status }} {{ .NotApplicableReason }} {{ .Conditional }} {{ .ActivationPattern }}{{ end }}", func(b *render.Bundle) {
			b.Context.Tasks = []render.Task{{ID: "t1", Subject: "s", Status: "not_applicable", NotApplicableReason: "r", Conditional: true, ActivationPattern: "*.go"}}
		}, "t1 s not_applicable r true *.go\n"},
		{"flags and strings", "{{ .GitHubGateway }} {{ .HasResultSchema }} {{ .ExpectedOutput }} {{ .WorkspaceDir }}", func(b *render.Bundle) {
			b.Context.GitHubGateway, b.Context.HasResultSchema, b.Context.ExpectedOutput, b.Context.WorkspaceDir = new(true), new(true), new("pr"), new("/w")
		}, "true true pr /w\n"},
		{"persona name and composed prompt", "{{ .Persona.Name }}: {{ .Persona.Prompt }}", func(b *render.Bundle) { b.Persona.Prompt = "Be brief." }, "p: Be brief.\n"},
		{"user and append prompts as variables", "[{{ .UserSystemPrompt }}|{{ .AppendSystemPrompt }}]", func(b *render.Bundle) {
			b.Context.UserSystemPrompt, b.Context.AppendSystemPrompt = new("u"), new("a")
		}, "[u|a]\n\nu\n\na\n"},
		{"vars with index", `{{ index .Vars "team" }}`, func(b *render.Bundle) { b.Vars = map[string]string{"team": "core"} }, "core\n"},
		{"missing var is empty", `[{{ index .Vars "nope" }}{{ .Vars.nope }}]`, nil, "[]\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := bare(c.tmpl)
			if c.setup != nil {
				c.setup(b)
			}
			if got := mustRender(t, b, ""); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestModelFamily(t *testing.T) {
	cases := map[string]string{
		"claude-opus-4-1":   "opus",
		"Claude-SONNET-4-6": "sonnet",
		"claude-haiku-4-5":  "haiku",
		"gpt-5":             "gpt",
		"GPT-4o":            "gpt",
		"openai/o3-gpt":     "gpt", // contains -gpt
		"chatgpt-4o":        "",    // neither starts with gpt nor contains -gpt
		"gemini-2.5-pro":    "gemini",
		"opus-sonnet":       "opus", // the first rule that matches wins
		"sonnet-gemini":     "sonnet",
		"llama-3":           "",
		"":                  "",
	}
	for model, want := range cases {
		if got := render.ModelFamily(model); got != want {
			t.Errorf("ModelFamily(%q) = %q, want %q", model, got, want)
		}
	}
}

// TestFunctions covers personas.md#functions: Murmur's five with Murmur's argument
// order, Sprig's hermetic functions, sorted keys and values.
func TestFunctions(t *testing.T) {
	cases := []struct{ tmpl, want string }{
		{`{{ quote "a\"b\n" }}`, `"a\"b\n"`},
		{`{{ lower "MiXed" }}`, "mixed"},
		{`[{{ trimSpace "  x  " }}]`, "[x]"},
		{`{{ hasPrefix "foobar" "foo" }} {{ hasPrefix "foo" "foobar" }}`, "true false"},
		{`{{ contains "foobar" "oba" }} {{ contains "oba" "foobar" }}`, "true false"},
		{`{{ "x" | upper }}`, "X"},
		{`{{ keys (dict "b" 1 "a" 2 "c" 3) | join "," }}`, "a,b,c"},
		{`{{ values (dict "b" 1 "a" 2 "c" 3) }}`, "[2 1 3]"},
		{`{{ repeat 3 "ab" }}`, "ababab"},
		{`{{ until 3 }} {{ untilStep 0 10 4 }} {{ seq 3 }}`, "[0 1 2] [0 4 8] 1 2 3"},
		{`{{ indent 2 "a\nb" }}`, "  a\n  b"},
		{`{{ replace "a" "xy" "banana" }}`, "bxynxynxy"},
		{`{{ regexReplaceAll "a(n)" "banana" "<$1>" }}`, "b<n><n>a"},
		{`{{ printf "%5d|%-3s|" 42 "x" }}`, "   42|x  |"},
		{`{{ default "d" "" }} {{ ternary "y" "n" true }} {{ toJson (list 1 "a") }}`, `d y [1,"a"]`},
		{`{{ $d := dict "k" "v" }}{{ $_ := set $d "n" 1 }}{{ toJson $d }}`, `{"k":"v","n":1}`},
		{`{{ slice "abcdef" 1 3 }} {{ len .Repos }}`, "bc 0"},
		{`{{ base "a/b/c.md" }} {{ ext "c.md" }}`, "c.md .md"},
	}
	for _, c := range cases {
		if got := mustRender(t, bare(c.tmpl), ""); got != c.want+"\n" {
			t.Errorf("%s: got %q, want %q", c.tmpl, got, c.want+"\n")
		}
	}
}

func TestExcludedFunctionsDoNotParse(t *testing.T) {
	for _, fn := range []string{"env", "expandenv", "getHostByName", "now", "date", "ago", "randAlpha", "randInt",
		"uuidv4", "shuffle", "sha256sum", "genPrivateKey", "bcrypt", "osBase", "encryptAES"} {
		err := renderErr(t, bare("{{ "+fn+" }}"))
		if !strings.Contains(err.Error(), `function "`+fn+`" not defined`) {
			t.Errorf("%s: %v", fn, err)
		}
	}
}

func TestRenderErrorNamesPersonaAndSection(t *testing.T) {
	b := bare()
	b.Persona.Name = "bench-lean"
	b.Extensions = []render.Extension{{ID: "notes", Template: "{{ .Nope }}"}}
	err := renderErr(t, b)
	want := `the system prompt of persona "bench-lean" does not render: render system prompt section extension.notes: `
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("got %q\nwant prefix %q", err, want)
	}
	var re *render.RenderError
	if !errors.As(err, &re) || re.Section != "extension.notes" {
		t.Errorf("not a RenderError for extension.notes: %#v", err)
	}

	b = bare()
	b.Sections = []render.Section{{Key: "workspace", Template: "{{ index .Repos 3 }}"}}
	if err := renderErr(t, b); !strings.Contains(err.Error(), "render system prompt section platform.workspace: ") {
		t.Errorf("platform section not named: %v", err)
	}

	b = bare()
	b.Layers = []render.Layer{layer("team", "app", "append", "{{ fail \"no\" }}")}
	if err := renderErr(t, b); !strings.Contains(err.Error(), "render system prompt section layer.team: ") {
		t.Errorf("layer not named: %v", err)
	}

	b = bare(`{{ if eq .Harness "codex" }}{{ .Nope }}{{ end }}`)
	b.Variants = []render.Variant{{Name: "fast", Harness: "codex"}}
	_, err = render.Default().ConfigMap(b)
	want = `the system prompt of persona "p" does not render: variant fast: render system prompt section extension.a: `
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("got %v\nwant prefix %q", err, want)
	}
}

func TestInclude(t *testing.T) {
	b := bare(`{{ include "greeting" . }}`, `{{ include "repo-line" (index .Repos 0) }}`)
	b.Context.Repos = []render.Repo{{Name: "o/r"}}
	b.Includes = map[string]string{
		"greeting":  `Hello {{ .Persona.Name }}, {{ include "signoff" . | trimSpace }}`,
		"signoff":   "  bye  ",
		"repo-line": "repo {{ .Name }}",
	}
	if got := mustRender(t, b, ""); got != "Hello p, bye\n\nrepo o/r\n" {
		t.Errorf("got %q", got)
	}

	// A layer may include another; its own source and mode are ignored there.
	b = bare()
	b.Layers = []render.Layer{layer("outer", "app", "append", `[{{ include "inner" . }}]`)}
	b.Includes = map[string]string{"inner": "in"}
	if got := mustRender(t, b, ""); got != "[in]\n" {
		t.Errorf("got %q", got)
	}
}

func TestIncludedOutputCountsOnce(t *testing.T) {
	limits := render.DefaultLimits
	limits.MaxOutputBytes = 1000
	e := render.NewEngine(limits)
	b := bare(`{{ include "big" . }}`)
	b.Includes = map[string]string{"big": strings.Repeat("x", 700)}
	if _, err := e.Render(b, ""); err != nil {
		t.Errorf("700 bytes through include under a 1000-byte limit: %v", err)
	}
	b = bare(`{{ include "big" . }}{{ include "big" . }}`)
	b.Includes = map[string]string{"big": strings.Repeat("x", 700)}
	if _, err := e.Render(b, ""); err == nil || !strings.Contains(err.Error(), "over the limit of 1000 bytes") {
		t.Errorf("1400 bytes under a 1000-byte limit: %v", err)
	}
}

func TestIncludeCycleAndDepth(t *testing.T) {
	b := bare()
	b.Layers = []render.Layer{layer("a", "app", "append", `{{ include "b" . }}`)}
	b.Includes = map[string]string{"a": `{{ include "b" . }}`, "b": `{{ include "a" . }}`}
	if err := renderErr(t, b); !strings.Contains(err.Error(), "include cycle: a -> b -> a") {
		t.Errorf("got %v", err)
	}

	b = bare(`{{ include "self" . }}`)
	b.Includes = map[string]string{"self": `x{{ include "self" . }}`}
	if err := renderErr(t, b); !strings.Contains(err.Error(), "include cycle: self -> self") {
		t.Errorf("got %v", err)
	}

	chain := func(n int) map[string]string {
		m := map[string]string{}
		for i := 1; i < n; i++ {
			m["l"+string(rune('0'+i))] = `{{ include "l` + string(rune('0'+i+1)) + `" . }}`
		}
		m["l"+string(rune('0'+n))] = "deep"
		return m
	}
	b = bare(`{{ include "l1" . }}`)
	b.Includes = chain(8) // eight nested includes: the limit
	if got := mustRender(t, b, ""); got != "deep\n" {
		t.Errorf("depth 8: got %q", got)
	}
	b.Includes = chain(9)
	err := renderErr(t, b)
	if !strings.Contains(err.Error(), "include depth exceeds the limit of 8: l1 -> l2 -> l3 -> l4 -> l5 -> l6 -> l7 -> l8 -> l9") {
		t.Errorf("depth 9: got %v", err)
	}
}

// TestDefinesAreIsolated checks that templates of different sections never
// see each other's {{define}}s, whatever order they render in.
func TestDefinesAreIsolated(t *testing.T) {
	b := bare(`{{ define "x" }}one{{ end }}{{ template "x" }}`, `{{ define "x" }}{{ end }}[{{ template "x" }}]`, `{{ include "l" . }}{{ template "x" }}`)
	b.Extensions[2].Template = `{{ define "x" }}three{{ end }}{{ include "l" . }}{{ template "x" }}`
	b.Includes = map[string]string{"l": `{{ define "x" }}L{{ end }}{{ template "x" }}`}
	if got := mustRender(t, b, ""); got != "one\n\n[]\n\nLthree\n" {
		t.Errorf("got %q", got)
	}
	if err := renderErr(t, bare(`{{ template "elsewhere" }}`)); !strings.Contains(err.Error(), `template "elsewhere" is not defined`) {
		t.Errorf("got %v", err)
	}
}

// TestDefaultSectionsAppearWhenSpecSays checks the table of personas.md#platform-sections by the
// names of the rendered pieces.
func TestDefaultSectionsAppearWhenSpecSays(t *testing.T) {
	always := []string{"workspace", "commitSigning", "gitWrapper", "prDashboardLink", "prMergeability", "waiver", "structuredOutput", "eventDelivery", "completion"}
	cases := []struct {
		name  string
		setup func(b *render.Bundle)
		extra []string
	}{
		{"claude, autonomous, empty context", nil, []string{"autonomousTurn"}},
		{"claude streaming", func(b *render.Bundle) { b.Persona.Streaming = true }, nil},
		{"codex", func(b *render.Bundle) { b.Persona.Harness = "codex" }, []string{"persona"}},
		{"opencode", func(b *render.Bundle) { b.Persona.Harness = "opencode" }, []string{"persona", "opencodeStructuredOutput"}},
		{"one plain repo", func(b *render.Bundle) {
			b.Persona.Streaming = true
			b.Context.Repos = []render.Repo{{Name: "o/r"}}
		}, []string{"gitPush"}},
		{"created branch and fork", func(b *render.Bundle) {
			b.Persona.Streaming = true
			b.Context.Repos = []render.Repo{{Name: "o/r", BranchCreated: true}, {Name: "o/s", BaseRepo: "up/s"}}
		}, []string{"gitPush", "branchCreated", "forkPr"}},
		{"gateway, knowledge, expected output, tasks", func(b *render.Bundle) {
			b.Persona.Streaming = true
			b.Context.GitHubGateway = new(true)
			b.Context.Knowledge = &render.Knowledge{Injected: true}
			b.Context.ExpectedOutput = new("respond")
			b.Context.Tasks = []render.Task{{ID: "t"}}
		}, []string{"ghGateway", "knowledge", "expectedOutput", "tasks"}},
		{"knowledge creation only", func(b *render.Bundle) {
			b.Persona.Streaming = true
			b.Context.Knowledge = &render.Knowledge{CreationEnabled: true}
		}, []string{"knowledge"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := bare()
			b.Persona.Prompt = "Body."
			b.Sections = render.DefaultSections()
			if c.setup != nil {
				c.setup(b)
			}
			p, err := render.Default().Render(b, "")
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]bool{}
			for _, k := range append(append([]string{}, always...), c.extra...) {
				want["platform."+k] = true
			}
			got := map[string]bool{}
			for _, n := range pieceNames(p) {
				got[n] = true
			}
			for _, k := range render.Catalog {
				n := "platform." + k
				if got[n] != want[n] {
					t.Errorf("%s appears=%v, want %v", n, got[n], want[n])
				}
			}
		})
	}
}

func TestDefaultSectionContent(t *testing.T) {
	b := bare()
	b.Sections = render.DefaultSections()
	b.Persona.Harness = "codex"
	b.Persona.Prompt = "Review the diff."
	b.Context.Repos = []render.Repo{{Name: "o/r", Dir: "/w/r", Branch: "agent/x", BranchCreated: true, BaseRepo: "up/r"}}
	b.Context.FlightMessages = []render.FlightMessage{{Field: "summary", Description: "one line"}}
	b.Context.HasResultSchema = new(true)
	b.Context.Tasks = []render.Task{{ID: "lint", Subject: "Run the linter", Status: "pending", Conditional: true, ActivationPattern: "*.go"}}
	p, err := render.Default().Render(b, "")
	if err != nil {
		t.Fatal(err)
	}
	text := map[string]string{}
	for _, pc := range p.Pieces {
		text[pc.Name] = pc.Text
	}
	// Each section says what the table of personas.md#platform-sections says, with the turn's values.
	mustContain := map[string][]string{
		"platform.persona":          {"Review the diff."},
		"platform.workspace":        {"o/r", "/w/r", "agent/x", "ns/p"},
		"platform.gitPush":          {"git push", "-u"},
		"platform.branchCreated":    {"agent/x", "o/r", "not on the remote"},
		"platform.forkPr":           {"up/r"},
		"platform.structuredOutput": {"`response`", "`needs_input`", "`summary`: one line", "`result`"},
		"platform.tasks":            {"lint", "Run the linter", "*.go"},
		"platform.waiver":           {"## Waivers"},
	}
	for name, subs := range mustContain {
		for _, s := range subs {
			if !strings.Contains(text[name], s) {
				t.Errorf("%s does not mention %q: %q", name, s, text[name])
			}
		}
	}
}

func TestVariants(t *testing.T) {
	b := bare(`{{ .Harness }} {{ .Model }} {{ .ModelFamily }} {{ .ReasoningEffort }}`)
	b.Persona.Model, b.Persona.ReasoningEffort = "claude-opus-4-1", "low"
	b.Variants = []render.Variant{{Name: "fast", Model: "claude-haiku-4-5"}, {Name: "codex", Harness: "codex", ReasoningEffort: "high"}}
	if got := mustRender(t, b, ""); got != "claude claude-opus-4-1 opus low\n" {
		t.Errorf("base: %q", got)
	}
	if got := mustRender(t, b, "fast"); got != "claude claude-haiku-4-5 haiku low\n" {
		t.Errorf("fast: %q", got)
	}
	if got := mustRender(t, b, "codex"); got != "codex claude-opus-4-1 opus high\n" {
		t.Errorf("codex: %q", got)
	}
	if _, err := render.Default().Render(b, "nope"); err == nil {
		t.Error("unknown variant rendered")
	}
}
