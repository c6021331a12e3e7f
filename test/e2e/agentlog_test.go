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

// agentTurns reads a container's log from the kubelet's podLogsDir
// (<namespace>_<pod>_<uid>/<container>/<restart>.log, in the CRI format
// "<RFC3339Nano> stdout F <line>"): the kubelet's own log API is not
// reachable on a node without an address.
func (n *node) agentTurns(namespace, pod, container string) ([]turn, error) {
	files, _ := filepath.Glob(filepath.Join(n.podLogs, namespace+"_"+pod+"_*", container, "*.log"))
	if len(files) == 0 {
		return nil, fmt.Errorf("no log of container %s of pod %s/%s yet", container, namespace, pod)
	}
	sort.Strings(files)
	var turns []turn
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		s := bufio.NewScanner(f)
		s.Buffer(make([]byte, 64<<10), 1<<20)
		for s.Scan() {
			parts := strings.SplitN(s.Text(), " ", 4)
			if len(parts) < 4 || parts[1] != "stdout" || parts[2] != "F" {
				continue
			}
			var t turn
			at, err := time.Parse(time.RFC3339Nano, parts[0])
			if err != nil || json.Unmarshal([]byte(parts[3]), &t) != nil {
				continue
			}
			t.At = at
			turns = append(turns, t)
		}
		_ = f.Close()
	}
	return turns, nil
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
