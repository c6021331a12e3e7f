// Package test holds what only tests and harnesses use: the local control
// plane (controlplane), the envtest suites' shared setup (suite),
// fixtures, metric scraping (scrape), the scale
// harness (scale), the Argo CD health check runner (argocd) and the agent
// CLIs' suite with its model stub (agents). No
// production binary may depend on it; this package's test checks that.
package test

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/persona-operator/persona-operator"

// TestProductionBinariesLeaveTestSupportOut fails when the manager or
// kubectl-persona depends on test support, hack/, the image builder or a
// test framework.
func TestProductionBinariesLeaveTestSupportOut(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", module+"/cmd", module+"/cmd/kubectl-persona").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	forbidden := []string{module + "/test", module + "/hack", module + "/internal/image", "github.com/moby/buildkit", "testing", "github.com/onsi/", "sigs.k8s.io/controller-runtime/pkg/envtest"}
	deps := strings.Fields(string(out))
	if len(deps) < 50 {
		t.Fatalf("go list -deps listed %d packages, too few to be the binaries' dependencies", len(deps))
	}
	for _, dep := range deps {
		for _, f := range forbidden {
			if dep == f || strings.HasPrefix(dep, strings.TrimSuffix(f, "/")+"/") {
				t.Errorf("a production binary depends on %s", dep)
			}
		}
	}
}
