// Command agent stands in for a coding agent in the e2e suite. On every turn
// it does what a real agent does with a persona's mounted ConfigMap: it reads
// system-prompt.md afresh, and renders bundle.json for the turn with
// kubectl-persona. It logs one JSON line per turn with the SHA-256 of both,
// so the suite can tell from the container's log which render the pod saw,
// and when. In an injected pod it reads the file the webhook names in
// PERSONA_PROMPT_FILE (--prompt-env), and logs PERSONA_REVISION.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Turn is one line of the agent's log.
type Turn struct {
	Turn int `json:"turn"`
	// Prompt is sha256:<hex> of system-prompt.md as read this turn.
	Prompt string `json:"prompt,omitempty"`
	// Render is sha256:<hex> of kubectl-persona's per-turn render.
	Render string `json:"render,omitempty"`
	// Revision is PERSONA_REVISION, which the webhook sets in a pod
	// injected with a snapshot.
	Revision string `json:"revision,omitempty"`
	Error    string `json:"error,omitempty"`
}

func main() {
	prompt := flag.String("prompt", "/etc/persona/system-prompt.md", "the system prompt to read each turn")
	bundle := flag.String("bundle", "/etc/persona/bundle.json", "the bundle to render each turn; empty: none")
	turnFile := flag.String("turn", "/turn.json", "the turn context to render the bundle with")
	cli := flag.String("cli", "/kubectl-persona", "kubectl-persona")
	every := flag.Duration("every", 500*time.Millisecond, "the time between turns")
	promptEnv := flag.String("prompt-env", "", "an environment variable whose value is the system prompt to read, in place of --prompt")
	flag.Parse()
	if *promptEnv != "" {
		*prompt = os.Getenv(*promptEnv)
	}

	enc := json.NewEncoder(os.Stdout)
	for n := 1; ; n++ {
		t := Turn{Turn: n, Revision: os.Getenv("PERSONA_REVISION")}
		var errs []string
		if *prompt == "" {
			errs = append(errs, fmt.Sprintf("$%s is empty", *promptEnv))
		} else if raw, err := os.ReadFile(*prompt); err != nil {
			errs = append(errs, err.Error())
		} else {
			t.Prompt = digest(raw)
		}
		if *bundle != "" {
			out, err := exec.Command(*cli, "render", "--bundle", *bundle, "--turn", *turnFile).Output()
			if err != nil {
				errs = append(errs, fmt.Sprintf("render: %v: %s", err, stderrOf(err)))
			} else {
				t.Render = digest(out)
			}
		}
		t.Error = strings.Join(errs, "; ")
		_ = enc.Encode(t)
		time.Sleep(*every)
	}
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return strings.TrimSpace(string(ee.Stderr))
	}
	return ""
}
