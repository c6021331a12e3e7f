package controlplane

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// BuildManager builds the manager binary of the repository at root into dir
// and returns its path.
func BuildManager(ctx context.Context, root, dir string) (string, error) {
	binary := filepath.Join(dir, "manager")
	build := exec.CommandContext(ctx, "go", "build", "-o", binary, "./cmd")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the manager: %w\n%s", err, out)
	}
	return binary, nil
}

// EnvtestT is what RequireEnvtest needs of a test: a *testing.T, or Ginkgo's
// GinkgoT().
type EnvtestT interface {
	Helper()
	Fatal(args ...any)
	Skip(args ...any)
}

// RequireEnvtest skips t without a control plane to run against
// (KUBEBUILDER_ASSETS unset), or fails it where make test asked for one
// (PERSONA_REQUIRE_ENVTEST set).
func RequireEnvtest(t EnvtestT) {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") != "" {
		return
	}
	if os.Getenv("PERSONA_REQUIRE_ENVTEST") != "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set")
	}
	t.Skip("KUBEBUILDER_ASSETS is not set: run `make test`, which builds the control plane binaries with hack/envtest-binaries.sh")
}
