package hack_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// checkRuns is how many times each script's version checks run.
const checkRuns = 200

// fakeVersion writes a binary that prints its version line first, pauses, and
// then writes more lines one write each, as etcd and the Kubernetes binaries
// write theirs. A reader that stops after the version line leaves the binary
// writing into a closed pipe.
func fakeVersion(t *testing.T, path, version string) {
	t.Helper()
	script := fmt.Sprintf(`#!/usr/bin/env bash
case "$1" in
--version|version) ;;
*) exit 3 ;;
esac
echo %q
sleep 0.002
for i in {1..20}; do
	echo "line $i of the version output"
done
`, version)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// fakeGo answers the `go env` questions the scripts ask before their fast
// path and fails anything else, so a version check that fails turns into a
// failed build instead of a real one.
func fakeGo(t *testing.T, dir string) {
	t.Helper()
	script := fmt.Sprintf(`#!/usr/bin/env bash
if [[ "$1" == env && "$2" == GOOS ]]; then echo %s; exit 0; fi
if [[ "$1" == env && "$2" == GOARCH ]]; then echo %s; exit 0; fi
echo "fake go: a version check failed, so the script tried to build: $*" >&2
echo "$*" >>"$(dirname "$0")/builds"
exit 99
`, runtime.GOOS, runtime.GOARCH)
	if err := os.WriteFile(filepath.Join(dir, "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// load keeps every core busy until the test ends, so the binaries and the
// scripts are scheduled as on a loaded CI machine.
func load(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := 0
			for ctx.Err() == nil {
				for i := range 1 << 16 {
					x += i
				}
			}
			_ = x
		}()
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
}

type assets struct {
	root, dest, path string
	// builds is the file the fake go lists the builds it refused in.
	builds string
}

func fakeAssets(t *testing.T, k8sVersion, etcdVersion string) assets {
	t.Helper()
	root := t.TempDir()
	dest := filepath.Join(root, "k8s", fmt.Sprintf("%s-%s-%s", k8sVersion, runtime.GOOS, runtime.GOARCH))
	if err := os.MkdirAll(dest, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"kube-apiserver", "kubelet", "kube-proxy", "kube-scheduler", "kube-controller-manager"} {
		fakeVersion(t, filepath.Join(dest, b), "Kubernetes v"+k8sVersion)
	}
	fakeVersion(t, filepath.Join(dest, "etcd"), "etcd Version: "+etcdVersion)
	fakeVersion(t, filepath.Join(dest, "kubectl"), "Client Version: v"+k8sVersion)
	bin := t.TempDir()
	fakeGo(t, bin)
	return assets{root: root, dest: dest, path: bin + string(os.PathListSeparator) + os.Getenv("PATH"), builds: filepath.Join(bin, "builds")}
}

func runScript(a assets, script string) (string, error) {
	cmd := exec.Command("bash", script)
	cmd.Env = append(os.Environ(),
		"PATH="+a.path,
		"KUBEBUILDER_ASSETS_ROOT="+a.root,
		"ENVTEST_K8S_VERSION=1.37.2",
		"ENVTEST_ETCD_VERSION=3.7.3",
	)
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out), fmt.Errorf("%w: %s", err, ee.Stderr)
		}
	}
	return string(out), err
}

// TestVersionChecksNeverFlake runs each script's fast path, which is its
// version checks and nothing else, many times under load against binaries
// that write their version output line by line. Every run must find the
// binaries current.
func TestVersionChecksNeverFlake(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not found")
	}
	a := fakeAssets(t, "1.37.2", "3.7.3")
	load(t)
	for _, script := range []string{"envtest-binaries.sh", "e2e-binaries.sh"} {
		t.Run(script, func(t *testing.T) {
			for i := range checkRuns {
				out, err := runScript(a, script)
				if err != nil {
					t.Fatalf("run %d of %d: %v", i+1, checkRuns, err)
				}
				if got := strings.TrimSpace(out); got != a.dest {
					t.Fatalf("run %d of %d printed %q, want %q", i+1, checkRuns, got, a.dest)
				}
			}
		})
	}
}

