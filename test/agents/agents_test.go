package agents

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/persona-operator/persona-operator/test/agents/modelstub"
)

// runTimeout bounds one CLI run; a run takes a few seconds (opencode ten on
// a loaded machine), so reaching it means the CLI hangs.
const runTimeout = 3 * time.Minute

// The markers that reach the model once whatever the recipe: the body, the
// repository's AGENTS.md, the final guardrail.
var once = []string{"PERSONA-BODY-7f3a", agentsMDMarker, "FINAL-GUARDRAIL-9d2b"}

// suite is what every test of the package shares.
type suite struct {
	path string // PATH of the runs: kubectl-persona, the CLIs, then the system's
	fx   *fixture
	doc  string // docs/agents.md
}

var (
	setUpOnce sync.Once
	shared    *suite
	setUpErr  error
	// suiteDirs are removed when the package's tests end.
	suiteDirs []string
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range suiteDirs {
		_ = os.RemoveAll(d)
	}
	os.Exit(code)
}

// setUp skips the test without the CLIs, unless make test-agents asked for
// them (PERSONA_REQUIRE_AGENTS=1): then it fails with the reason.
func setUp(t *testing.T) *suite {
	t.Helper()
	clis := os.Getenv("PERSONA_AGENT_CLIS")
	if clis == "" {
		why := "PERSONA_AGENT_CLIS is not set (the directory hack/agent-clis.sh prints): run make test-agents"
		if os.Getenv("PERSONA_REQUIRE_AGENTS") == "1" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	for _, h := range harnesses {
		if _, err := os.Stat(filepath.Join(clis, h.name)); err != nil {
			t.Fatalf("PERSONA_AGENT_CLIS=%s: %v (hack/agent-clis.sh installs the CLIs)", clis, err)
		}
	}
	setUpOnce.Do(func() {
		dir, err := os.MkdirTemp("", "agents-suite-")
		if err != nil {
			setUpErr = err
			return
		}
		suiteDirs = append(suiteDirs, dir)
		bin := filepath.Join(dir, "bin")
		build := exec.Command("go", "build", "-o", filepath.Join(bin, "kubectl-persona"), "../../cmd/kubectl-persona")
		if out, err := build.CombinedOutput(); err != nil {
			setUpErr = fmt.Errorf("build kubectl-persona: %v\n%s", err, out)
			return
		}
		doc, err := os.ReadFile("../../docs/agents.md")
		if err != nil {
			setUpErr = err
			return
		}
		shared = &suite{path: bin + string(os.PathListSeparator) + clis + string(os.PathListSeparator) + os.Getenv("PATH"), doc: string(doc)}
		shared.fx = newFixture(&fixtureT{T: t}, filepath.Join(bin, "kubectl-persona"))
	})
	if setUpErr != nil {
		t.Fatal(setUpErr)
	}
	if shared == nil || shared.fx == nil {
		t.Fatal("the suite's set-up failed in an earlier test")
	}
	return shared
}

// fixtureT makes the fixture outlive the test that made it: its files stay
// for the package's other tests, until TestMain removes them.
type fixtureT struct{ *testing.T }

func (f *fixtureT) TempDir() string {
	dir, err := os.MkdirTemp("", "agents-fixture-")
	if err != nil {
		f.Fatal(err)
	}
	suiteDirs = append(suiteDirs, dir)
	return dir
}

// recipe is the fenced block that follows <!-- test/agents: NAME --> in
// docs/agents.md, so that what the page shows is what the suite runs.
func (s *suite) recipe(t *testing.T, name string) string {
	t.Helper()
	m := regexp.MustCompile("(?s)<!-- test/agents: " + regexp.QuoteMeta(name) + " -->\n```[a-z]*\n(.*?)```").FindStringSubmatch(s.doc)
	if m == nil {
		t.Fatalf("docs/agents.md has no recipe %q (a fenced block after <!-- test/agents: %s -->)", name, name)
	}
	return m[1]
}

// launchCommand is the container command of a launch recipe, `command:
// [...]`, with $(VAR) expanded from env as the kubelet expands it.
func (s *suite) launchCommand(t *testing.T, name string, env map[string]string) []string {
	t.Helper()
	block := s.recipe(t, name)
	line := regexp.MustCompile(`(?m)^\s*command:\s*(\[.*\])\s*$`).FindStringSubmatch(block)
	if line == nil {
		t.Fatalf("recipe %q has no command: [...] line:\n%s", name, block)
	}
	var argv []string
	if err := yaml.Unmarshal([]byte(line[1]), &argv); err != nil {
		t.Fatalf("recipe %q: %v", name, err)
	}
	for i, a := range argv {
		argv[i] = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`).ReplaceAllStringFunc(a, func(ref string) string {
			return env[ref[2:len(ref)-1]]
		})
	}
	return argv
}

// runResult is what one CLI run did.
type runResult struct {
	// home is the run's HOME.
	home     string
	received received
	body     string
	output   string
	took     time.Duration
}

// run runs argv in dir for harness h with the webhook's variables of mount
// and extra, against a stub of its own, in a HOME of its own, with nothing
// else of the test's environment, and reads the request that carried the
// task.
func (s *suite) run(t *testing.T, h *harness, dir, mount string, argv []string, extra map[string]string) runResult {
	t.Helper()
	stub, err := modelstub.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer stub.Close()
	home := t.TempDir()
	env := map[string]string{
		"PATH": s.path, "HOME": home, "LANG": "C.UTF-8", "TERM": "dumb", "TASK": task,
		// A CLI that tries to leave the machine reaches the stub as its
		// proxy, which refuses and records it.
		"HTTPS_PROXY": stub.URL, "HTTP_PROXY": stub.URL, "ALL_PROXY": stub.URL,
		"https_proxy": stub.URL, "http_proxy": stub.URL, "all_proxy": stub.URL,
		"NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
	}
	for k, v := range h.configure(t, home, stub.URL) {
		env[k] = v
	}
	for k, v := range h.personaEnv(mount) {
		env[k] = v
	}
	for k, v := range extra {
		env[k] = v
	}
	if argv == nil {
		t.Fatal("no command")
	}
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, lookPath(t, argv[0], s.path), argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Dir = dir
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	// The CLI's own children (opencode's server, Codex's sandbox) go with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	out, err := cmd.CombinedOutput()
	res := runResult{home: home, output: string(out), took: time.Since(start)}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("%q did not end within %s:\n%s", argv, runTimeout, out)
	}
	if err != nil {
		t.Fatalf("%q: %v\n%s", argv, err, out)
	}
	reqs := stub.Requests()
	for _, r := range reqs {
		if r.Host != "" {
			t.Errorf("%q tried to leave the machine: %s %s", argv, r.Method, r.Host)
		}
	}
	main, ok := mainRequest(reqs)
	if !ok {
		t.Fatalf("%q: no request carried the task; %d requests\n%s", argv, len(reqs), out)
	}
	res.body = string(main.Body)
	if res.received, err = h.read(main.Body); err != nil {
		t.Fatalf("%q: read the request %s: %v", argv, main.Path, err)
	}
	return res
}

// lookPath finds name in the directories of path, as the run's shell
// would: exec.LookPath reads the test's own PATH.
func lookPath(t *testing.T, name, path string) string {
	t.Helper()
	for _, dir := range filepath.SplitList(path) {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	t.Fatalf("%s is not on the runs' PATH %s", name, path)
	return ""
}

// expect checks a run and logs what it measured.
func expect(t *testing.T, h *harness, what string, res runResult, want expectation) {
	t.Helper()
	if problems := h.check(res.received, res.body, want); len(problems) > 0 {
		t.Errorf("%s: what reached the model is wrong:\n- %s\nthe run's output:\n%s", what, strings.Join(problems, "\n- "), res.output)
	}
	t.Logf("%s: %s, model %s, effort %s, %d bytes of the harness's own instructions besides the persona's, a request of %d bytes",
		what, res.took.Round(100*time.Millisecond), res.received.model, res.received.effort, builtinBytes(res.received, want.parts), len(res.body))
}

// parts are the texts a harness gets for a prompt: Claude persona.md first.
func (h *harness) parts(prompt string) []string {
	if h.name == "claude" {
		return []string{wantPersonaMD, prompt}
	}
	return []string{prompt}
}

func each(t *testing.T, f func(t *testing.T, s *suite, h *harness, harnessPrompt string)) {
	s := setUp(t)
	for i := range harnesses {
		h := &harnesses[i]
		for _, hp := range []string{"keep", "replace"} {
			t.Run(h.name+"/"+hp, func(t *testing.T) { f(t, s, h, hp) })
		}
	}
}

// TestLaunch runs each harness through the one-line container command of
// docs/agents.md, in a repository whose AGENTS.md the prompt holds (its
// templateFrom layer).
func TestLaunch(t *testing.T) {
	each(t, func(t *testing.T, s *suite, h *harness, hp string) {
		mount := s.fx.mounts[hp]
		argv := s.launchCommand(t, h.name+" launch", map[string]string{"TASK": task})
		res := s.run(t, h, s.fx.repo, mount, argv, nil)
		expect(t, h, "launch "+hp, res, expectation{parts: h.parts(h.prompt), builtin: hp == "keep", once: once})
		if !strings.Contains(res.output, "kubectl-persona launch: persona team-a/reviewer") {
			t.Errorf("launch logged no persona:\n%s", res.output)
		}
		// The prompt reached the harness as sealed in-memory files: nothing
		// under HOME, which another container may share, holds it.
		if _, err := os.Stat(filepath.Join(res.home, ".cache", "kubectl-persona")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("launch wrote the files it passes under HOME (%v):\n%s", err, res.output)
		}
	})
}

// TestByHand runs each harness through the by-hand recipes of
// docs/agents.md, which a container runs with sh -c.
func TestByHand(t *testing.T) {
	each(t, func(t *testing.T, s *suite, h *harness, hp string) {
		script := s.recipe(t, h.name+" "+hp)
		res := s.run(t, h, s.fx.repo, s.fx.mounts[hp], []string{"sh", "-c", script}, nil)
		expect(t, h, "by hand "+hp, res, expectation{parts: h.parts(h.prompt), builtin: hp == "keep", once: once})
	})
}

// TestLaunchPerTurn: with --bundle and --turn, the prompt reaching the
// model is the bundle's render for the turn, its caller prompt before the
// final guardrail.
func TestLaunchPerTurn(t *testing.T) {
	s := setUp(t)
	for i := range harnesses {
		h := &harnesses[i]
		t.Run(h.name, func(t *testing.T) {
			argv := s.launchCommand(t, h.name+" launch", map[string]string{"TASK": task})
			at := slices.Index(argv, "launch") + 1
			argv = slices.Insert(argv, at, "--bundle", filepath.Join(s.fx.mounts["keep"], "bundle.json"), "--turn", s.fx.turn)
			prompt := wantCodexTurnPrompt
			if h.name == "claude" {
				prompt = wantClaudeTurnPrompt
			}
			res := s.run(t, h, s.fx.repo, s.fx.mounts["keep"], argv, nil)
			expect(t, h, "launch --turn", res, expectation{parts: h.parts(prompt), builtin: true, once: append(once, "TURN-USER-2b8e")})
		})
	}
}

// TestLaunchLeavesOtherProjectDocs: in a repository whose AGENTS.md the
// prompt does not hold, the harness reads it, once.
func TestLaunchLeavesOtherProjectDocs(t *testing.T) {
	s := setUp(t)
	for i := range harnesses {
		h := &harnesses[i]
		t.Run(h.name, func(t *testing.T) {
			argv := s.launchCommand(t, h.name+" launch", map[string]string{"TASK": task})
			res := s.run(t, h, s.fx.otherRepo, s.fx.mounts["keep"], argv, nil)
			expect(t, h, "launch in another repository", res, expectation{parts: h.parts(h.prompt), builtin: true, once: append(once, otherAgentsMDMarker)})
		})
	}
}

// TestBrokenRecipesFail: recipes broken on purpose, each the way a flag is
// easy to get wrong, give the model something the checks refuse: the checks
// are not blind to what they look for.
func TestBrokenRecipesFail(t *testing.T) {
	s := setUp(t)
	byName := map[string]*harness{}
	for i := range harnesses {
		byName[harnesses[i].name] = &harnesses[i]
	}
	for _, tc := range []struct {
		name, harness, script string
		want                  expectation
	}{
		{
			// Claude Code keeps the last of two --append-system-prompt-file.
			"claude: persona.md and the prompt as two appended files", "claude",
			`exec claude -p --model "$PERSONA_MODEL" --effort "$PERSONA_REASONING_EFFORT" --append-system-prompt-file "$(dirname "$PERSONA_PROMPT_FILE")/persona.md" --append-system-prompt-file "$PERSONA_PROMPT_FILE" "$TASK"`,
			expectation{parts: byName["claude"].parts(wantClaudePrompt), builtin: true, once: once},
		},
		{
			"codex: keep asked, the prompt given as model_instructions_file", "codex",
			`exec codex exec -m "$PERSONA_MODEL" -c "model_reasoning_effort=\"$PERSONA_REASONING_EFFORT\"" -c "model_instructions_file=\"$PERSONA_PROMPT_FILE\"" -c project_doc_max_bytes=0 "$TASK"`,
			expectation{parts: []string{wantCodexPrompt}, builtin: true, once: once},
		},
		{
			"codex: the repository's AGENTS.md read again", "codex",
			`exec codex exec -m "$PERSONA_MODEL" -c "model_reasoning_effort=\"$PERSONA_REASONING_EFFORT\"" -c "developer_instructions='''$(cat "$PERSONA_PROMPT_FILE")'''" "$TASK"`,
			expectation{parts: []string{wantCodexPrompt}, builtin: true, once: once},
		},
		{
			"codex: the reasoning effort under a key Codex does not read", "codex",
			`exec codex exec -m "$PERSONA_MODEL" -c "reasoning_effort=\"$PERSONA_REASONING_EFFORT\"" -c "developer_instructions='''$(cat "$PERSONA_PROMPT_FILE")'''" -c project_doc_max_bytes=0 "$TASK"`,
			expectation{parts: []string{wantCodexPrompt}, builtin: true, once: once},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := byName[tc.harness]
			res := s.run(t, h, s.fx.repo, s.fx.mounts["keep"], []string{"sh", "-c", tc.script}, nil)
			problems := h.check(res.received, res.body, tc.want)
			if len(problems) == 0 {
				t.Errorf("the checks pass a broken recipe:\n%s", tc.script)
			}
			t.Logf("refused: %s", strings.Join(problems, "; "))
		})
	}
}
