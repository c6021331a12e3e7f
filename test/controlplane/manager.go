package controlplane

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// Manager is the manager binary running against a Plane, serving its webhook.
type Manager struct {
	Binary     string
	Kubeconfig string
	plane      *Plane
	// Log receives the manager's output.
	Log   io.Writer
	Extra []string
	// ManageCertificate runs the manager without --webhook-cert-path, so
	// that it makes its own certificate in its Secret and injects the CA.
	ManageCertificate bool
	cmd               *exec.Cmd
	done              chan error
}

// ManagerUser is the user the manager runs as: it has the ClusterRole of
// config/rbac/role.yaml and nothing else, so tests prove that role suffices.
const ManagerUser = "persona-operator-manager"

// NewManager prepares the manager binary to run against p with the
// flags of docs/install.md#manager-flags, as ManagerUser.
func (p *Plane) NewManager(binary string, log io.Writer, extra ...string) (*Manager, error) {
	if err := p.grantManagerRole(); err != nil {
		return nil, err
	}
	kubeconfig, err := p.Kubeconfig(ManagerUser)
	if err != nil {
		return nil, err
	}
	return &Manager{Binary: binary, Kubeconfig: kubeconfig, plane: p, Log: log, Extra: extra}, nil
}

// Start starts the manager and waits until its webhook serves.
func (m *Manager) Start(ctx context.Context) error {
	if err := m.Launch(); err != nil {
		return err
	}
	hook := m.plane.Env.WebhookInstallOptions
	addr := net.JoinHostPort(hook.LocalServingHost, strconv.Itoa(hook.LocalServingPort))
	deadline := time.Now().Add(60 * time.Second)
	for {
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // a readiness probe of a local test server
		if err == nil {
			_ = conn.Close()
			return nil
		}
		select {
		case err := <-m.done:
			return fmt.Errorf("the manager exited before serving its webhook: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the manager's webhook did not serve on %s within 60s", addr)
		}
	}
}

// Launch starts the manager without waiting for its webhook, e.g. for a
// manager that makes its own certificate, which it serves only once mounted.
func (m *Manager) Launch() error {
	hook := m.plane.Env.WebhookInstallOptions
	args := []string{
		"--kubeconfig=" + m.Kubeconfig,
		"--webhook-port=" + strconv.Itoa(hook.LocalServingPort),
		"--health-probe-bind-address=0",
		"--metrics-bind-address=0",
		// Nothing routes to it but the API server, straight to its port.
		"--shutdown-delay=0s",
	}
	if !m.ManageCertificate {
		args = append(args, "--webhook-cert-path="+hook.LocalServingCertDir, "--webhook-cert-name=tls.crt", "--webhook-cert-key=tls.key")
	}
	args = append(args, m.Extra...)
	m.cmd = exec.Command(m.Binary, args...)
	m.cmd.Stdout, m.cmd.Stderr = m.Log, m.Log
	if err := m.cmd.Start(); err != nil {
		return fmt.Errorf("start the manager: %w", err)
	}
	m.done = make(chan error, 1)
	go func() { m.done <- m.cmd.Wait() }()
	return nil
}

// PID is the process id of the running manager, 0 when it is not running.
func (m *Manager) PID() int {
	if m.cmd == nil || m.cmd.Process == nil {
		return 0
	}
	return m.cmd.Process.Pid
}

// Kill stops the manager at once, as a crash or a node failure would.
func (m *Manager) Kill() error {
	if m.cmd == nil || m.cmd.Process == nil {
		return nil
	}
	_ = m.cmd.Process.Signal(syscall.SIGKILL)
	_ = m.exited() // killed: its exit status says only that
	m.cmd = nil
	return nil
}

// exited waits for the manager's process to exit, and is how it did.
func (m *Manager) exited() error { return <-m.done }

// Stop stops the manager gracefully.
func (m *Manager) Stop() error {
	if m.cmd == nil || m.cmd.Process == nil {
		return nil
	}
	_ = m.cmd.Process.Signal(os.Interrupt)
	stopped := make(chan struct{})
	go func() {
		_ = m.exited() // interrupted: its exit status says only that
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(15 * time.Second):
		_ = m.cmd.Process.Kill()
		<-stopped
	}
	m.cmd = nil
	return nil
}

// FreePort is a free local TCP port, e.g. for the manager's metrics.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