// TestVersionChecksRefuseOtherVersions: the checks match the version, not a
// prefix of it, so 1.37.20 and 3.7.30 are not taken for 1.37.2 and 3.7.3.
func TestVersionChecksRefuseOtherVersions(t *testing.T) {
	for _, tc := range []struct{ k8s, etcd string }{{"1.37.20", "3.7.3"}, {"1.37.2", "3.7.30"}} {
		a := fakeAssets(t, "1.37.2", tc.etcd)
		for _, b := range []string{"kube-apiserver", "kubelet"} {
			fakeVersion(t, filepath.Join(a.dest, b), "Kubernetes v"+tc.k8s)
		}
		for _, script := range []string{"envtest-binaries.sh", "e2e-binaries.sh"} {
			if script == "e2e-binaries.sh" && tc.k8s == "1.37.2" {
				continue // e2e-binaries.sh does not check etcd
			}
			// Refused means the script went on to build, which the fake go
			// records and refuses: not any other failure, such as a script
			// that breaks before its checks.
			_ = os.Remove(a.builds)
			_, err := runScript(a, script)
			if builds, _ := os.ReadFile(a.builds); err == nil || len(builds) == 0 {
				t.Errorf("%s took kubernetes %s, etcd %s for 1.37.2, 3.7.3 (%v, builds tried: %q)", script, tc.k8s, tc.etcd, err, builds)
			}
		}
	}
}

// TestFakeBinaryBreaksAnEarlyClosingPipe shows that the fake binaries make
// the old check fail: piped into grep -q under pipefail, the binary dies of
// SIGPIPE once grep has its line. Without this, the test above could pass
// against a check that still flakes.
func TestFakeBinaryBreaksAnEarlyClosingPipe(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "etcd")
	fakeVersion(t, bin, "etcd Version: 3.7.3")
	failures := 0
	for range 20 {
		cmd := exec.Command("bash", "-c", `set -o pipefail; "$0" --version 2>/dev/null | grep -q '3\.7\.3'`, bin)
		if cmd.Run() != nil {
			failures++
		}
	}
	if failures == 0 {
		t.Fatal("the pipe into grep -q never failed: the fake binary does not exercise the early close")
	}
}

// TestArgoRolloutsFastPath: argo-rollouts.sh takes a cache whose controller
// reports the version and whose CRDs and ClusterRole are there for done, and
// builds again when the controller reports another version (1.10.10 is not
// 1.10.1) or a CRD is missing.
func TestArgoRolloutsFastPath(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not found")
	}
	crds := []string{"analysis-run-crd.yaml", "analysis-template-crd.yaml", "cluster-analysis-template-crd.yaml", "experiment-crd.yaml", "rollout-crd.yaml"}
	for _, tc := range []struct {
		name, version, missing string
		wantBuild              bool
	}{
		{name: "cached", version: "v1.10.1+unknown"},
		{name: "other version", version: "v1.10.10+unknown", wantBuild: true},
		{name: "CRD missing", version: "v1.10.1+unknown", missing: "crds/rollout-crd.yaml", wantBuild: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dest := filepath.Join(root, fmt.Sprintf("v1.10.1-%s-%s", runtime.GOOS, runtime.GOARCH))
			if err := os.MkdirAll(filepath.Join(dest, "crds"), 0o755); err != nil {
				t.Fatal(err)
			}
			for _, f := range append([]string{"clusterrole.yaml"}, crds...) {
				if f != "clusterrole.yaml" {
					f = "crds/" + f
				}
				if f != tc.missing {
					if err := os.WriteFile(filepath.Join(dest, f), []byte("kind: Fake\n"), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			fakeVersion(t, filepath.Join(dest, "rollouts-controller"), tc.version)
			bin := t.TempDir()
			fakeGo(t, bin)
			cmd := exec.Command("bash", "argo-rollouts.sh")
			cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "ARGO_ROLLOUTS_CACHE="+root, "ARGO_ROLLOUTS_VERSION=1.10.1")
			out, err := cmd.Output()
			builds, _ := os.ReadFile(filepath.Join(bin, "builds"))
			if tc.wantBuild {
				if err == nil || len(builds) == 0 {
					t.Errorf("took the cache for done (%v, go commands tried: %q)", err, builds)
				}
				return
			}
			if err != nil {
				t.Fatalf("%v (go commands tried: %q)", err, builds)
			}
			if got := strings.TrimSpace(string(out)); got != dest {
				t.Errorf("printed %q, want %q", got, dest)
			}
		})
	}
}
