// Package test holds what only tests and harnesses use: the local control
// plane (controlplane), the envtest suites' shared setup (suite),
// fixtures, metric scraping (scrape), the scale
// harness (scale), the controllers' envtest suite (integration), the Argo CD
// health check runner (argocd), Argo Rollouts' controller runner (rollouts)
// and the agent CLIs' suite with its model stub (agents). No production binary may depend on it; this package's test
// checks that, and that the packages under internal/controller import one
// another one way.
package test

import (
	"maps"
	"os/exec"
	"slices"
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

// controllerLayers are the packages under internal/controller, lowest
// first: a package may import only packages of a lower layer, so imports
// run one way, from the composition root down (internal/controller/doc.go).
// A new package gets its place here.
var controllerLayers = [][]string{
	{"internal/controller/kube"},
	{"internal/controller/revisions", "internal/controller/restarts", "internal/controller/agents", "internal/controller/layers"},
	{"internal/controller/persona"},
	{"internal/controller"},
}

// TestControllerPackagesImportOneWay fails when a package under
// internal/controller, its tests included, imports one of the same layer
// or a higher one, when their imports form a cycle, or when a package is
// in no layer.
func TestControllerPackagesImportOneWay(t *testing.T) {
	out, err := exec.Command("go", "list", "-e", "-f", `{{.ImportPath}} {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}`,
		module+"/internal/controller/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	layer := map[string]int{}
	for i, pkgs := range controllerLayers {
		for _, p := range pkgs {
			layer[module+"/"+p] = i
		}
	}
	imports := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := fields[0]
		if _, ok := layer[pkg]; !ok {
			t.Errorf("%s is in no layer of controllerLayers: give it its place", pkg)
			continue
		}
		for _, imp := range fields[1:] {
			if _, ok := layer[imp]; ok && imp != pkg && !slices.Contains(imports[pkg], imp) {
				imports[pkg] = append(imports[pkg], imp)
			}
		}
	}
	if len(imports) == 0 && len(layer) > 0 {
		t.Fatalf("go list listed no import between the controller packages:\n%s", out)
	}
	for pkg, imps := range imports {
		for _, imp := range imps {
			if layer[imp] >= layer[pkg] {
				t.Errorf("%s imports %s, of the same layer or a higher one", strings.TrimPrefix(pkg, module+"/"), strings.TrimPrefix(imp, module+"/"))
			}
		}
	}
	// A cycle breaks the layers too; found on its own, it is named whole.
	const (
		unseen = iota
		visiting
		done
	)
	state := map[string]int{}
	var path []string
	var visit func(string)
	visit = func(pkg string) {
		switch state[pkg] {
		case visiting:
			cycle := append(slices.Clone(path[slices.Index(path, pkg):]), pkg)
			for i := range cycle {
				cycle[i] = strings.TrimPrefix(cycle[i], module+"/")
			}
			t.Errorf("import cycle: %s", strings.Join(cycle, " -> "))
			return
		case done:
			return
		}
		state[pkg] = visiting
		path = append(path, pkg)
		for _, imp := range imports[pkg] {
			visit(imp)
		}
		path = path[:len(path)-1]
		state[pkg] = done
	}
	for _, pkg := range slices.Sorted(maps.Keys(imports)) {
		visit(pkg)
	}
}
