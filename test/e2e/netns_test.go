package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/persona-operator/persona-operator/test/controlplane"
)

// The suite's cluster runs in a network namespace of its own: the control
// plane, containerd, the kubelet, kube-proxy and every pod. Its addresses,
// the pods' bridge and the Services' rules exist only there, and nothing is
// routed out of it; the namespace ends with the suite's last process.
const (
	// inNetnsEnv marks the suite's process inside its namespace.
	inNetnsEnv = "PERSONA_E2E_IN_NETNS"
	// apiServerAddress is the API server's address in the namespace, on its
	// loopback interface: the kubernetes Service's endpoint, which pods reach
	// through the bridge's gateway.
	apiServerAddress = "10.255.0.1"
	// podSubnet is the bridge's, from which host-local gives pod addresses.
	podSubnet = "10.244.0.0/24"
)

// TestMain runs the suite inside a new network namespace when it will start
// a node; otherwise (tests that skip) where it is.
func TestMain(m *testing.M) {
	if os.Getenv(inNetnsEnv) == "" && os.Geteuid() == 0 && os.Getenv("PERSONA_E2E_BINARIES") != "" {
		os.Exit(reexecInNetns())
	}
	if os.Getenv(inNetnsEnv) != "" {
		if err := setUpNetns(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: set up the network namespace:", err)
			os.Exit(1)
		}
	}
	os.Exit(m.Run())
}

// reexecInNetns runs this test binary again, with its arguments, in a new
// network namespace, and returns its exit status. The module cache is filled
// first: in the namespace the module proxy is out of reach.
func reexecInNetns() int {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	download := exec.Command("go", "mod", "download")
	download.Dir, download.Stdout, download.Stderr = root, os.Stderr, os.Stderr
	if err := download.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: go mod download:", err)
		return 1
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	netnsBefore := podNetns()
	// What another run, killed before its cleanups, left is not this one's.
	leftBefore := map[string]bool{}
	for _, l := range leftBehind(netnsBefore) {
		leftBefore[l] = true
	}
	if len(leftBefore) > 0 {
		fmt.Fprintf(os.Stderr, "e2e: found on the machine before the run, left by another: %d mounts, links or processes\n", len(leftBefore))
	}
	cmd := exec.Command("unshare", append([]string{"--net", "--", self}, os.Args[1:]...)...)
	cmd.Env = append(os.Environ(), inNetnsEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	code := 0
	if err := cmd.Run(); err != nil {
		exit, ok := err.(*exec.ExitError)
		if !ok {
			fmt.Fprintln(os.Stderr, "e2e: unshare --net:", err)
			return 1
		}
		code = exit.ExitCode()
	}
	var left []string
	for _, l := range leftBehind(netnsBefore) {
		if !leftBefore[l] {
			left = append(left, l)
		}
	}
	if len(left) > 0 {
		fmt.Fprintf(os.Stderr, "e2e: the suite left behind: %s\n", strings.Join(left, "; "))
		return 1
	}
	return code
}

// leftBehind is what a run left on the machine: pod network namespaces
// made since netnsBefore, mounts under its temporary directories, the
// kubelet's log links into them, and processes of its binaries. Its own network namespace, with the bridge,
// the addresses and the rules, ended with its last process.
func leftBehind(netnsBefore map[string]bool) []string {
	var left []string
	for name := range podNetns() {
		if !netnsBefore[name] {
			left = append(left, "network namespace "+filepath.Join(netnsDir, name))
		}
	}
	if mounts, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, line := range strings.Split(string(mounts), "\n") {
			if fields := strings.Fields(line); len(fields) > 4 && strings.Contains(fields[4], "/persona-e2e-") {
				left = append(left, "mount "+unescapeMountPath(fields[4]))
			}
		}
	}
	links, _ := filepath.Glob("/var/log/containers/*")
	for _, link := range links {
		if dest, err := os.Readlink(link); err == nil && strings.Contains(dest, "/persona-e2e-") {
			left = append(left, "log link "+link)
		}
	}
	// The node's binaries run only here; containerd and its shims name the
	// run's directory in their arguments.
	node := map[string]bool{}
	for _, b := range []string{"kubelet", "kube-proxy", "kube-scheduler", "kube-controller-manager"} {
		node[filepath.Join(os.Getenv("PERSONA_E2E_BINARIES"), b)] = true
	}
	for _, p := range processesWhere(func(p osProcess) bool {
		return node[p.exe] || strings.Contains(p.args, "/persona-e2e-")
	}) {
		left = append(left, fmt.Sprintf("process %d %s", p.pid, p.args))
	}
	return left
}

// setUpNetns brings up loopback and the API server's address, and routes
// the Services' range to loopback: a connection from the namespace itself
// (the API server calling the webhook's Service) needs a route before
// kube-proxy's rules rewrite its address to a pod's.
func setUpNetns() error {
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		{"addr", "add", apiServerAddress + "/32", "dev", "lo"},
		{"route", "add", controlplane.ServiceSubnet, "dev", "lo"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}
