package cli

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// The harnesses launch runs, by their executables' names.
const (
	harnessClaude   = string(v1alpha1.HarnessClaude)
	harnessCodex    = string(v1alpha1.HarnessCodex)
	harnessOpencode = string(v1alpha1.HarnessOpencode)
)

// wiringInput is what a harness is wired with.
type wiringInput struct {
	persona, namespace string
	settings           launchSettings
	systemPrompt       string
	personaMD          string
	// skipDocs turns off the harness's own reading of the repository's
	// instruction files.
	skipDocs bool
	// env is the launch's environment, which a variable set for the
	// harness may extend.
	env map[string]string
	// place writes a file for the harness to read and returns its path.
	place func(name, content string) (string, error)
}

// wiring is how a harness is given the persona: options inserted into its
// command, variables set for it, and which of its options the command must
// not set itself.
type wiring struct {
	options []string
	env     map[string]string
	// owned are the options launch sets: flags (--model, -m) and, for
	// Codex, configuration keys given with -c.
	owned     []string
	ownedKeys []string
	passed    []passed
}

// passed is a text the harness is given, for the log.
type passed struct {
	what, content, as string
}

func (w *wiring) flag(owned string, options ...string) {
	w.owned = append(w.owned, owned)
	w.options = append(w.options, options...)
}

func (w *wiring) setEnv(k, v string) {
	if w.env == nil {
		w.env = map[string]string{}
	}
	w.env[k] = v
}

// conflict names an option among args that launch sets itself, or "".
// Arguments after "--" are the command's operands, never options.
func (w *wiring) conflict(args []string) string {
	for i, a := range args {
		if a == "--" {
			return ""
		}
		for _, f := range w.owned {
			if a == f || strings.HasPrefix(a, f+"=") || (len(f) == 2 && strings.HasPrefix(a, f) && !strings.HasPrefix(a, "--")) {
				return f
			}
		}
		var kv string
		switch {
		case (a == "-c" || a == "--config") && i+1 < len(args):
			kv = args[i+1]
		case strings.HasPrefix(a, "--config="):
			kv = strings.TrimPrefix(a, "--config=")
		case strings.HasPrefix(a, "-c") && len(a) > 2:
			kv = a[2:]
		default:
			continue
		}
		key, _, _ := strings.Cut(kv, "=")
		for _, k := range w.ownedKeys {
			if strings.TrimSpace(key) == k {
				return "-c " + k
			}
		}
	}
	return ""
}

// optionsIndex is where in command the options go: after opencode's run,
// whose options --variant is one of, else right after the executable
// (Codex takes -m and -c before its subcommand as after it).
func optionsIndex(harness string, command []string) int {
	if harness == harnessOpencode && len(command) > 1 && command[1] == "run" {
		return 2
	}
	return 1
}

// wireHarness wires the harness with the persona, as measured with each
// CLI (docs/agents.md, test/agents).
func wireHarness(harness string, in wiringInput) (*wiring, error) {
	switch harness {
	case harnessClaude:
		return wireClaude(in)
	case harnessCodex:
		return wireCodex(in)
	}
	return wireOpencode(in)
}

// wireClaude: Claude Code's -p takes the prompt from files. keep appends
// persona.md and the system prompt, in that order, to its own system prompt
// with --append-system-prompt-file (the option takes one file: the two are
// joined); replace puts persona.md in place of its own with
// --system-prompt-file and appends the system prompt. --agent is never
// needed: it too drops the built-in system prompt.
func wireClaude(in wiringInput) (*wiring, error) {
	w := &wiring{}
	if m := in.settings.model; m != "" {
		w.flag("--model", "--model", m)
		// Claude Code maps a model it calls legacy to its newest one; the
		// persona's model is the one asked for.
		if _, set := in.env["CLAUDE_CODE_DISABLE_LEGACY_MODEL_REMAP"]; !set {
			w.setEnv("CLAUDE_CODE_DISABLE_LEGACY_MODEL_REMAP", "1")
		}
	}
	if e := in.settings.effort; e != "" {
		w.flag("--effort", "--effort", e)
	}
	w.owned = append(w.owned, "--system-prompt", "--system-prompt-file", "--append-system-prompt", "--append-system-prompt-file", "--agent")
	file := func(option, what, name, content string) error {
		path, err := in.place(name, content)
		if err != nil {
			return err
		}
		w.options = append(w.options, option, path)
		w.passed = append(w.passed, passed{what, content, option})
		return nil
	}
	var err error
	switch {
	case in.settings.harnessPrompt == harnessPromptReplace && in.personaMD != "":
		err = file("--system-prompt-file", "persona.md", "persona.md", in.personaMD)
		if err == nil {
			err = file("--append-system-prompt-file", "the system prompt", "system-prompt.md", in.systemPrompt)
		}
	case in.settings.harnessPrompt == harnessPromptReplace:
		err = file("--system-prompt-file", "the system prompt", "system-prompt.md", in.systemPrompt)
	case in.personaMD != "":
		err = file("--append-system-prompt-file", "persona.md and the system prompt", "persona-and-system-prompt.md", in.personaMD+"\n"+in.systemPrompt)
	default:
		err = file("--append-system-prompt-file", "the system prompt", "system-prompt.md", in.systemPrompt)
	}
	if err != nil {
		return nil, err
	}
	if in.skipDocs {
		w.setEnv("CLAUDE_CODE_DISABLE_CLAUDE_MDS", "1")
	}
	return w, nil
}

