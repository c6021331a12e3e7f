// Command sessions is the entrypoint of the e2e suite's Codex image: an agent
// that runs one session after another, each a new process of its command (as
// a runner starts the harness for each task, with `kubectl-persona launch`,
// which reads the persona's files afresh), with a pause between them. It
// logs one JSON line per session on standard output; the command's own
// output goes to standard error.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Session is one line of the log.
type Session struct {
	Session int       `json:"session"`
	Started time.Time `json:"started"`
	Took    string    `json:"took"`
	// Exit is the command's exit status, -1 when it did not exit by itself.
	Exit  int    `json:"exit"`
	Error string `json:"error,omitempty"`
}

func main() {
	pause := flag.Duration("pause", time.Second, "the time between the end of a session and the start of the next")
	timeout := flag.Duration("timeout", time.Minute, "how long a session may run before it is killed")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: sessions [--pause D] [--timeout D] -- COMMAND [ARG...]")
		flag.PrintDefaults()
	}
	flag.Parse()
	command := flag.Args()
	if len(command) == 0 {
		flag.Usage()
		os.Exit(2)
	}
	enc := json.NewEncoder(os.Stdout)
	for n := 1; ; n++ {
		_ = enc.Encode(run(n, command, *timeout))
		time.Sleep(*pause)
	}
}

func run(n int, command []string, timeout time.Duration) Session {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, command[0], command[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	// The harness's own children (Codex's sandbox, its tools) go with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	s := Session{Session: n, Started: time.Now()}
	err := cmd.Run()
	s.Took = time.Since(s.Started).Round(time.Millisecond).String()
	s.Exit = -1
	if cmd.ProcessState != nil {
		s.Exit = cmd.ProcessState.ExitCode()
	}
	var exit *exec.ExitError
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		s.Error = fmt.Sprintf("killed after %s", timeout)
	case err != nil && !errors.As(err, &exit):
		s.Error = err.Error()
	}
	return s
}
