package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/persona-operator/persona-operator/test/controlplane"
)

// repositoryRoot is the working directory, which must be the repository's
// root: the control plane installs the CRDs from there.
func repositoryRoot() (string, error) {
	root, err := filepath.Abs(".")
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(root, "config", "crd", "bases")); err != nil {
		return "", fmt.Errorf("run from the repository's root (make scale, or go run ./test/scale): %w", err)
	}
	return root, nil
}

// buildManager builds the manager binary into a new directory, dir, which
// is also where the manager's log goes.
func buildManager(ctx context.Context) (dir, binary string, err error) {
	if dir, err = os.MkdirTemp("", "persona-scale-"); err != nil {
		return "", "", err
	}
	binary = filepath.Join(dir, "manager")
	step("building the manager")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", binary, "./cmd").CombinedOutput(); err != nil {
		os.Remove(binary)
		return "", "", fmt.Errorf("build the manager: %v\n%s", err, out)
	}
	return dir, binary, nil
}

// startControlPlane starts kube-apiserver and etcd.
func startControlPlane(root string) (*controlplane.Plane, error) {
	step("starting kube-apiserver and etcd")
	// envtest gives them 20s by default, too little on a busy machine; its
	// failed attempts can leave a kube-apiserver behind.
	if os.Getenv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT") == "" {
		_ = os.Setenv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT", "2m")
	}
	ctrllog.SetLogger(zap.New(zap.WriteTo(io.Discard))) // envtest's errors are returned
	return controlplane.Start(root)
}

// newHarness finds the control plane's processes, whose CPU time the
// phases account, and connects the harness's client to it.
func newHarness(ctx context.Context, o options, r *report, plane *controlplane.Plane) (*harness, error) {
	h := &harness{o: o, r: r, procs: findChildren()}
	if h.procs.apiserver == 0 || h.procs.etcd == 0 {
		step("warning: kube-apiserver or etcd is not a child of this process; their CPU time reads as 0")
	}
	h.cfg = rest.CopyConfig(plane.Config)
	h.cfg.QPS, h.cfg.Burst = harnessQPS, harnessBurst
	h.cfg.DisableCompression = true // as the manager: no gzip of the watches that time the phases
	var err error
	if h.c, err = client.NewWithWatch(h.cfg, client.Options{Scheme: controlplane.Scheme}); err != nil {
		return nil, err
	}
	if err := h.createNamespace(ctx, webhookNamespace, nil); err != nil {
		return nil, err
	}
	return h, nil
}

// newManager prepares the manager that every round starts and stops: its
// metrics on a free port, with -profile its pprof endpoints on another,
// then -manager-flags.
func (h *harness) newManager(plane *controlplane.Plane, binary string, log io.Writer) error {
	port, err := controlplane.FreePort()
	if err != nil {
		return err
	}
	h.metricsURL = fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
	flags := []string{fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", port), "--metrics-secure=false", "--leader-elect=false"}
	if h.o.profileDir != "" {
		if err := os.MkdirAll(h.o.profileDir, 0o755); err != nil {
			return err
		}
		pprofPort, err := controlplane.FreePort()
		if err != nil {
			return err
		}
		flags = append(flags, fmt.Sprintf("--pprof-bind-address=127.0.0.1:%d", pprofPort))
		h.prof = &profiler{dir: h.o.profileDir, seconds: h.o.profileSeconds, apiserver: h.cfg, manager: fmt.Sprintf("http://127.0.0.1:%d", pprofPort)}
	}
	flags = append(flags, h.o.managerFlags...)
	h.r.managerFlags = flags
	h.manager, err = plane.NewManager(binary, log, flags...)
	return err
}
