package cli

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/persona-operator/persona-operator/internal/render"
)

// The variables the webhook sets in an agent container (docs/delivery.md#injection).
const (
	envPersonaName = "PERSONA_NAME"
	envPromptFile  = "PERSONA_PROMPT_FILE"
	envBundleFile  = "PERSONA_BUNDLE_FILE"
	envRevision    = "PERSONA_REVISION"
)

// The values of harnessPrompt: keep the harness's built-in instructions and
// add the prompt after them, or replace them with it.
const (
	harnessPromptKeep    = render.HarnessPromptKeep
	harnessPromptReplace = render.HarnessPromptReplace
)

// The values of --project-docs.
const (
	projectDocsAuto = "auto"
	projectDocsLoad = "load"
	projectDocsSkip = "skip"
)

type launchOptions struct {
	bundle      string
	turn        string
	variant     string
	projectDocs string
}

// launchHost is what launch uses of its process; tests replace it.
type launchHost struct {
	environ  []string
	cwd      string
	lookPath func(file string) (string, error)
	// exec replaces the process; it returns only when it fails.
	exec func(path string, argv, env []string) error
}

// currentLaunchHost is the process launch runs in.
var currentLaunchHost = func() (*launchHost, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("read the working directory: %w", err)
	}
	return &launchHost{environ: os.Environ(), cwd: cwd, lookPath: exec.LookPath, exec: syscall.Exec}, nil
}