// wireCodex: Codex takes configuration with -c key=TOML. keep adds the
// prompt as developer_instructions (text: Codex has no file for it) after
// its built-in instructions; replace puts the file in their place with
// model_instructions_file.
func wireCodex(in wiringInput) (*wiring, error) {
	w := &wiring{}
	config := func(key, value string) error {
		arg, err := tomlSetting(key, value)
		if err != nil {
			return err
		}
		w.ownedKeys = append(w.ownedKeys, key)
		w.options = append(w.options, "-c", arg)
		return nil
	}
	if m := in.settings.model; m != "" {
		w.flag("-m", "-m", m)
		w.owned = append(w.owned, "--model")
		w.ownedKeys = append(w.ownedKeys, "model")
	}
	if e := in.settings.effort; e != "" {
		if err := config("model_reasoning_effort", e); err != nil {
			return nil, err
		}
	}
	w.ownedKeys = append(w.ownedKeys, "developer_instructions", "model_instructions_file", "experimental_instructions_file", "base_instructions")
	if in.settings.harnessPrompt == harnessPromptReplace {
		path, err := in.place("system-prompt.md", in.systemPrompt)
		if err != nil {
			return nil, err
		}
		if err := config("model_instructions_file", path); err != nil {
			return nil, err
		}
		w.passed = append(w.passed, passed{"the system prompt", in.systemPrompt, "model_instructions_file"})
	} else {
		if err := config("developer_instructions", in.systemPrompt); err != nil {
			return nil, err
		}
		if len(w.options[len(w.options)-1]) > maxArgBytes {
			return nil, fmt.Errorf("the system prompt is %d bytes: Codex takes developer_instructions (harnessPrompt: keep) only as text on its command line, "+
				"which holds at most %d bytes an argument; shorten the prompt, or use harnessPrompt: replace, which passes a file", len(in.systemPrompt), maxArgBytes)
		}
		w.passed = append(w.passed, passed{"the system prompt", in.systemPrompt, "developer_instructions"})
	}
	if in.skipDocs {
		w.ownedKeys = append(w.ownedKeys, "project_doc_max_bytes")
		w.options = append(w.options, "-c", "project_doc_max_bytes=0")
	}
	return w, nil
}

// maxArgBytes is Linux's limit on one argument or variable (MAX_ARG_STRLEN).
const maxArgBytes = 128 << 10

// tomlSetting is key=value with value a TOML string, as Codex's -c takes it:
// quoted, so that no text is read as another TOML type.
func tomlSetting(key, value string) (string, error) {
	raw, err := toml.Marshal(map[string]string{key: value})
	if err != nil {
		return "", fmt.Errorf("quote %s for Codex: %w", key, err)
	}
	quoted, ok := strings.CutPrefix(strings.TrimSuffix(string(raw), "\n"), key+" = ")
	if !ok {
		return "", fmt.Errorf("quote %s for Codex: unexpected TOML %q", key, raw)
	}
	return key + "=" + quoted, nil
}

// opencodeConfigContent is the variable whose JSON opencode merges over its
// configuration files.
const opencodeConfigContent = "OPENCODE_CONFIG_CONTENT"

// wireOpencode: opencode takes the prompt from its configuration, which
// launch adds to OPENCODE_CONFIG_CONTENT. keep lists the file in
// instructions, which opencode adds after its own prompt; replace makes it
// the prompt of an agent of the persona's, which takes the place of
// opencode's own, and runs that agent.
func wireOpencode(in wiringInput) (*wiring, error) {
	w := &wiring{}
	if m := in.settings.model; m != "" {
		if !strings.Contains(m, "/") {
			return nil, fmt.Errorf("opencode takes a model as provider/model, and the persona's model %q names no provider: write it as opencode's --model takes it, e.g. openai/%s", m, m)
		}
		w.flag("-m", "--model", m)
		w.owned = append(w.owned, "--model")
	}
	if e := in.settings.effort; e != "" {
		w.flag("--variant", "--variant", e)
	}
	config := map[string]any{}
	if raw := in.env[opencodeConfigContent]; raw != "" {
		if err := json.Unmarshal([]byte(raw), &config); err != nil {
			return nil, fmt.Errorf("%s is not a JSON object, which launch adds to: %v", opencodeConfigContent, err)
		}
	}
	path, err := in.place("system-prompt.md", in.systemPrompt)
	if err != nil {
		return nil, err
	}
	if in.settings.harnessPrompt == harnessPromptReplace {
		agent := "persona-" + in.persona
		agents, _ := config["agent"].(map[string]any)
		if agents == nil {
			agents = map[string]any{}
		}
		if _, taken := agents[agent]; taken {
			return nil, fmt.Errorf("%s defines the agent %q, which launch defines for the persona", opencodeConfigContent, agent)
		}
		agents[agent] = map[string]any{
			"description": fmt.Sprintf("The persona %s/%s, rendered by persona-operator", in.namespace, in.persona),
			"mode":        "primary",
			"prompt":      "{file:" + path + "}",
		}
		config["agent"] = agents
		w.flag("--agent", "--agent", agent)
		w.passed = append(w.passed, passed{"the system prompt", in.systemPrompt, "the prompt of the agent " + agent})
	} else {
		instructions, _ := config["instructions"].([]any)
		config["instructions"] = append(instructions, path)
		w.passed = append(w.passed, passed{"the system prompt", in.systemPrompt, "instructions"})
	}
	raw, err := json.Marshal(config)
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", opencodeConfigContent, err)
	}
	w.setEnv(opencodeConfigContent, string(raw))
	if in.skipDocs {
		// opencode has no narrower switch: this also leaves out the
		// repository's opencode.json and .opencode/.
		w.setEnv("OPENCODE_DISABLE_PROJECT_CONFIG", "1")
	}
	return w, nil
}
