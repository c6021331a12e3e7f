package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/persona-operator/persona-operator/internal/render"
	"github.com/persona-operator/persona-operator/test/fixtures"
)

// launchSpec is the Persona of the launch tests: a body, one extension, the
// guardrails "Last." and, final, "Final word." of its namespace, and a
// variant for each other harness.
const launchSpec = `  harness: codex
  model: gpt-5.5
  reasoningEffort: high
  prompt: Persona body.
  variants:
  - {name: claude, harness: claude, model: claude-sonnet-4-6, reasoningEffort: low}
  - {name: opencode, harness: opencode, model: stub/gpt-5.5}
`

// The texts the launch tests expect, by hand from launchSpec: every platform
// section removed, so the system prompt is the extension, then the last and
// the final guardrail; persona.md is the body.
const (
	launchPrompt    = "Extension.\n\nLast.\n\nFinal word.\n"
	launchPersonaMD = "Persona body.\n"
)

// launchBundle renders the launch tests' Persona as the operator would and
// returns its bundle, with harnessPrompt as the persona's own.
func launchBundle(t *testing.T, harnessPrompt string) *render.Bundle {
	t.Helper()
	f := fixtures.WriteFile(t, t.TempDir(), "m.yaml", docs(
		guardrail("last", "last", "Last.", "kubernetes.io/metadata.name: team"),
		guardrail("final", "final", "Final word.", "kubernetes.io/metadata.name: team"),
		barePersona("reviewer", launchSpec, "x", "Extension."),
	))
	r := run(t, "", "render", "-f", f, "-n", "team", "-o", "bundle")
	if r.code != 0 {
		t.Fatalf("render the bundle: exit %d: %s", r.code, r.stderr)
	}
	b, err := render.UnmarshalBundle([]byte(r.stdout))
	if err != nil {
		t.Fatal(err)
	}
	b.Persona.HarnessPrompt = harnessPrompt
	return b
}

// mountBundle mounts the ConfigMap of b as the webhook does and returns the
// directory.
func mountBundle(t *testing.T, b *render.Bundle) string {
	t.Helper()
	out, err := render.Default().ConfigMap(b)
	if err != nil {
		t.Fatal(err)
	}
	return fixtures.MountConfigMap(t, filepath.Join(t.TempDir(), "persona"), out.Data)
}

// launched is what a launch executed.
type launched struct {
	result
	path string
	argv []string
	env  map[string]string
}

// runLaunch runs launch with the environment env (HOME and the working
// directory are temporary unless env sets them) and captures what it
// would execute.
func runLaunch(t *testing.T, env map[string]string, args ...string) launched {
	t.Helper()
	var l launched
	environ := []string{"HOME=" + t.TempDir(), "PATH=/usr/bin"}
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	cwd := env["PWD"]
	if cwd == "" {
		cwd = t.TempDir()
	}
	saved := currentLaunchHost
	t.Cleanup(func() { currentLaunchHost = saved })
	currentLaunchHost = func() (*launchHost, error) {
		return &launchHost{
			environ:  environ,
			cwd:      cwd,
			lookPath: func(file string) (string, error) { return "/usr/bin/" + filepath.Base(file), nil },
			exec: func(path string, argv, env []string) error {
				l.path, l.argv, l.env = path, argv, environMap(env)
				return nil
			},
		}, nil
	}
	l.result = rawRun("", append([]string{"launch"}, args...)...)
	return l
}

func mountEnv(dir, key string) map[string]string {
	return map[string]string{
		envPersonaName: "reviewer",
		envPromptFile:  filepath.Join(dir, key),
		envBundleFile:  filepath.Join(dir, render.BundleKey),
		envRevision:    "3",
	}
}

