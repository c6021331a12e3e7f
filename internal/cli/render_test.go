package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/persona-operator/persona-operator/test/fixtures"
)

// The expected prompts below are derived from personas.md#composition by hand: every
// persona removes all platform sections, so the prompt is exactly the
// extensions, layers and turn context, normalized (trailing whitespace and
// leading blank lines removed, empty pieces dropped), joined with one blank
// line and ended with one newline (personas.md#delivery).
func TestRenderPrompt(t *testing.T) {
	ab := barePersona("p", "", "a", "A", "b", "B")
	tests := []struct {
		name      string
		manifests string
		args      []string
		context   string
		want      string
	}{
		{
			name:      "extensions in order",
			manifests: ab,
			want:      "A\n\nB\n",
		},
		{
			name:      "pieces normalized and empty ones dropped",
			manifests: barePersona("p", "", "a", "\n\n  A  \n\n", "empty", "{{ if false }}x{{ end }}", "b", "B\n\n\n"),
			want:      "  A\n\nB\n",
		},
		{
			name:      "nothing remains: no prompt at all",
			manifests: barePersona("p", ""),
			want:      "",
		},
		{
			name: "layers sorted by source rank and applied by mode",
			manifests: docs(
				barePersona("p", "  layers: [{name: l-run}, {name: l-app}, {name: l-team}, {name: l-user}, {name: l-pkg}]\n", "base", "BASE"),
				layer("l-run", "run", "append", "RUN"),
				layer("l-app", "app", "prepend", "APP"),
				layer("l-team", "team", "append", "TEAM"),
				layer("l-user", "user", "append", "USER"),
				layer("l-pkg", "", "prepend", "PKG"),
			),
			// user: BASE USER; package: PKG BASE USER; custom (team):
			// ... TEAM; app: APP ...; run: ... RUN.
			want: "APP\n\nPKG\n\nBASE\n\nUSER\n\nTEAM\n\nRUN\n",
		},
		{
			name: "replace, disable, an empty layer skipped",
			manifests: docs(
				barePersona("p", "  layers: [{name: r}, {name: d}, {name: empty}, {name: after}]\n", "base", "BASE"),
				layer("r", "user", "replace", "REPLACED"),
				layer("d", "package", "disable", ""),
				layer("empty", "app", "replace", "{{ if false }}gone{{ end }}"),
				layer("after", "run", "append", "AFTER"),
			),
			want: "AFTER\n",
		},
		{
			name: "inheritance: chain order, bodies joined, extension ids replaced in place",
			manifests: docs(
				barePersona("base", "  prompt: \"Base body\\n\"\n"),
				persona("a", "  inherit: [base]\n  model: claude-opus-4-1\n  prompt: \"\\n\\nA body  \\n\"\n  systemPrompt:\n    extensions:\n    - {id: x, template: from A}"),
				persona("b", "  inherit: [base]\n  prompt: B body\n  systemPrompt:\n    extensions:\n    - {id: yy, template: from B}"),
				persona("p", "  inherit: [a, b]\n  prompt: P body\n  systemPrompt:\n    extensions:\n    - {id: x, template: from P}\n    - {id: body, template: '{{ .Persona.Prompt }}'}\n    - {id: family, template: '{{ .ModelFamily }} {{ .Harness }}'}"),
			),
			args: []string{"--persona", "p"},
			// Chain base, a, b, p: x (p's template, a's position), y,
			// body, family; the model comes from a, the harness defaults.
			want: "from P\n\nfrom B\n\nBase body\n\nA body\n\nB body\n\nP body\n\nopus claude\n",
		},
		{
			name:      "turn context: user and appended prompts last, as literal text",
			manifests: ab,
			context:   "userSystemPrompt: \"{{ .Harness }} is literal\"\nappendSystemPrompt: |\n  Appended.\n",
			want:      "A\n\nB\n\n{{ .Harness }} is literal\n\nAppended.\n",
		},
		{
			name: "turn context fields override the persona's",
			manifests: barePersona("p", "  harness: codex\n  context:\n    workspace: team\n    slug: fixer\n",
				"who", "{{ .Harness }} {{ .Model }} {{ .AgentRef }} {{ .Streaming }}"),
			context: `{"harness": "opencode", "model": "gpt-5", "slug": "turn", "streaming": true}`,
			want:    "opencode gpt-5 team/turn true\n",
		},
		{
			name:      "context defaults: workspace is the namespace, slug the persona",
			manifests: barePersona("p", "", "ref", "{{ .AgentRef }}"),
			args:      []string{"-n", "team-a"},
			want:      "team-a/p\n",
		},
		{
			name: "variant overrides the persona's fields",
			manifests: barePersona("p", "  model: claude-sonnet-4-6\n  variants:\n  - {name: codex, harness: codex, model: gpt-5}\n",
				"who", "{{ .Harness }} {{ .ModelFamily }}"),
			args: []string{"--variant", "codex"},
			want: "codex gpt\n",
		},
		{
			name: "layer template from a ConfigMap",
			manifests: docs(
				barePersona("p", "  layers: [{name: agents}]\n"),
				"apiVersion: prompts.persona-operator.dev/v1alpha1\nkind: PromptLayer\nmetadata: {name: agents}\nspec:\n  templateFrom:\n    configMapKeyRef: {name: repo-docs, key: AGENTS.md}\n",
				"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: repo-docs, labels: {prompts.persona-operator.dev/template-source: \"true\"}}\ndata:\n  AGENTS.md: |\n    # Agents\n    Run make test.\n",
			),
			want: "# Agents\nRun make test.\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"render", "-f", fixtures.WriteFile(t, dir, "manifests.yaml", tt.manifests)}, tt.args...)
			if tt.context != "" {
				args = append(args, "--turn", fixtures.WriteFile(t, dir, "turn.yaml", tt.context))
			}
			run(t, "", args...).expect(t, 0, tt.want)
		})
	}
}

