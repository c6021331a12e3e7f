// Package rollouts runs Argo Rollouts' own controller against a local
// control plane, so that tests see AnalysisRuns run as a cluster with Argo
// Rollouts installed runs them, never a fake. hack/argo-rollouts.sh builds
// the controller and copies its CRDs and ClusterRole into a directory that
// make test-rollouts passes in ARGO_ROLLOUTS_DIR.
package rollouts

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/persona-operator/persona-operator/test/controlplane"
)

const (
	// DirEnv names the directory hack/argo-rollouts.sh prints.
	DirEnv = "ARGO_ROLLOUTS_DIR"
	// RequireEnv makes a missing DirEnv fail a test instead of skipping it,
	// as make test-rollouts sets it.
	RequireEnv = "PERSONA_REQUIRE_ROLLOUTS"
	// ControllerUser is the user the controller runs as: it has Argo
	// Rollouts' own ClusterRole and nothing else, as in Argo's install.
	ControllerUser = "argo-rollouts-controller"
)

const (
	binaryName   = "rollouts-controller"
	readyTimeout = 2 * time.Minute
	stopTimeout  = 15 * time.Second
	// logTail is how much of the controller's log a failed test prints.
	logTail = 20 << 10
)

// readyLine is what the controller logs once its informers have synced and
// its AnalysisRun workers run ("Started controller" can come before them).
var readyLine = regexp.MustCompile(`msg="Started [0-9]+ analysis workers"`)

// Require returns the directory of DirEnv. Without it, it skips t, or fails
// it where RequireEnv is set.
func Require(t controlplane.EnvtestT) string {
	t.Helper()
	if dir := os.Getenv(DirEnv); dir != "" {
		return dir
	}
	if os.Getenv(RequireEnv) != "" {
		t.Fatal(DirEnv + " is not set")
	}
	t.Skip(DirEnv + " is not set: run `make test-rollouts`, which builds Argo Rollouts' controller with hack/argo-rollouts.sh")
	return ""
}

// TB is what Start needs of a test: a *testing.T, or Ginkgo's GinkgoT().
type TB interface {
	Helper()
	Cleanup(func())
	TempDir() string
	Failed() bool
	Logf(format string, args ...any)
}

// Controller is Argo Rollouts' controller running against a Plane.
type Controller struct {
	// LogPath is the file that receives the controller's output.
	LogPath string
	cmd     *exec.Cmd
	// exited is closed once the process has exited, with waitErr how.
	exited  chan struct{}
	waitErr error
}

// Start installs Argo Rollouts' CRDs and ClusterRole from dir (see Require)
// into plane, starts the controller as ControllerUser with the flags extra
// added, and waits until it runs its workers. The test's cleanup stops it,
// and prints the tail of its log when the test failed.
//
// It runs the whole controller, as Argo's install does, with leader
// election off: one instance, and no lease in the namespace argo-rollouts
// to wait for.
func Start(t TB, plane *controlplane.Plane, dir string, extra ...string) (*Controller, error) {
	t.Helper()
	start := time.Now()
	if err := InstallCRDs(plane.Config, dir); err != nil {
		return nil, err
	}
	installed := time.Now()
	// The controller needs no more than Argo's install gives it.
	if err := plane.GrantClusterRole(filepath.Join(dir, "clusterrole.yaml"), ControllerUser); err != nil {
		return nil, err
	}
	kubeconfig, err := plane.Kubeconfig(ControllerUser)
	if err != nil {
		return nil, err
	}
	// The controller serves metrics and healthz on 0.0.0.0, at fixed
	// defaults unless told: free ports keep parallel tests and a developer's
	// own services out of its way.
	metricsPort, err := controlplane.FreePort()
	if err != nil {
		return nil, err
	}
	healthzPort, err := controlplane.FreePort()
	if err != nil {
		return nil, err
	}
	args := append([]string{
		"--kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--metricsPort=" + strconv.Itoa(metricsPort),
		"--healthzPort=" + strconv.Itoa(healthzPort),
	}, extra...)

	c := &Controller{LogPath: filepath.Join(t.TempDir(), binaryName+".log"), exited: make(chan struct{})}
	logFile, err := os.Create(c.LogPath)
	if err != nil {
		return nil, err
	}
	c.cmd = exec.Command(filepath.Join(dir, binaryName), args...)
	c.cmd.Stdout, c.cmd.Stderr = logFile, logFile
	// It would download the plugins of a ConfigMap argo-rollouts-config into
	// ./plugin-bin: never the test's package directory.
	c.cmd.Dir = filepath.Dir(c.LogPath)
	dieWithParent(c.cmd)
	if err := c.cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("start %s: %w", binaryName, err)
	}
	go func() {
		c.waitErr = c.cmd.Wait()
		_ = logFile.Close()
		close(c.exited)
	}()
	t.Cleanup(func() {
		c.Stop()
		if t.Failed() {
			t.Logf("%s log (%s), last %d KB:\n%s", binaryName, c.LogPath, logTail>>10, c.Tail(logTail))
		}
	})
	if err := c.waitReady(); err != nil {
		return nil, err
	}
	t.Logf("%s: CRDs installed in %s, ready %s later", binaryName, installed.Sub(start).Round(time.Millisecond), time.Since(installed).Round(time.Millisecond))
	return c, nil
}

// waitReady waits until the controller logs readyLine.
func (c *Controller) waitReady() error {
	deadline := time.After(readyTimeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if readyLine.MatchString(c.Log()) {
			return nil
		}
		select {
		case <-c.exited:
			return fmt.Errorf("%s exited before it was ready (%v):\n%s", binaryName, c.waitErr, c.Tail(logTail))
		case <-deadline:
			return fmt.Errorf("%s did not log %s within %s:\n%s", binaryName, readyLine, readyTimeout, c.Tail(logTail))
		case <-tick.C:
		}
	}
}

// Stop stops the controller gracefully, or kills it after stopTimeout.
func (c *Controller) Stop() {
	select {
	case <-c.exited:
		return
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(stopTimeout):
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
}

// Log is the controller's output so far.
func (c *Controller) Log() string {
	raw, err := os.ReadFile(c.LogPath)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Sprintf("(read %s: %v)", c.LogPath, err)
	}
	return string(raw)
}

// Tail is the last n bytes of the controller's output.
func (c *Controller) Tail(n int) string {
	s := c.Log()
	if len(s) > n {
		s = s[len(s)-n:]
	}
	return s
}

// InstallCRDs installs the CRDs of dir/crds through cfg and waits until the
// API server serves them.
func InstallCRDs(cfg *rest.Config, dir string) error {
	_, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{
		Paths:              []string{filepath.Join(dir, "crds")},
		ErrorIfPathMissing: true,
	})
	if err != nil {
		return fmt.Errorf("install Argo Rollouts' CRDs from %s: %w", dir, err)
	}
	return nil
}
