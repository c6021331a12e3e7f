package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// turn is one line of test/e2e/agent's log: what the agent read in a turn.
type turn struct {
	// At is when the container wrote the line (the runtime's timestamp).
	At     time.Time
	Turn   int    `json:"turn"`
	Prompt string `json:"prompt"`
	Render string `json:"render"`
	// Revision is the PERSONA_REVISION the container has.
	Revision string `json:"revision"`
	Error    string `json:"error"`
}

// agentTurns reads a container's log: the turns test/e2e/agent logged.
func (n *node) agentTurns(namespace, pod, container string) ([]turn, error) {
	var turns []turn
	err := n.stdoutLines(namespace+"_"+pod+"_*", container, func(at time.Time, line []byte) {
		var t turn
		if json.Unmarshal(line, &t) == nil {
			t.At = at
			turns = append(turns, t)
		}
	})
	return turns, err
}

// session is one line of test/e2e/sessions' log: one run of its command.
type session struct {
	Session int    `json:"session"`
	Took    string `json:"took"`
	Exit    int    `json:"exit"`
	Error   string `json:"error"`
}

// sessions reads the log of the containers named container in namespace:
// every session their agent ran, how long each took, and how many failed.
func (n *node) sessions(namespace, container string) ([]session, []time.Duration, int, error) {
	var all []session
	var took []time.Duration
	failed := 0
	err := n.stdoutLines(namespace+"_*", container, func(_ time.Time, line []byte) {
		var s session
		if json.Unmarshal(line, &s) != nil || s.Session == 0 {
			return
		}
		all = append(all, s)
		if d, err := time.ParseDuration(s.Took); err == nil {
			took = append(took, d)
		}
		if s.Exit != 0 || s.Error != "" {
			failed++
		}
	})
	return all, took, failed, err
}

// stdoutLines calls each with every line a container wrote on standard
// output, and when, from the kubelet's podLogsDir
// (<namespace>_<pod>_<uid>/<container>/<restart>.log, in the CRI format
// "<RFC3339Nano> stdout F <line>") of the pods matching the pattern
// podDirs: the kubelet's own log API is not reachable on a node without an
// address.
func (n *node) stdoutLines(podDirs, container string, each func(at time.Time, line []byte)) error {
	files, _ := filepath.Glob(filepath.Join(n.podLogs, podDirs, container, "*.log"))
	if len(files) == 0 {
		return fmt.Errorf("no log of container %s of pods %s yet", container, podDirs)
	}
	sort.Strings(files)
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		s := bufio.NewScanner(f)
		s.Buffer(make([]byte, 64<<10), 1<<20)
		for s.Scan() {
			parts := strings.SplitN(s.Text(), " ", 4)
			if len(parts) < 4 || parts[1] != "stdout" || parts[2] != "F" {
				continue
			}
			at, err := time.Parse(time.RFC3339Nano, parts[0])
			if err != nil {
				continue
			}
			each(at, []byte(parts[3]))
		}
		_ = f.Close()
	}
	return nil
}

// since is the turns at or after t.
func since(turns []turn, t time.Time) []turn {
	i := sort.Search(len(turns), func(i int) bool { return !turns[i].At.Before(t) })
	return turns[i:]
}

// containerLogTails is the end of the log of every container named
// container in namespace's pods, for a failure.
func (n *node) containerLogTails(namespace, container string, size int64) string {
	files, _ := filepath.Glob(filepath.Join(n.podLogs, namespace+"_*", container, "*.log"))
	sort.Strings(files)
	var b strings.Builder
	for _, f := range files {
		fmt.Fprintf(&b, "--- %s\n%s\n", strings.TrimPrefix(f, n.podLogs+"/"), fileTail(f, size))
	}
	return b.String()
}
