package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

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
