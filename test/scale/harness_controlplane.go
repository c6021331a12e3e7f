package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/persona-operator/persona-operator/test/controlplane"
	"github.com/persona-operator/persona-operator/test/scrape"
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

// startControlPlane starts kube-apiserver and etcd; kube-apiserver without
// its watch-cache consistency checks unless consistencyChecks.
func startControlPlane(root string, consistencyChecks bool) (*controlplane.Plane, error) {
	step("starting kube-apiserver and etcd")
	// envtest gives them 20s by default, too little on a busy machine; its
	// failed attempts can leave a kube-apiserver behind.
	if os.Getenv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT") == "" {
		_ = os.Setenv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT", "2m")
	}
	ctrllog.SetLogger(zap.New(zap.WriteTo(io.Discard))) // envtest's errors are returned
	var configure []func(*envtest.Environment)
	if !consistencyChecks {
		configure = append(configure, withoutConsistencyChecks)
	}
	return controlplane.Start(root, configure...)
}

// withoutConsistencyChecks turns off kube-apiserver's watch-cache
// consistency checks. Each resource's runs every 5 to 7.5 minutes from the
// API server's start and lists the resource whole from etcd, decoding every
// object: at N = 8,000 one took 4.5 s of kube-apiserver's CPU, as much as
// a fan-out's whole excess over its floor, in whichever window it fell. The
// windows of a round fall at about the same minutes from the start in every
// run, so the checks weighed on the same fan-outs each time.
func withoutConsistencyChecks(env *envtest.Environment) {
	if env.ControlPlane.APIServer == nil {
		env.ControlPlane.APIServer = &envtest.APIServer{}
	}
	env.ControlPlane.APIServer.Configure().Append("feature-gates", consistencyChecksOff)
}

// consistencyChecksGate is the feature gate of the checks;
// consistencyChecksOff the flag's value that turns them off.
const (
	consistencyChecksGate = "DetectCacheInconsistency"
	consistencyChecksOff  = consistencyChecksGate + "=false"
)

// checkConsistencyChecks fails unless kube-apiserver runs its watch-cache
// consistency checks exactly when the run says it does, as the report
// states: it reads the gate from kube-apiserver's own metrics.
func (h *harness) checkConsistencyChecks(ctx context.Context) error {
	metrics, err := h.apiServerMetrics(ctx)
	if err != nil {
		return err
	}
	on, reported := featureEnabled(metrics, consistencyChecksGate)
	switch {
	case !reported:
		return fmt.Errorf("kube-apiserver's metrics give no state of its feature gate %s", consistencyChecksGate)
	case on != h.o.consistencyChecks:
		return fmt.Errorf("kube-apiserver runs with its feature gate %s at %t, the run asked for %t", consistencyChecksGate, on, h.o.consistencyChecks)
	}
	return nil
}

// apiServerMetrics scrapes kube-apiserver's metrics as the administrator.
func (h *harness) apiServerMetrics(ctx context.Context) (scrape.Snapshot, error) {
	body, err := h.apiServerGet(ctx, "/metrics")
	if err != nil {
		return nil, err
	}
	defer body.Close()
	return scrape.Parse(body)
}

// beginWindow begins the timed phase name once kube-apiserver has
// collected its garbage; a managed phase also scrapes the manager's
// metrics at its start. The floors beside the fan-outs, which are not
// phases of the report, collect through adjacentFloors.collect.
func (h *harness) beginWindow(ctx context.Context, name string, managed bool) (*phase, error) {
	if err := h.collectAPIServerGarbage(ctx); err != nil {
		return nil, err
	}
	if !managed {
		return h.r.begin(name, h.procs, nil), nil
	}
	return h.r.beginManaged(name, h.procs, h.metricsURL)
}

// collectAPIServerGarbage makes kube-apiserver collect its garbage now,
// and waits until it has: each timed window starts with the API server's
// collector at the start of its cycle, as a Go benchmark starts each
// measurement after a collection. Its heap holds the whole object of
// every recent event in the watch cache, gigabytes at N = 8,000, so a
// cycle is seconds of marking, and otherwise falls in one window and not
// the next.
func (h *harness) collectAPIServerGarbage(ctx context.Context) error {
	// The heap profile's handler collects first when asked (gc=1); the
	// profile itself is not read.
	body, err := h.apiServerGet(ctx, "/debug/pprof/heap?gc=1")
	if err != nil {
		return fmt.Errorf("make kube-apiserver collect its garbage: %w", err)
	}
	defer body.Close()
	_, err = io.Copy(io.Discard, body)
	return err
}

// apiServerGet GETs path of kube-apiserver as the administrator; the
// caller closes the body.
func (h *harness) apiServerGet(ctx context.Context, path string) (io.ReadCloser, error) {
	return scrape.Open(ctx, h.admin, apiServerURL(h.cfg, path))
}

// apiServerURL is path on the API server that cfg connects to.
func apiServerURL(cfg *rest.Config, path string) string {
	return strings.TrimSuffix(cfg.Host, "/") + path
}

// featureEnabled is the state of feature gate name in a component's
// metrics (kubernetes_feature_enabled), and whether they report it.
func featureEnabled(metrics scrape.Snapshot, name string) (enabled, reported bool) {
	match := map[string]string{"name": name}
	return metrics.Sum("kubernetes_feature_enabled", match) == 1, metrics.Has("kubernetes_feature_enabled", match)
}