// fileArg is the content of the file that the option opt of argv names.
func fileArg(t *testing.T, argv []string, opt string) string {
	t.Helper()
	i := slices.Index(argv, opt)
	if i < 0 || i+1 >= len(argv) {
		t.Fatalf("%s not in %q", opt, argv)
	}
	raw, err := os.ReadFile(argv[i+1])
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// codexFile is the content of the file that the -c key=PATH of argv names.
func codexFile(t *testing.T, argv []string, key string) string {
	t.Helper()
	for i, a := range argv {
		if i > 0 && argv[i-1] == "-c" && strings.HasPrefix(a, key+"=") {
			var setting map[string]string
			if _, err := toml.Decode(a, &setting); err != nil {
				t.Fatalf("%s: %v", a, err)
			}
			raw, err := os.ReadFile(setting[key])
			if err != nil {
				t.Fatal(err)
			}
			return string(raw)
		}
	}
	t.Fatalf("no -c %s= in %q", key, argv)
	return ""
}

// TestLaunchWiresEachHarness: for each harness and harnessPrompt, the
// options launch inserts and the variables it sets, as docs/agents.md
// tells them; the files it names hold what the mounted ones do.
func TestLaunchWiresEachHarness(t *testing.T) {
	for _, hp := range []string{"", harnessPromptKeep, harnessPromptReplace} {
		replace := hp == harnessPromptReplace
		dir := mountBundle(t, launchBundle(t, hp))

		t.Run("codex "+hp, func(t *testing.T) {
			l := runLaunch(t, mountEnv(dir, render.SystemPromptKey), "--", "codex", "exec", "do it")
			if l.code != 0 {
				t.Fatalf("exit %d: %s", l.code, l.stderr)
			}
			want := []string{"codex", "-m", "gpt-5.5", "-c", `model_reasoning_effort="high"`, "-c"}
			if replace {
				if got := codexFile(t, l.argv, "model_instructions_file"); got != launchPrompt {
					t.Errorf("model_instructions_file holds %q, want %q", got, launchPrompt)
				}
				want = append(want, l.argv[6])
			} else {
				want = append(want, `developer_instructions="Extension.\n\nLast.\n\nFinal word.\n"`)
			}
			want = append(want, "exec", "do it")
			if !slices.Equal(l.argv, want) || l.path != "/usr/bin/codex" {
				t.Errorf("exec %s %q\nwant %q", l.path, l.argv, want)
			}
		})
		t.Run("claude "+hp, func(t *testing.T) {
			l := runLaunch(t, mountEnv(dir, render.VariantKey("claude")), "--", "claude", "-p", "do it")
			if l.code != 0 {
				t.Fatalf("exit %d: %s", l.code, l.stderr)
			}
			if l.env["CLAUDE_CODE_DISABLE_LEGACY_MODEL_REMAP"] != "1" {
				t.Errorf("CLAUDE_CODE_DISABLE_LEGACY_MODEL_REMAP not set: the persona's model may be remapped")
			}
			if replace {
				if got := fileArg(t, l.argv, "--system-prompt-file"); got != launchPersonaMD {
					t.Errorf("--system-prompt-file holds %q, want persona.md %q", got, launchPersonaMD)
				}
				if got := fileArg(t, l.argv, "--append-system-prompt-file"); got != launchPrompt {
					t.Errorf("--append-system-prompt-file holds %q, want the system prompt %q", got, launchPrompt)
				}
			} else {
				if slices.Contains(l.argv, "--system-prompt-file") {
					t.Errorf("keep passes --system-prompt-file: %q", l.argv)
				}
				if got, want := fileArg(t, l.argv, "--append-system-prompt-file"), launchPersonaMD+"\n"+launchPrompt; got != want {
					t.Errorf("--append-system-prompt-file holds %q, want persona.md then the system prompt %q", got, want)
				}
			}
			if got := l.argv[:5]; !slices.Equal(got, []string{"claude", "--model", "claude-sonnet-4-6", "--effort", "low"}) {
				t.Errorf("argv starts %q", got)
			}
			if got := l.argv[len(l.argv)-2:]; !slices.Equal(got, []string{"-p", "do it"}) {
				t.Errorf("the command's own arguments are not last: %q", l.argv)
			}
		})
		t.Run("opencode "+hp, func(t *testing.T) {
			env := mountEnv(dir, render.VariantKey("opencode"))
			env[opencodeConfigContent] = `{"provider": {"stub": {}}, "instructions": ["team.md"]}`
			l := runLaunch(t, env, "--", "opencode", "run", "do it")
			if l.code != 0 {
				t.Fatalf("exit %d: %s", l.code, l.stderr)
			}
			var config struct {
				Provider     map[string]any `json:"provider"`
				Instructions []string       `json:"instructions"`
				Agent        map[string]struct {
					Mode, Prompt string
				} `json:"agent"`
			}
			if err := json.Unmarshal([]byte(l.env[opencodeConfigContent]), &config); err != nil {
				t.Fatal(err)
			}
			if config.Provider["stub"] == nil {
				t.Errorf("the configuration of %s is lost: %s", opencodeConfigContent, l.env[opencodeConfigContent])
			}
			// The variant sets no reasoning effort: the persona's applies.
			want := []string{"opencode", "run", "--model", "stub/gpt-5.5", "--variant", "high"}
			var file string
			if replace {
				agent := config.Agent["persona-reviewer"]
				file = strings.TrimSuffix(strings.TrimPrefix(agent.Prompt, "{file:"), "}")
				if agent.Mode != "primary" || !slices.Equal(config.Instructions, []string{"team.md"}) {
					t.Errorf("config %+v: want the primary agent persona-reviewer and no instructions added", config)
				}
				want = append(want, "--agent", "persona-reviewer")
			} else {
				if len(config.Instructions) != 2 || config.Instructions[0] != "team.md" || config.Agent != nil {
					t.Fatalf("instructions %q, agents %v: want team.md then the prompt, no agent", config.Instructions, config.Agent)
				}
				file = config.Instructions[1]
			}
			if raw, err := os.ReadFile(file); err != nil || string(raw) != launchPrompt {
				t.Errorf("the prompt file %s holds %q (%v), want %q", file, raw, err, launchPrompt)
			}
			want = append(want, "do it")
			if !slices.Equal(l.argv, want) {
				t.Errorf("argv %q, want %q", l.argv, want)
			}
		})
	}
}

// TestLaunchLogs: the log names the persona, its revision and the digests
// of what is passed; the exec line shows a long argument by its size.
func TestLaunchLogs(t *testing.T) {
	dir := mountBundle(t, launchBundle(t, ""))
	l := runLaunch(t, mountEnv(dir, render.SystemPromptKey), "--", "codex", "exec", "do it")
	for _, want := range []string{
		"kubectl-persona launch: persona team/reviewer, revision 3: harness codex, model gpt-5.5, reasoning effort high, harnessPrompt keep\n",
		"kubectl-persona launch: system-prompt.md " + digest(launchPrompt) + "\n",
		"kubectl-persona launch: passes the system prompt " + digest(launchPrompt) + " as developer_instructions\n",
		`kubectl-persona launch: exec codex -m gpt-5.5 -c "model_reasoning_effort=\"high\"" -c "developer_instructions=\"Extension.\\n\\nLast.\\n\\nFinal word.\\n\"" exec "do it"` + "\n",
	} {
		if !strings.Contains(l.stderr, want) {
			t.Errorf("the log lacks %q:\n%s", want, l.stderr)
		}
	}
}

// TestLaunchRefusesAnotherHarness: a command for another harness than the
// prompt's is refused, naming both, and nothing is executed.
func TestLaunchRefusesAnotherHarness(t *testing.T) {
	dir := mountBundle(t, launchBundle(t, ""))
	for _, tc := range []struct {
		key, command, want string
	}{
		{render.SystemPromptKey, "claude", "error: the command runs claude, but team/reviewer is written for codex: run codex, or a variant for claude (--variant)\n"},
		{render.VariantKey("claude"), "/opt/bin/opencode", "error: the command runs opencode, but team/reviewer (variant claude) is written for claude: run claude, or a variant for opencode (--variant)\n"},
		{render.SystemPromptKey, "npx", "error: cannot tell the harness of \"npx\": launch runs claude, codex, opencode (told by the executable's name)\n"},
	} {
		l := runLaunch(t, mountEnv(dir, tc.key), "--", tc.command, "x")
		if l.code == 0 || !strings.HasPrefix(l.stderr, tc.want) || l.argv != nil {
			t.Errorf("%s for %s: exit %d, executed %q, stderr %q; want %q", tc.command, tc.key, l.code, l.argv, l.stderr, tc.want)
		}
	}
}

// TestLaunchVariantFlag: --variant picks the variant's prompt file beside
// PERSONA_PROMPT_FILE and its settings; an unknown one is named.
func TestLaunchVariantFlag(t *testing.T) {
	dir := mountBundle(t, launchBundle(t, ""))
	l := runLaunch(t, mountEnv(dir, render.SystemPromptKey), "--variant", "opencode", "--", "opencode", "run", "x")
	if l.code != 0 || !slices.Contains(l.argv, "stub/gpt-5.5") {
		t.Errorf("exit %d, argv %q: %s", l.code, l.argv, l.stderr)
	}
	l = runLaunch(t, mountEnv(dir, render.SystemPromptKey), "--variant", "gemini", "--", "codex", "exec", "x")
	if want := `error: persona "reviewer" has no variant "gemini": it has claude, opencode` + "\n"; l.code != ExitInvalid || l.stderr != want {
		t.Errorf("exit %d, stderr %q; want %q", l.code, l.stderr, want)
	}
}

// TestLaunchRendersTheTurn: with --turn, the prompt passed is the one
// render --bundle --turn prints, byte for byte.
func TestLaunchRendersTheTurn(t *testing.T) {
	dir := mountBundle(t, launchBundle(t, harnessPromptReplace))
	turn := fixtures.WriteFile(t, t.TempDir(), "turn.yaml", "userSystemPrompt: Turn user.\n")
	want := run(t, "", "render", "--bundle", filepath.Join(dir, render.BundleKey), "--turn", turn)
	if want.code != 0 || want.stdout != "Extension.\n\nLast.\n\nTurn user.\n\nFinal word.\n" {
		t.Fatalf("render --turn: exit %d %q %s", want.code, want.stdout, want.stderr)
	}
	env := mountEnv(dir, render.SystemPromptKey)
	for _, args := range [][]string{
		{"--turn", turn},
		{"--bundle", filepath.Join(dir, render.BundleKey), "--turn", turn},
	} {
		l := runLaunch(t, env, append(args, "--", "codex", "exec", "x")...)
		if l.code != 0 {
			t.Fatalf("%q: exit %d: %s", args, l.code, l.stderr)
		}
		if got := codexFile(t, l.argv, "model_instructions_file"); got != want.stdout {
			t.Errorf("%q: passed %q, want render's %q", args, got, want.stdout)
		}
	}
	delete(env, envBundleFile)
	delete(env, envPromptFile)
	l := runLaunch(t, env, "--turn", turn, "--", "codex", "exec", "x")
	if want := "error: --turn renders the prompt from a bundle: give --bundle FILE, or set PERSONA_BUNDLE_FILE\n"; l.code != ExitUsage || !strings.HasPrefix(l.stderr, want) {
		t.Errorf("no bundle: exit %d, stderr %q; want %q", l.code, l.stderr, want)
	}
}

// TestLaunchProjectDocs: a repository's AGENTS.md that the prompt already
// holds is not read again by the harness; one the prompt does not hold is.
func TestLaunchProjectDocs(t *testing.T) {
	agentsMD := "# Rules\nKeep commits small.\n"
	b := launchBundle(t, "")
	b.Layers = append(b.Layers, render.Layer{Name: "agents-md", Source: "app", Mode: "append", Template: agentsMD})
	dir := mountBundle(t, b)
	repo := t.TempDir()
	fixtures.WriteFile(t, repo, ".git/HEAD", "ref: refs/heads/main\n")
	fixtures.WriteFile(t, repo, "AGENTS.md", agentsMD)
	sub := filepath.Join(repo, "src")
	fixtures.WriteFile(t, sub, "main.go", "package main\n")

	for _, tc := range []struct {
		harness, key string
		command      []string
		skipped      func(l launched) bool
	}{
		{"codex", render.SystemPromptKey, []string{"codex", "exec", "x"}, func(l launched) bool { return slices.Contains(l.argv, "project_doc_max_bytes=0") }},
		{"claude", render.VariantKey("claude"), []string{"claude", "-p", "x"}, func(l launched) bool { return l.env["CLAUDE_CODE_DISABLE_CLAUDE_MDS"] == "1" }},
		{"opencode", render.VariantKey("opencode"), []string{"opencode", "run", "x"}, func(l launched) bool { return l.env["OPENCODE_DISABLE_PROJECT_CONFIG"] == "1" }},
	} {
		env := mountEnv(dir, tc.key)
		env["PWD"] = sub // AGENTS.md is in the repository's root, above it
		l := runLaunch(t, env, append([]string{"--"}, tc.command...)...)
		if l.code != 0 || !tc.skipped(l) {
			t.Errorf("%s in the repository: exit %d, exec %q %v: want the project docs off\n%s", tc.harness, l.code, l.argv, l.env, l.stderr)
		}
		if want := "project docs: the prompt holds " + filepath.Join(repo, "AGENTS.md"); !strings.Contains(l.stderr, want) {
			t.Errorf("%s: the log lacks %q:\n%s", tc.harness, want, l.stderr)
		}
		if l = runLaunch(t, env, append([]string{"--project-docs", "load", "--"}, tc.command...)...); tc.skipped(l) {
			t.Errorf("%s with --project-docs load: the project docs are off", tc.harness)
		}
		env["PWD"] = t.TempDir() // no repository
		if l = runLaunch(t, env, append([]string{"--"}, tc.command...)...); l.code != 0 || tc.skipped(l) {
			t.Errorf("%s outside the repository: exit %d, the project docs are off: %s", tc.harness, l.code, l.stderr)
		}
		if l = runLaunch(t, env, append([]string{"--project-docs", "skip", "--"}, tc.command...)...); !tc.skipped(l) {
			t.Errorf("%s with --project-docs skip: the project docs are on", tc.harness)
		}
	}
}

// TestLaunchRefusesWhatItSets: a command that sets an option launch sets
// from the persona is refused, naming it.
func TestLaunchRefusesWhatItSets(t *testing.T) {
	dir := mountBundle(t, launchBundle(t, ""))
	for _, tc := range []struct {
		key  string
		args []string
		want string
	}{
		{render.SystemPromptKey, []string{"codex", "exec", "-m", "o3", "x"}, "-m"},
		{render.SystemPromptKey, []string{"codex", "-c", `model_instructions_file="/p"`, "exec", "x"}, "-c model_instructions_file"},
		{render.SystemPromptKey, []string{"codex", "--config=model_reasoning_effort=low", "exec", "x"}, "-c model_reasoning_effort"},
		{render.VariantKey("claude"), []string{"claude", "-p", "--append-system-prompt-file", "/p", "x"}, "--append-system-prompt-file"},
		{render.VariantKey("claude"), []string{"claude", "--model=opus", "-p", "x"}, "--model"},
		{render.VariantKey("opencode"), []string{"opencode", "run", "-m", "a/b", "x"}, "-m"},
	} {
		l := runLaunch(t, mountEnv(dir, tc.key), append([]string{"--"}, tc.args...)...)
		want := "error: the command sets " + tc.want + " itself, which launch sets from the persona: leave it out\n"
		if l.code != ExitUsage || !strings.HasPrefix(l.stderr, want) {
			t.Errorf("%q: exit %d, stderr %q; want %q", tc.args, l.code, l.stderr, want)
		}
	}
	// After "--" an argument is the command's operand.
	if l := runLaunch(t, mountEnv(dir, render.SystemPromptKey), "--", "codex", "exec", "--", "-m"); l.code != 0 {
		t.Errorf("an operand -m after --: exit %d: %s", l.code, l.stderr)
	}
}

// TestLaunchErrors: what launch cannot do is named.
func TestLaunchErrors(t *testing.T) {
	dir := mountBundle(t, launchBundle(t, ""))
	b := launchBundle(t, "")
	b.Persona.Model = "gpt-5.5"
	b.Persona.Harness = "opencode"
	noProvider := mountBundle(t, b)
	b.Persona.Harness, b.Persona.HarnessPrompt = "codex", "merge"
	unknownMode := mountBundle(t, b)
	for _, tc := range []struct {
		env  map[string]string
		args []string
		code int
		want string
	}{
		{map[string]string{}, []string{"--", "codex", "exec", "x"}, ExitUsage,
			"error: no persona to launch: PERSONA_PROMPT_FILE is not set (the webhook sets it in a pod labelled prompts.persona-operator.dev/persona); set it to the mounted system-prompt.md, or give --bundle FILE\n"},
		{mountEnv(dir, render.SystemPromptKey), nil, ExitUsage, "error: no command to launch: give it after --, e.g. launch -- codex exec \"$TASK\"\n"},
		{mountEnv(noProvider, render.SystemPromptKey), []string{"--", "opencode", "run", "x"}, ExitInvalid,
			`error: opencode takes a model as provider/model, and the persona's model "gpt-5.5" names no provider: write it as opencode's --model takes it, e.g. openai/gpt-5.5` + "\n"},
		{mountEnv(unknownMode, render.SystemPromptKey), []string{"--", "codex", "x"}, ExitInvalid,
			`error: persona "reviewer": harnessPrompt "merge" is not keep or replace; use the kubectl-persona of the operator's release or a newer one` + "\n"},
		{mountEnv(dir, render.SystemPromptKey), []string{"--project-docs", "never", "--", "codex", "x"}, ExitUsage, `error: --project-docs "never" is not one of auto, load, skip` + "\n"},
	} {
		l := runLaunch(t, tc.env, tc.args...)
		if l.code != tc.code || !strings.HasPrefix(l.stderr, tc.want) || l.argv != nil {
			t.Errorf("%q: exit %d, stderr %q; want %d, %q", tc.args, l.code, l.stderr, tc.code, tc.want)
		}
	}
}

// TestLaunchCodexPromptTooLongForAnArgument: keep gives Codex the prompt as
// an argument, which Linux bounds; a longer one is refused, naming replace.
func TestLaunchCodexPromptTooLongForAnArgument(t *testing.T) {
	b := launchBundle(t, "")
	for i := range 3 { // each template is at most 64 KiB
		b.Extensions = append(b.Extensions, render.Extension{ID: fmt.Sprintf("long%d", i), Template: strings.Repeat("x", maxArgBytes/3)})
	}
	l := runLaunch(t, mountEnv(mountBundle(t, b), render.SystemPromptKey), "--", "codex", "exec", "x")
	if l.code != ExitInvalid || !strings.Contains(l.stderr, "use harnessPrompt: replace, which passes a file") {
		t.Errorf("exit %d, stderr %q", l.code, l.stderr)
	}
}

// TestLaunchLiveMountRevision: without PERSONA_REVISION (a live mount, by
// hand) the revision logged is the one revision.json records.
func TestLaunchLiveMountRevision(t *testing.T) {
	out, err := render.Default().ConfigMap(launchBundle(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	out.Data[render.RevisionKey] = `{"revision":7}`
	dir := fixtures.MountConfigMap(t, filepath.Join(t.TempDir(), "persona"), out.Data)
	env := mountEnv(dir, render.SystemPromptKey)
	delete(env, envRevision)
	l := runLaunch(t, env, "--", "codex", "exec", "x")
	if l.code != 0 || !strings.Contains(l.stderr, "persona team/reviewer, revision 7 (live mount):") {
		t.Errorf("exit %d: %s", l.code, l.stderr)
	}
}

// TestLaunchWithoutDashDash: launch reads no flag after the executable, so
// the command's own flags stay the command's without a "--".
func TestLaunchWithoutDashDash(t *testing.T) {
	dir := mountBundle(t, launchBundle(t, ""))
	l := runLaunch(t, mountEnv(dir, render.SystemPromptKey), "--project-docs", "skip", "codex", "exec", "--skip-git-repo-check", "--json", "x")
	if l.code != 0 || !slices.Equal(l.argv[len(l.argv)-4:], []string{"exec", "--skip-git-repo-check", "--json", "x"}) {
		t.Errorf("exit %d, argv %q: %s", l.code, l.argv, l.stderr)
	}
}

// TestLaunchClaudeWithoutBody: a persona without a body has an empty
// persona.md, which Claude gets no file for: keep appends the system prompt
// alone, replace puts it in place of Claude Code's own.
func TestLaunchClaudeWithoutBody(t *testing.T) {
	for _, tc := range []struct{ harnessPrompt, option string }{
		{harnessPromptKeep, "--append-system-prompt-file"},
		{harnessPromptReplace, "--system-prompt-file"},
	} {
		b := launchBundle(t, tc.harnessPrompt)
		b.Persona.Prompt = ""
		l := runLaunch(t, mountEnv(mountBundle(t, b), render.VariantKey("claude")), "--", "claude", "-p", "x")
		if l.code != 0 {
			t.Fatalf("%s: exit %d: %s", tc.harnessPrompt, l.code, l.stderr)
		}
		if got := fileArg(t, l.argv, tc.option); got != launchPrompt {
			t.Errorf("%s: %s holds %q, want the system prompt %q", tc.harnessPrompt, tc.option, got, launchPrompt)
		}
		if n := len(l.argv); n != 9 {
			t.Errorf("%s: argv %q: want one prompt option", tc.harnessPrompt, l.argv)
		}
	}
}
