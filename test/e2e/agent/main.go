// Command agent stands in for a coding agent in the e2e suite. On every turn
// it does what a real agent does with a persona's mounted ConfigMap: it reads
// system-prompt.md afresh, and renders bundle.json for the turn with
// kubectl-persona. It logs one JSON line per turn with the SHA-256 of both,
// so the suite can tell from the container's log which render the pod saw,
// and when. With --once it is an agent that reads its prompt only at start,
// which only a restart brings a new prompt to. In an injected pod it reads
// the file the webhook names in PERSONA_PROMPT_FILE (--prompt-env), and logs
// PERSONA_REVISION.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
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
	once := flag.Bool("once", false, "read the prompt once, at start, and keep it for every turn")
	refuse := flag.String("refuse", "", "refuse a prompt that holds this text: an agent whose new prompt breaks it")
	readyAddr := flag.String("ready-addr", "", "serve GET /readyz on this address: 200, or 503 while the agent refuses its prompt")
	promptEnv := flag.String("prompt-env", "", "an environment variable whose value is the system prompt to read, in place of --prompt")
	flag.Parse()
	if *promptEnv != "" {
		*prompt = os.Getenv(*promptEnv)
	}

	// It keeps running when it refuses its prompt: a container that exits
	// would be Ready for a moment at each restart, which a Deployment counts
	// as progress.
	var refused atomic.Bool
	if *readyAddr != "" {
		http.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
			if refused.Load() {
				http.Error(w, "the prompt is refused", http.StatusServiceUnavailable)
			}
		})
		go func() { log.Fatal(http.ListenAndServe(*readyAddr, nil)) }() //nolint:gosec // a test agent's probe
	}
	enc := json.NewEncoder(os.Stdout)
	read := func() ([]byte, error) {
		if *prompt == "" {
			return nil, fmt.Errorf("$%s is empty", *promptEnv)
		}
		return os.ReadFile(*prompt)
	}
	raw, readErr := read()
	for n := 1; ; n++ {
		t := Turn{Turn: n, Revision: os.Getenv("PERSONA_REVISION")}
		var errs []string
		if !*once && n > 1 {
			raw, readErr = read()
		}
		if readErr != nil {
			errs = append(errs, readErr.Error())
		} else {
			t.Prompt = digest(raw)
		}
		refused.Store(*refuse != "" && readErr == nil && strings.Contains(string(raw), *refuse))
		if refused.Load() {
			errs = append(errs, fmt.Sprintf("the prompt holds %q: refused", *refuse))
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
