package agents

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/persona-operator/persona-operator/internal/render"
	"github.com/persona-operator/persona-operator/test/agents/modelstub"
	"github.com/persona-operator/persona-operator/test/fixtures"
)

// harness is how the suite runs one CLI against the model stub and reads
// what reached the model.
type harness struct {
	name string
	// variant is the Persona's variant for the harness, "" for its own
	// prompt; prompt, personaModel and effort are what the operator
	// renders and sets for it, model the name the API request carries.
	variant, prompt, personaModel, model, effort string
	// builtin is a sentence of the harness's own instructions for the
	// model: present with harnessPrompt keep, gone with replace.
	builtin string
	// promptLast is whether the persona's text ends the harness's
	// system-level instructions, as Claude Code's system prompt.
	promptLast bool
	// configure writes the configuration that points the CLI at the stub,
	// offline, into home and returns the variables it needs.
	configure func(t *testing.T, home, stubURL string) map[string]string
	// read extracts what reached the model from a request's body.
	read func(body []byte) (received, error)
}

// received is what one request gave the model.
type received struct {
	model, effort string
	// instructions are the request's system-level texts in order: system
	// blocks, developer messages, system messages.
	instructions []string
}

var harnesses = []harness{
	{
		name: "claude", variant: "claude", prompt: wantClaudePrompt, personaModel: "claude-sonnet-4-6", model: "claude-sonnet-4-6", effort: "low",
		builtin:    "Use the instructions below and the tools available to you to assist the user.",
		promptLast: true,
		configure: func(t *testing.T, home, stubURL string) map[string]string {
			return map[string]string{
				"ANTHROPIC_BASE_URL": stubURL,
				"ANTHROPIC_API_KEY":  "sk-stub",
				// Claude Code's switches for its own traffic: updates,
				// telemetry, error reports.
				"DISABLE_AUTOUPDATER":                      "1",
				"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
				"DISABLE_TELEMETRY":                        "1",
				"DISABLE_ERROR_REPORTING":                  "1",
			}
		},
		read: func(body []byte) (received, error) {
			var req struct {
				Model  string `json:"model"`
				System []struct {
					Text string `json:"text"`
				} `json:"system"`
				OutputConfig struct {
					Effort string `json:"effort"`
				} `json:"output_config"`
			}
			if err := json.Unmarshal(body, &req); err != nil {
				return received{}, err
			}
			r := received{model: req.Model, effort: req.OutputConfig.Effort}
			for _, s := range req.System {
				r.instructions = append(r.instructions, s.Text)
			}
			return r, nil
		},
	},
	{
		name: "codex", prompt: wantCodexPrompt, personaModel: "gpt-5.5", model: "gpt-5.5", effort: "high",
		builtin: "You are Codex, a coding agent based on GPT-5.",
		configure: func(t *testing.T, home, stubURL string) map[string]string {
			// A provider of the Responses API at the stub; Codex's own
			// traffic (update checks, analytics, plugin sync) off.
			fixtures.WriteFile(t, home, ".codex/config.toml", `model_provider = "stub"
check_for_update_on_startup = false

[analytics]
enabled = false

[feedback]
enabled = false

[features]
plugins = false
remote_plugin = false
in_app_updates = false

[model_providers.stub]
name = "stub"
base_url = "`+stubURL+`/v1"
wire_api = "responses"
`)
			return nil
		},
		read: func(body []byte) (received, error) {
			req, err := modelstub.ReadResponses(body)
			if err != nil {
				return received{}, err
			}
			return received{model: req.Model, effort: req.Effort, instructions: req.Instructions}, nil
		},
	},
	{
		name: "opencode", variant: "opencode", prompt: wantCodexPrompt, personaModel: "stub/gpt-5.5", model: "gpt-5.5", effort: "low",
		builtin: "You are OpenCode, You and the user share the same workspace",
		configure: func(t *testing.T, home, stubURL string) map[string]string {
			// An OpenAI-compatible provider at the stub whose model has
			// the variants --variant names, as models.dev gives a known
			// provider's models.
			config := fixtures.WriteFile(t, home, "opencode-stub.json", `{
  "$schema": "https://opencode.ai/config.json",
  "autoupdate": false,
  "share": "disabled",
  "snapshot": false,
  "agent": {"title": {"disable": true}},
  "provider": {
    "stub": {
      "npm": "@ai-sdk/openai-compatible",
      "name": "stub",
      "options": {"baseURL": "`+stubURL+`/v1", "apiKey": "sk-stub"},
      "models": {"gpt-5.5": {"name": "gpt-5.5", "variants": {
        "low": {"reasoningEffort": "low"}, "high": {"reasoningEffort": "high"}}}}
    }
  }
}
`)
			// opencode installs @opencode-ai/plugin into its configuration
			// directory unless node_modules and the lock file list it.
			fixtures.WriteFile(t, home, ".config/opencode/package-lock.json", `{"packages": {"": {"dependencies": {"@opencode-ai/plugin": "*"}}}}`)
			if err := os.MkdirAll(filepath.Join(home, ".config/opencode/node_modules"), 0o755); err != nil {
				t.Fatal(err)
			}
			return map[string]string{
				"OPENCODE_CONFIG":                           config,
				"OPENCODE_DISABLE_AUTOUPDATE":               "1",
				"OPENCODE_DISABLE_MODELS_FETCH":             "1",
				"OPENCODE_DISABLE_LSP_DOWNLOAD":             "1",
				"OPENCODE_DISABLE_SHARE":                    "1",
				"OPENCODE_DISABLE_DEFAULT_PLUGINS":          "1",
				"OPENCODE_EXPERIMENTAL_DISABLE_FILEWATCHER": "1",
			}
		},
		read: func(body []byte) (received, error) {
			var req struct {
				Model           string `json:"model"`
				ReasoningEffort string `json:"reasoning_effort"`
				Messages        []struct {
					Role    string          `json:"role"`
					Content json.RawMessage `json:"content"`
				} `json:"messages"`
			}
			if err := json.Unmarshal(body, &req); err != nil {
				return received{}, err
			}
			r := received{model: req.Model, effort: req.ReasoningEffort}
			for _, m := range req.Messages {
				if m.Role != "system" {
					continue
				}
				var text string
				if err := json.Unmarshal(m.Content, &text); err != nil {
					return received{}, fmt.Errorf("a system message's content is not a string: %s", m.Content)
				}
				r.instructions = append(r.instructions, text)
			}
			return r, nil
		},
	},
}

