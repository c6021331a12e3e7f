package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// process is a program the suite started, appending its output to a log file.
// The suite ends every process it starts by its process id.
type process struct {
	name string
	log  string
	cmd  *exec.Cmd
	done chan struct{}
}

func startProcess(name, logPath, binary string, args ...string) (*process, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = f, f
	// Should the suite itself be killed before its cleanup runs, its
	// processes die with it rather than linger on a shared machine.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM, then SIGKILL after grace, and waits for the exit.
func (p *process) stop(grace time.Duration) {
	if p == nil || p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.kill()
	}
}

// kill ends the process at once, as a crash would.
func (p *process) kill() {
	if p == nil || p.exited() {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// tail is the end of the process's log, for failure messages.
func (p *process) tail() string {
	if p == nil {
		return ""
	}
	return fileTail(p.log, 4<<10)
}

func fileTail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > n {
		_, _ = f.Seek(-n, 2)
	}
	b := make([]byte, n)
	k, _ := f.Read(b)
	return string(b[:k])
}

// run runs a short command, bounded by timeout, and returns its output.
func run(timeout time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// waitFor polls cond every 100 ms until it is done or timeout passes. cond's
// error says why it is not done yet; the last one ends up in the timeout's
// message.
func waitFor(timeout time.Duration, what string, cond func() (bool, error)) error {
	return waitForEvery(100*time.Millisecond, timeout, what, cond)
}

func waitForEvery(interval, timeout time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		done, err := cond()
		if done {
			return nil
		}
		last = err
		if time.Now().After(deadline) {
			if last == nil {
				return fmt.Errorf("%s: not within %s", what, timeout)
			}
			return fmt.Errorf("%s: not within %s: %v", what, timeout, last)
		}
		time.Sleep(interval)
	}
}