func TestRenderInputs(t *testing.T) {
	dir := t.TempDir()
	// A GitOps directory: nested files, other kinds, a comment-only first
	// document, JSON, files that are not manifests, a hidden directory.
	fixtures.WriteFile(t, dir, "deploy/app.yaml", "# header\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: app}\n---\n"+layer("l", "run", "append", "LAYER"))
	fixtures.WriteFile(t, dir, "deploy/personas/p.yml", barePersona("p", "  layers: [{name: l}]\n", "a", "A"))
	fixtures.WriteFile(t, dir, "deploy/parts/more.json", `{"apiVersion": "prompts.persona-operator.dev/v1alpha1", "kind": "PromptLayer", "metadata": {"name": "j"}, "spec": {"source": "user", "template": "JSON"}}`)
	fixtures.WriteFile(t, dir, "deploy/README.md", "not a manifest: {{")
	fixtures.WriteFile(t, dir, "deploy/.hidden/broken.yaml", "a: [")
	fixtures.WriteFile(t, dir, "deploy/kustomization.yaml", "resources: [app.yaml]\n")

	run(t, "", "render", "-f", filepath.Join(dir, "deploy")).expect(t, 0, "A\n\nLAYER\n")

	// Files given one by one, -f repeated, comma-separated and as a glob
	// expands them.
	p := filepath.Join(dir, "deploy/personas/p.yml")
	l := filepath.Join(dir, "deploy/app.yaml")
	run(t, "", "render", "-f", p, "-f", l).expect(t, 0, "A\n\nLAYER\n")
	run(t, "", "render", "-f", p+","+l).expect(t, 0, "A\n\nLAYER\n")
	run(t, "", "render", "-f", p, l).expect(t, 0, "A\n\nLAYER\n")

	// Standard input, together with a file.
	manifests, _ := os.ReadFile(p)
	run(t, string(manifests), "render", "-f", "-", "-f", l).expect(t, 0, "A\n\nLAYER\n")

	// The turn context from standard input.
	run(t, "userSystemPrompt: U\n", "render", "-f", p, "-f", l, "--turn", "-").expect(t, 0, "A\n\nLAYER\n\nU\n")
}