func newLaunchCommand(s *Streams) *cobra.Command {
	o := &launchOptions{}
	cmd := &cobra.Command{
		Use:   "launch [--bundle FILE] [--turn FILE] [--variant NAME] -- COMMAND [ARG...]",
		Short: "Run a coding agent's harness with the persona's prompt, model and reasoning effort",
		Long: `Run an agent harness (claude, codex or opencode, told by the command's
executable name) with the prompt of the persona mounted in the pod: it reads
the files the injected variables name (PERSONA_PROMPT_FILE, and bundle.json
and persona.md beside it), adds the harness's own options for the persona's
model, reasoning effort and prompt, as harnessPrompt keep or replace asks,
logs the persona, its revision and the sha256 of what it passes on standard
error, and executes the command in its place, so signals and the exit status
are the harness's.

A command for another harness than the persona's (or its variant's) is
refused. With --turn (and --bundle, or PERSONA_BUNDLE_FILE) the prompt is
rendered for that turn, as 'render --bundle FILE --turn FILE' renders it.

When the prompt already holds the text of a repository instruction file that
the harness reads by itself (AGENTS.md, CLAUDE.md, ...; from a templateFrom
layer, say), the harness is told not to read them, so the model gets it once
(--project-docs).

The files launch passes are in-memory files sealed against writes, which
the harness inherits as /proc/PID/fd/N; where the system has none, they
are written under $XDG_CACHE_HOME, else $HOME/.cache, in
kubectl-persona/launch/ (docs/cli.md#launch).`,
		Example: `  # In an agent container the webhook injected
  kubectl-persona launch -- codex exec --skip-git-repo-check "$TASK"
  kubectl-persona launch -- claude -p "$TASK"
  kubectl-persona launch -- opencode run "$TASK"

  # A prompt rendered for this turn
  kubectl-persona launch --turn /run/turn/turn.json -- claude -p "$TASK"`,
		RunE: func(cmd *cobra.Command, args []string) error {
			host, err := currentLaunchHost()
			if err != nil {
				return failed("%v", err)
			}
			return o.run(s, host, args)
		},
	}
	f := cmd.Flags()
	// Everything from the command's executable on is the command's own.
	f.SetInterspersed(false)
	f.StringVar(&o.bundle, "bundle", "", "render the prompt from this bundle.json `FILE` instead of reading PERSONA_PROMPT_FILE")
	f.StringVar(&o.turn, "turn", "", "render the prompt for this turn context `FILE`, JSON or YAML (with the bundle of --bundle or PERSONA_BUNDLE_FILE)")
	f.StringVar(&o.variant, "variant", "", "run the persona's variant `NAME` (default: the variant of PERSONA_PROMPT_FILE's name, system-prompt.NAME.md)")
	f.StringVar(&o.projectDocs, "project-docs", projectDocsAuto, "whether the harness reads the repository's instruction files: auto (not when the prompt holds one), load or skip")
	_ = cmd.RegisterFlagCompletionFunc("project-docs", cobra.FixedCompletions([]string{projectDocsAuto, projectDocsLoad, projectDocsSkip}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// launchInputs are the persona's files as launch read or rendered them.
type launchInputs struct {
	// bundle is the persona's bundle, with the turn applied.
	bundle   *render.Bundle
	variant  string
	settings launchSettings
	// systemPrompt is system-prompt.md, or the variant's, or the render
	// of the bundle for the turn; source says which, for the log.
	systemPrompt string
	source       string
	personaMD    string
	revision     string
}

func (o *launchOptions) run(s *Streams, host *launchHost, command []string) error {
	if len(command) == 0 {
		return usageError("no command to launch: give it after --, e.g. launch -- codex exec \"$TASK\"")
	}
	switch o.projectDocs {
	case projectDocsAuto, projectDocsLoad, projectDocsSkip:
	default:
		return usageError("--project-docs %q is not one of %s, %s, %s", o.projectDocs, projectDocsAuto, projectDocsLoad, projectDocsSkip)
	}
	if o.bundle == "-" && o.turn == "-" {
		return usageError("--bundle and --turn cannot both read standard input")
	}
	harness, err := harnessOfCommand(command[0])
	if err != nil {
		return usageError("%v", err)
	}
	env := environMap(host.environ)
	in, err := o.readInputs(s, env)
	if err != nil {
		return err
	}
	settings := in.settings
	if settings.harness != harness {
		return failed("the command runs %s, but %s is written for %s: run %s, or a variant for %s (--variant)",
			harness, in.describe(), settings.harness, settings.harness, harness)
	}
	passedText := in.systemPrompt
	if harness == harnessClaude {
		passedText = in.personaMD + in.systemPrompt
	}
	docs, err := projectDocsInPrompt(o.projectDocs, harness, host.cwd, passedText)
	if err != nil {
		return failed("%v", err)
	}
	files := &passedFiles{env: env, seal: sealedFile}
	w, err := wireHarness(harness, wiringInput{
		persona:      in.bundle.Persona.Name,
		namespace:    in.bundle.Persona.Namespace,
		settings:     settings,
		systemPrompt: in.systemPrompt,
		personaMD:    in.personaMD,
		skipDocs:     docs.skip,
		env:          env,
		place:        files.place,
	})
	if err != nil {
		return failed("%v", err)
	}
	if flag := w.conflict(command[1:]); flag != "" {
		return usageError("the command sets %s itself, which launch sets from the persona: leave it out", flag)
	}
	path, err := host.lookPath(command[0])
	if err != nil {
		return failed("cannot run %s: %v", command[0], err)
	}
	at := optionsIndex(harness, command)
	argv := append(append(append([]string{}, command[:at]...), w.options...), command[at:]...)

	logf := func(format string, args ...any) { fmt.Fprintf(s.Err, Name+" launch: "+format+"\n", args...) }
	logf("persona %s, revision %s: harness %s, model %s, reasoning effort %s, harnessPrompt %s",
		in.describe(), in.revision, harness, orNone(settings.model), orNone(settings.effort), settings.harnessPrompt)
	logf("%s %s", in.source, digest(in.systemPrompt))
	if harness == harnessClaude {
		logf("persona.md %s", digest(in.personaMD))
	}
	for _, p := range w.passed {
		logf("passes %s %s as %s", p.what, digest(p.content), p.as)
	}
	if files.fallback != "" {
		logf("%s", files.fallback)
	}
	logf("%s", docs.note)
	logf("exec %s", quoteCommand(argv, w.env))
	if err := host.exec(path, argv, mergeEnviron(host.environ, w.env)); err != nil {
		return failed("exec %s: %v", path, err)
	}
	return nil
}

func (in *launchInputs) describe() string {
	name := in.bundle.Persona.Namespace + "/" + in.bundle.Persona.Name
	if in.variant != "" {
		return fmt.Sprintf("%s (variant %s)", name, in.variant)
	}
	return name
}

// variantFile matches a variant's prompt key, system-prompt.<variant>.md.
var variantFile = regexp.MustCompile(`^system-prompt\.([a-z][a-z0-9-]*)\.md$`)

// readInputs reads the persona's prompt, persona.md and bundle: from the
// mounted files PERSONA_PROMPT_FILE names, or rendered from a bundle with
// --bundle or --turn.
func (o *launchOptions) readInputs(s *Streams, env map[string]string) (*launchInputs, error) {
	promptFile := env[envPromptFile]
	in := &launchInputs{variant: o.variant}
	if in.variant == "" && promptFile != "" {
		if m := variantFile.FindStringSubmatch(filepath.Base(promptFile)); m != nil {
			in.variant = m[1]
		}
	}
	rendering := o.bundle != "" || o.turn != ""
	// A live mount is swapped whole by the kubelet: every file is read from
	// the one snapshot that ..data points to now.
	var mount, snapshot string
	if promptFile != "" {
		mount = filepath.Dir(promptFile)
		snapshot = snapshotDir(mount)
	}
	bundlePath := cmp.Or(o.bundle, env[envBundleFile])
	if bundlePath == "" && mount != "" {
		bundlePath = filepath.Join(mount, render.BundleKey)
	}
	switch {
	case bundlePath == "" && rendering:
		return nil, usageError("--turn renders the prompt from a bundle: give --bundle FILE, or set %s", envBundleFile)
	case bundlePath == "":
		return nil, usageError("no persona to launch: %s is not set (the webhook sets it in a pod labelled prompts.persona-operator.dev/persona); "+
			"set it to the mounted system-prompt.md, or give --bundle FILE", envPromptFile)
	}
	if mount != "" && filepath.Dir(bundlePath) == mount {
		bundlePath = filepath.Join(snapshot, filepath.Base(bundlePath))
	}
	b, err := readBundleFile(bundlePath, s.In)
	if err != nil {
		return nil, err
	}
	turn, err := readTurnFile(o.turn, s.In)
	if err != nil {
		return nil, err
	}
	in.bundle = b.WithTurn(turn)
	in.revision = revisionOf(env, snapshot)
	if in.settings, err = launchSettingsOf(in.bundle, in.variant); err != nil {
		return nil, failed("%v", err)
	}

	if rendering {
		p, err := render.Default().Render(in.bundle, in.variant)
		if err != nil {
			return nil, failed("%s", renderFailure(in.bundle, err))
		}
		in.systemPrompt, in.personaMD = p.Text, in.bundle.PersonaMarkdown()
		in.source = "system prompt rendered from " + bundlePath
		if o.turn != "" {
			in.source += " for the turn " + o.turn
		}
		return in, nil
	}
	key := filepath.Base(promptFile)
	if o.variant != "" {
		key = render.VariantKey(o.variant)
	}
	if in.systemPrompt, err = readMounted(snapshot, key); err != nil {
		return nil, err
	}
	if in.personaMD, err = readMounted(snapshot, render.PersonaKey); err != nil {
		return nil, err
	}
	in.source = key
	return in, nil
}

// snapshotDir is the directory of the snapshot that dir/..data points to,
// as the kubelet lays out a ConfigMap volume, or dir itself.
func snapshotDir(dir string) string {
	target, err := os.Readlink(filepath.Join(dir, "..data"))
	if err != nil {
		return dir
	}
	if filepath.IsAbs(target) {
		return target
	}
	return filepath.Join(dir, target)
}

func readMounted(dir, key string) (string, error) {
	raw, err := os.ReadFile(filepath.Join(dir, key))
	if err != nil {
		return "", failed("read the persona's %s: %v", key, err)
	}
	return string(raw), nil
}

// revisionOf is the revision the pod runs: PERSONA_REVISION for an injected
// snapshot; for a live mount, the revision its revision.json records.
func revisionOf(env map[string]string, snapshot string) string {
	if r := env[envRevision]; r != "" {
		return r
	}
	if snapshot != "" {
		if raw, err := os.ReadFile(filepath.Join(snapshot, render.RevisionKey)); err == nil {
			var rec struct {
				Revision int64 `json:"revision"`
			}
			if json.Unmarshal(raw, &rec) == nil && rec.Revision > 0 {
				return fmt.Sprintf("%d (live mount)", rec.Revision)
			}
		}
	}
	return "unknown (live mount)"
}

// launchSettings are the persona's settings that launch passes to the
// harness: the persona's, each field a variant sets over it, as a render
// takes them.
type launchSettings struct {
	harness, model, effort, harnessPrompt string
}

func launchSettingsOf(b *render.Bundle, variant string) (launchSettings, error) {
	l, ok := b.Launches().For(variant)
	if !ok {
		names := make([]string, 0, len(b.Variants))
		for _, v := range b.Variants {
			names = append(names, v.Name)
		}
		if len(names) == 0 {
			return launchSettings{}, fmt.Errorf("persona %q has no variant %q: it has none", b.Persona.Name, variant)
		}
		return launchSettings{}, fmt.Errorf("persona %q has no variant %q: it has %s", b.Persona.Name, variant, strings.Join(names, ", "))
	}
	s := launchSettings{harness: l.Harness, model: l.Model, effort: l.ReasoningEffort, harnessPrompt: l.HarnessPrompt}
	if s.harnessPrompt != harnessPromptKeep && s.harnessPrompt != harnessPromptReplace {
		return s, fmt.Errorf("persona %q: harnessPrompt %q is not %s or %s; use the kubectl-persona of the operator's release or a newer one",
			b.Persona.Name, s.harnessPrompt, harnessPromptKeep, harnessPromptReplace)
	}
	return s, nil
}

// harnessOfCommand tells the harness by the executable's base name.
func harnessOfCommand(executable string) (string, error) {
	name := filepath.Base(executable)
	for _, h := range harnesses {
		if name == h {
			return h, nil
		}
	}
	return "", fmt.Errorf("cannot tell the harness of %q: launch runs %s (told by the executable's name)", executable, strings.Join(harnesses, ", "))
}

// errNoSealedFiles: the system has no sealed in-memory files for launch.
var errNoSealedFiles = errors.New("sealed in-memory files are not available")

// passedFiles places the files a harness is given. A harness reads them
// after launch is gone, when a live mount may have swapped the mounted
// ones: each is a sealed in-memory file the harness inherits, or, where
// the system has none, a file under launchDir.
type passedFiles struct {
	env  map[string]string
	seal func(name, content string) (string, error)
	// fallback says, for the log, why launch wrote files instead.
	fallback string
}

func (f *passedFiles) place(name, content string) (string, error) {
	path, err := f.seal(name, content)
	if !errors.Is(err, errNoSealedFiles) {
		return path, err
	}
	dir, derr := launchDir(f.env)
	if derr != nil {
		return "", fmt.Errorf("%v; %w", err, derr)
	}
	f.fallback = fmt.Sprintf("%v: the files passed are written under %s, where a process that shares the directory can replace them", err, dir)
	return placeFile(dir, name, content)
}

// launchDir is where launch writes the files it passes when it cannot pass
// sealed in-memory files.
func launchDir(env map[string]string) (string, error) {
	base := env["XDG_CACHE_HOME"]
	if !filepath.IsAbs(base) {
		home := env["HOME"]
		if home == "" {
			return "", errors.New("HOME is not set: launch writes the files it passes under $XDG_CACHE_HOME or $HOME/.cache; set HOME to a writable directory")
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, Name, "launch"), nil
}

// placeFile writes content to dir under a name that holds its digest, so
// launches of different prompts never overwrite each other's file, and
// returns its path.
func placeFile(dir, name, content string) (string, error) {
	sum := sha256.Sum256([]byte(content))
	path := filepath.Join(dir, hex.EncodeToString(sum[:8])+"-"+name)
	if got, err := os.ReadFile(path); err == nil && string(got) == content {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("write the files launch passes: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+name+".*")
	if err != nil {
		return "", fmt.Errorf("write the files launch passes: %w", err)
	}
	_, err = io.WriteString(tmp, content)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return path, nil
}

func digest(content string) string {
	sum := sha256.Sum256([]byte(content))
	return fmt.Sprintf("sha256:%x (%d bytes)", sum, len(content))
}

func orNone(s string) string { return cmp.Or(s, "(the harness's default)") }

func environMap(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// mergeEnviron is environ with set's variables set, replacing any of the
// same name.
func mergeEnviron(environ []string, set map[string]string) []string {
	out := make([]string, 0, len(environ)+len(set))
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if _, replaced := set[k]; !replaced {
			out = append(out, kv)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(set)) {
		out = append(out, k+"="+set[k])
	}
	return out
}

// maxLoggedArg is the longest argument the exec line shows whole; a prompt
// passed as text is shown by its size.
const maxLoggedArg = 200

// quoteCommand is the exec line as a log shows it: the variables set, then
// the arguments, quoted where a shell would need it.
func quoteCommand(argv []string, env map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(env)) {
		parts = append(parts, quoteArg(k+"="+env[k]))
	}
	for _, a := range argv {
		parts = append(parts, quoteArg(a))
	}
	return strings.Join(parts, " ")
}

var plainArg = regexp.MustCompile(`^[A-Za-z0-9_./=:,@%+-]+$`)

func quoteArg(a string) string {
	if len(a) > maxLoggedArg {
		return fmt.Sprintf("<%s…, %d bytes>", strconv.Quote(a[:40]), len(a))
	}
	if plainArg.MatchString(a) {
		return a
	}
	return strconv.Quote(a)
}

// fileExists reports whether path is a regular file, following links.
func fileExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}
