package controlplane

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
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
	// Env is added to the manager's environment, e.g. GOMEMLIMIT.
	Env []string
	// ManageCertificate runs the manager without --webhook-cert-path, so
	// that it makes its own certificate in its Secret and injects the CA.
	ManageCertificate bool
	cmd               *exec.Cmd
	// done is closed when the process has exited, with its status in
	// exitErr, so that Start and Stop may both wait for it.
	done    chan struct{}
	exitErr error
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
		case <-m.done:
			return fmt.Errorf("the manager exited before serving its webhook: %v", m.exitErr)
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
	if len(m.Env) > 0 {
		m.cmd.Env = append(os.Environ(), m.Env...)
	}
	if err := m.cmd.Start(); err != nil {
		return fmt.Errorf("start the manager: %w", err)
	}
	m.done = make(chan struct{})
	go func() { m.exitErr = m.cmd.Wait(); close(m.done) }()
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
func (m *Manager) exited() error {
	<-m.done
	return m.exitErr
}

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

// FreePort is a free local TCP port for a server a test starts later, e.g.
// the manager's webhook or metrics. It lies below the kernel's ephemeral
// range: a port the kernel hands out (to any outgoing connection, or to a
// listener on port 0) could be taken between this check and the server's
// bind, and a busy test run makes thousands of connections.
func FreePort() (int, error) {
	low := ephemeralPortsFrom()
	for range 200 {
		port := testPortsFrom + rand.IntN(low-testPortsFrom)
		l, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(port)))
		if err != nil {
			continue // in use
		}
		_ = l.Close()
		return port, nil
	}
	return 0, fmt.Errorf("no free port in [%d, %d)", testPortsFrom, low)
}

// testPortsFrom is the first port FreePort chooses, above the well-known and
// most registered services' ports.
const testPortsFrom = 10000

// ephemeralPortsFrom is the first port of the kernel's ephemeral range,
// Linux's default when it cannot be read.
func ephemeralPortsFrom() int {
	const linuxDefault = 32768
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return linuxDefault
	}
	fields := strings.Fields(string(data))
	if len(fields) != 2 {
		return linuxDefault
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil || low <= testPortsFrom+1000 {
		return linuxDefault
	}
	return low
}