func TestRenderSelectsPersona(t *testing.T) {
	dir := t.TempDir()
	f := fixtures.WriteFile(t, dir, "two.yaml", docs(
		barePersona("one", "", "a", "ONE"),
		barePersona("two", "", "a", "TWO"),
		"apiVersion: prompts.persona-operator.dev/v1alpha1\nkind: Persona\nmetadata: {name: two, namespace: other}\nspec:\n  systemPrompt:"+removeAll+"\n    extensions: [{id: a, template: OTHER}]\n",
	))
	run(t, "", "render", "-f", f, "--persona", "one").expect(t, 0, "ONE\n")
	run(t, "", "render", "-f", f, "--persona", "default/two").expect(t, 0, "TWO\n")
	run(t, "", "render", "-f", f, "--persona", "other/two").expect(t, 0, "OTHER\n")
	run(t, "", "render", "-f", f, "--persona", "two").expect(t, 2, "")

	r := run(t, "", "render", "-f", f)
	r.expect(t, 2, "")
	if !strings.Contains(r.stderr, "default/one, default/two, other/two") {
		t.Errorf("stderr does not list the personas:\n%s", r.stderr)
	}
	r = run(t, "", "render", "-f", f, "-o", "bundle")
	r.expect(t, 2, "")

	r = run(t, "", "render", "-f", f, "--persona", "three")
	r.expect(t, 1, "")
	if !strings.Contains(r.stderr, `persona "three" not found`) {
		t.Errorf("stderr = %s", r.stderr)
	}
}