// promptKey is the ConfigMap key of the harness's prompt, which the
// webhook names in PERSONA_PROMPT_FILE (the variant annotation).
func (h *harness) promptKey() string {
	if h.variant == "" {
		return render.SystemPromptKey
	}
	return render.VariantKey(h.variant)
}

// personaEnv are the variables the webhook sets in the agent container.
func (h *harness) personaEnv(mount string) map[string]string {
	return map[string]string{
		"PERSONA_NAME":             "reviewer",
		"PERSONA_PROMPT_FILE":      filepath.Join(mount, h.promptKey()),
		"PERSONA_BUNDLE_FILE":      filepath.Join(mount, render.BundleKey),
		"PERSONA_REVISION":         "3",
		"PERSONA_HARNESS":          h.name,
		"PERSONA_MODEL":            h.personaModel,
		"PERSONA_REASONING_EFFORT": h.effort,
	}
}

// expectation is what a run must give the model.
type expectation struct {
	// parts reach the model verbatim, in this order (less the trailing
	// newline, which a harness may trim).
	parts []string
	// builtin is whether the harness's own instructions stay.
	builtin bool
	// once are markers that reach the model exactly once.
	once []string
	// absent are markers that must not reach it.
	absent []string
}

// check returns what is wrong with what reached the model; received is the
// request that carried the task, body its whole text.
func (h *harness) check(r received, body string, want expectation) []string {
	var problems []string
	if r.model != h.model {
		problems = append(problems, fmt.Sprintf("model %q, want %q", r.model, h.model))
	}
	if r.effort != h.effort {
		problems = append(problems, fmt.Sprintf("reasoning effort %q, want %q", r.effort, h.effort))
	}
	all := strings.Join(r.instructions, "\n\n")
	at := 0
	for _, part := range want.parts {
		part = strings.TrimSuffix(part, "\n")
		i := strings.Index(all[at:], part)
		if i < 0 {
			if strings.Contains(all, part) {
				problems = append(problems, fmt.Sprintf("%.40q… reaches the model out of order", part))
			} else {
				problems = append(problems, fmt.Sprintf("%.40q… does not reach the model verbatim", part))
			}
			continue
		}
		at += i + len(part)
	}
	if end := strings.TrimSuffix(want.parts[len(want.parts)-1], "\n"); h.promptLast && !strings.HasSuffix(strings.TrimRight(all, "\n"), end) {
		problems = append(problems, "the persona's text does not end the system prompt")
	}
	if i, j := strings.LastIndex(all, lastGuardrail), strings.LastIndex(all, finalGuardrail); j < 0 || i > j {
		problems = append(problems, "the final guardrail is not after the last one")
	}
	if got := strings.Contains(all, h.builtin); got != want.builtin {
		problems = append(problems, fmt.Sprintf("the harness's own instructions (%.40q…) present: %v, want %v", h.builtin, got, want.builtin))
	}
	for _, m := range want.once {
		if n := strings.Count(body, m); n != 1 {
			problems = append(problems, fmt.Sprintf("%s reaches the model %d times, want once", m, n))
		}
	}
	for _, m := range want.absent {
		if strings.Contains(body, m) {
			problems = append(problems, fmt.Sprintf("%s reaches the model", m))
		}
	}
	return problems
}

// builtinBytes is the size of the instructions the harness sent besides the
// persona's, for the log: what keep keeps and replace drops.
func builtinBytes(r received, parts []string) int {
	n := 0
	for _, s := range r.instructions {
		n += len(s)
	}
	for _, p := range parts {
		n -= len(strings.TrimSuffix(p, "\n"))
	}
	return n
}

// mainRequest is the last request of the stub that carried the task.
func mainRequest(reqs []modelstub.Request) (modelstub.Request, bool) {
	for i := len(reqs) - 1; i >= 0; i-- {
		if strings.Contains(string(reqs[i].Body), strings.SplitN(task, ":", 2)[0]) {
			return reqs[i], true
		}
	}
	return modelstub.Request{}, false
}