func TestRenderConfigMap(t *testing.T) {
	dir := t.TempDir()
	f := fixtures.WriteFile(t, dir, "p.yaml", docs(
		barePersona("p", "  prompt: Body.\n  variants:\n  - {name: fast, model: claude-haiku-4-5}\n", "family", "{{ .ModelFamily }}"),
		barePersona("q", "", "a", "Q"),
	))
	r := run(t, "", "render", "-f", f, "--persona", "p", "-o", "configmap", "-n", "agents")
	if r.code != 0 {
		t.Fatalf("exit status %d: %s", r.code, r.stderr)
	}
	if strings.Contains(r.stdout, "creationTimestamp") {
		t.Errorf("the ConfigMap has a creationTimestamp:\n%s", r.stdout)
	}
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict([]byte(r.stdout), &cm); err != nil {
		t.Fatal(err)
	}
	if cm.APIVersion != "v1" || cm.Kind != "ConfigMap" || cm.Name != "persona-p" || cm.Namespace != "agents" {
		t.Errorf("ConfigMap is %s %s %s/%s", cm.APIVersion, cm.Kind, cm.Namespace, cm.Name)
	}
	wantLabels := map[string]string{"app.kubernetes.io/managed-by": "persona-operator", "prompts.persona-operator.dev/persona": "p"}
	if len(cm.Labels) != 3 || cm.Labels["prompts.persona-operator.dev/template-source"] != "true" || cm.Labels["app.kubernetes.io/managed-by"] != wantLabels["app.kubernetes.io/managed-by"] || cm.Labels["prompts.persona-operator.dev/persona"] != "p" {
		t.Errorf("labels = %v, want %v", cm.Labels, wantLabels)
	}
	bundle := run(t, "", "render", "-f", f, "--persona", "p", "-o", "bundle", "-n", "agents")
	wantData := map[string]string{
		"system-prompt.md":      "", // no model: no family, nothing remains
		"system-prompt.fast.md": "haiku\n",
		"persona.md":            "Body.\n",
		"bundle.json":           bundle.stdout,
	}
	if len(cm.Data) != len(wantData) {
		t.Errorf("data keys = %v", keys(cm.Data))
	}
	for k, v := range wantData {
		if cm.Data[k] != v {
			t.Errorf("data[%s] = %q, want %q", k, cm.Data[k], v)
		}
	}
	// personas.md#writing-a-persona-spec: sha256 of the data with its keys sorted (encoding/json sorts).
	raw, _ := json.Marshal(cm.Data)
	sum := sha256.Sum256(raw)
	if got, want := cm.Annotations["prompts.persona-operator.dev/content-hash"], "sha256:"+hex.EncodeToString(sum[:]); got != want {
		t.Errorf("content-hash = %s, want %s", got, want)
	}

	// Without --persona, -o configmap too lists the personas and exits 2.
	all := run(t, "", "render", "-f", f, "-o", "configmap", "-n", "agents")
	all.expect(t, 2, "")
	if !strings.Contains(all.stderr, "the manifests hold 2 personas: p, q; select one with --persona NAME") {
		t.Errorf("stderr = %s", all.stderr)
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A bundle rendered with -o bundle and rendered again with --bundle gives
// what -f gives, with and without a turn context (personas.md#delivery, docs/cli.md).
func TestRenderBundle(t *testing.T) {
	dir := t.TempDir()
	f := fixtures.WriteFile(t, dir, "p.yaml", docs(
		barePersona("p", "  prompt: Body.\n  layers: [{name: l}]\n  variants: [{name: codex, harness: codex}]\n",
			"who", "{{ .Harness }} {{ .Workspace }}", "inc", `{{ include "frag" . }}`),
		layer("l", "run", "append", "{{ with .Repos }}{{ len . }} repos{{ end }}"),
		layer("frag", "", "", "fragment of {{ .Persona.Name }}"),
	))
	turn := fixtures.WriteFile(t, dir, "turn.json", `{"repos": [{"name": "o/r", "dir": "/w/r"}], "userSystemPrompt": "U", "harness": "opencode", "workspace": "ws"}`)

	b := run(t, "", "render", "-f", f, "-o", "bundle")
	if b.code != 0 {
		t.Fatalf("render -o bundle: %d %s", b.code, b.stderr)
	}
	bundle := fixtures.WriteFile(t, dir, "bundle.json", b.stdout)

	plain := "claude default\n\nfragment of p\n"
	withTurn := "opencode ws\n\nfragment of p\n\n1 repos\n\nU\n"
	run(t, "", "render", "-f", f).expect(t, 0, plain)
	run(t, "", "render", "--bundle", bundle).expect(t, 0, plain)
	run(t, "", "render", "-f", f, "--turn", turn).expect(t, 0, withTurn)
	run(t, "", "render", "--bundle", bundle, "--turn", turn).expect(t, 0, withTurn)
	run(t, b.stdout, "render", "--bundle", "-", "--turn", turn).expect(t, 0, withTurn)
	run(t, "", "render", "--bundle", bundle, "--variant", "codex").expect(t, 0, "codex default\n\nfragment of p\n")

	// The other outputs agree too.
	for _, o := range []string{"bundle", "configmap"} {
		want := run(t, "", "render", "-f", f, "--turn", turn, "-o", o)
		run(t, "", "render", "--bundle", bundle, "--turn", turn, "-o", o).expect(t, 0, want.stdout)
	}
	run(t, "", "render", "--bundle", bundle, "-o", "bundle").expect(t, 0, b.stdout)
}

func TestRenderExitStatus(t *testing.T) {
	dir := t.TempDir()
	p := fixtures.WriteFile(t, dir, "p.yaml", barePersona("p", "  variants: [{name: codex, harness: codex}]\n", "a", "A"))
	two := fixtures.WriteFile(t, dir, "two.yaml", docs(barePersona("a", ""), barePersona("b", "")))
	bundle := fixtures.WriteFile(t, dir, "bundle.json", run(t, "", "render", "-f", p, "-o", "bundle").stdout)
	failing := fixtures.WriteFile(t, dir, "fail.yaml", barePersona("bad", "", "first", "{{ index .Repos 0 }}"))
	missing := fixtures.WriteFile(t, dir, "missing.yaml", barePersona("orphan", "  inherit: [ghost]\n"))
	invalid := fixtures.WriteFile(t, dir, "invalid.yaml", persona("p", "  modle: x"))
	ctx := func(s string) string { return fixtures.WriteFile(t, t.TempDir(), "turn.yaml", s) }

	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string // a part of stderr
	}{
		{"help", []string{"render", "--help"}, 0, ""},
		{"unknown flag", []string{"render", "-f", p, "--colour"}, 2, "unknown flag: --colour"},
		{"unknown command", []string{"rendr"}, 2, "unknown command"},
		{"no input", []string{"render"}, 2, "one of -f PATH, -k DIR and --bundle FILE is required"},
		{"-f and --bundle", []string{"render", "-f", p, "--bundle", bundle}, 2, "mutually exclusive"},
		{"several personas", []string{"render", "-f", two}, 2, "a, b"},
		{"bad output", []string{"render", "-f", p, "-o", "json"}, 2, "--output"},
		{"variant with configmap", []string{"render", "-f", p, "-o", "configmap", "--variant", "codex"}, 2, "--variant"},
		{"persona with bundle", []string{"render", "--bundle", bundle, "--persona", "p"}, 2, "--persona"},
		{"stdin twice", []string{"render", "-f", "-", "--turn", "-"}, 2, "standard input"},
		{"argument without -f", []string{"render", "p"}, 2, "unexpected arguments"},
		{"missing file", []string{"render", "-f", filepath.Join(dir, "nope.yaml")}, 1, "does not exist"},
		{"unknown variant", []string{"render", "-f", p, "--variant", "gpt"}, 1, "error: persona \"p\" has no variant \"gpt\"; its variants: codex\n"},
		{"render failure", []string{"render", "-f", failing}, 1, `the system prompt of persona "bad" does not render: render system prompt section extension.first: `},
		{"missing parent", []string{"render", "-f", missing}, 1, `persona "orphan": Persona "ghost" (referenced by persona "orphan") not found`},
		{"admission failure", []string{"render", "-f", invalid}, 1, ":1 Persona/p: spec.modle: "},
		{"context unknown key", []string{"render", "-f", p, "--turn", ctx("userSystemPromt: x\n")}, 1, `"userSystemPromt"`},
		{"context wrong case", []string{"render", "-f", p, "--turn", ctx("UserSystemPrompt: x\n")}, 1, `"UserSystemPrompt"`},
		{"context bad harness", []string{"render", "-f", p, "--turn", ctx("harness: gemini\n")}, 1, `"gemini"`},
		{"context not YAML", []string{"render", "-f", p, "--turn", ctx("a: [\n")}, 1, "invalid YAML"},
		{"context wrong type", []string{"render", "-f", p, "--turn", ctx("repos: yes\n")}, 1, "turn context"},
		{"bad bundle", []string{"render", "--bundle", ctx(`{"version": 1, "version": 1}`)}, 1, "duplicate field"},
		{"bundle requiring the unknown", []string{"render", "--bundle", ctx(`{"version": 1, "persona": {"name": "p", "namespace": "n"}, "context": {}, "sections": [], "requires": ["extra"]}`)}, 1, `requires "extra"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, "", tt.args...)
			if r.code != tt.code {
				t.Errorf("exit status = %d, want %d\nstderr: %s", r.code, tt.code, r.stderr)
			}
			if !strings.Contains(r.stderr, tt.stderr) {
				t.Errorf("stderr does not contain %q:\n%s", tt.stderr, r.stderr)
			}
			if tt.code != 0 && r.stdout != "" {
				t.Errorf("stdout = %q, want nothing", r.stdout)
			}
		})
	}
}

// --context is no longer the turn context: it names a kubeconfig context.
func TestRenderContextIsNotTheTurn(t *testing.T) {
	dir := t.TempDir()
	p := fixtures.WriteFile(t, dir, "p.yaml", barePersona("p", "", "a", "A"))
	r := run(t, "", "render", "-f", p, "--context", fixtures.WriteFile(t, dir, "turn.yaml", "slug: x\n"))
	r.expect(t, 2, "")
	if !strings.Contains(r.stderr, "--context is a kubeconfig context") || !strings.Contains(r.stderr, "--turn FILE") {
		t.Errorf("stderr = %s", r.stderr)
	}
}
