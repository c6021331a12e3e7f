package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/test/controlplane"
)

const nodeName = "node1"

// The kubelet's settings that decide how fast a ConfigMap edit reaches a
// running pod (docs/delivery.md): a pod is synced every syncFrequency (with
// up to half of it added as jitter), and the ConfigMap is read from a watch.
// PERSONA_E2E_SYNC_FREQUENCY sets another period, to measure its effect.
var syncFrequency = func() time.Duration {
	d, err := time.ParseDuration(os.Getenv("PERSONA_E2E_SYNC_FREQUENCY"))
	if err != nil || d <= 0 {
		return 5 * time.Second
	}
	return d
}()

const changeDetection = "Watch"

// node is a kubelet on containerd, with the scheduler and the
// controller-manager, against a controlplane.Plane. Everything it writes is
// under dir, but for the kubelet's symlinks in /var/log/containers.
type node struct {
	dir, socket, podLogs string
	kubeletArgs          []string
	binaries             string

	containerd, kubelet, scheduler, controllerManager, proxy *process
	// netnsBefore are the pod network namespaces that existed before the
	// node started; stop removes the others.
	netnsBefore map[string]bool
}

// startNode starts containerd, imports images into it, then starts the
// kubelet, the scheduler, the controller-manager and kube-proxy, and waits
// for the node to be Ready. Its errors name the step that failed. The caller
// stops it, even after an error.
func startNode(ctx context.Context, n *node, root string, plane *controlplane.Plane, cluster *controlplane.Cluster, images []string) error {
	n.netnsBefore = podNetns()
	n.socket = filepath.Join(n.dir, "containerd.sock")
	n.podLogs = filepath.Join(n.dir, "pods-logs")
	if _, err := run(30*time.Second, filepath.Join(root, "hack", "e2e-node.sh"), "config", n.dir); err != nil {
		return fmt.Errorf("write the containerd config: %w", err)
	}
	var err error
	if n.containerd, err = startProcess("containerd", filepath.Join(n.dir, "containerd.log"), "containerd", "--config", filepath.Join(n.dir, "config.toml")); err != nil {
		return fmt.Errorf("containerd: %w (run hack/e2e-node.sh to install it)", err)
	}
	if err := waitFor(30*time.Second, "containerd serving on "+n.socket, func() (bool, error) {
		if n.containerd.exited() {
			return true, nil
		}
		_, err := run(5*time.Second, "ctr", "--address", n.socket, "version")
		return err == nil, err
	}); err != nil || n.containerd.exited() {
		return fmt.Errorf("start containerd: %v; its log:\n%s", err, n.containerd.tail())
	}
	for _, image := range images {
		if _, err := run(2*time.Minute, "ctr", "--address", n.socket, "-n", "k8s.io", "images", "import", image); err != nil {
			return fmt.Errorf("import the image %s into containerd: %w", filepath.Base(image), err)
		}
	}

	port, err := controlplane.FreePort()
	if err != nil {
		return err
	}
	config := filepath.Join(n.dir, "kubelet.yaml")
	if err := os.WriteFile(config, []byte(kubeletConfig(n.socket, n.podLogs, port)), 0o644); err != nil {
		return err
	}
	n.kubeletArgs = []string{"--config", config, "--kubeconfig", plane.AdminKubeconfig,
		"--hostname-override", nodeName, "--node-ip", apiServerAddress, "--root-dir", filepath.Join(n.dir, "kubelet")}
	if err := n.startKubelet(); err != nil {
		return err
	}
	if n.scheduler, err = startProcess("kube-scheduler", filepath.Join(n.dir, "kube-scheduler.log"), filepath.Join(n.binaries, "kube-scheduler"),
		"--kubeconfig", plane.AdminKubeconfig, "--leader-elect=false", "--secure-port=0"); err != nil {
		return err
	}
	// The controllers the suite needs: the garbage collector; Deployments,
	// ReplicaSets and PodDisruptionBudgets; Jobs (a release's tasks); node lifecycle, which lifts the
	// not-ready taint the kubelet registers the node with; EndpointSlices,
	// for kube-proxy's Service rules; and ServiceAccounts, their tokens'
	// signing and the CA every namespace gets as kube-root-ca.crt.
	if n.controllerManager, err = startProcess("kube-controller-manager", filepath.Join(n.dir, "kube-controller-manager.log"), filepath.Join(n.binaries, "kube-controller-manager"),
		"--kubeconfig", plane.AdminKubeconfig, "--leader-elect=false", "--secure-port=0",
		"--service-account-private-key-file", cluster.ServiceAccountKeyFile, "--root-ca-file", cluster.CAFile,
		"--controllers=garbage-collector-controller,deployment-controller,replicaset-controller,disruption-controller,job-controller,"+
			"node-lifecycle-controller,endpointslice-controller,serviceaccount-controller,serviceaccount-token-controller,"+
			"root-ca-certificate-publisher-controller,namespace-controller"); err != nil {
		return err
	}
	proxyConfig := filepath.Join(n.dir, "kube-proxy.yaml")
	healthz, err := controlplane.FreePort()
	if err != nil {
		return err
	}
	metrics, err := controlplane.FreePort()
	if err != nil {
		return err
	}
	if err := os.WriteFile(proxyConfig, []byte(kubeProxyConfig(plane.AdminKubeconfig, healthz, metrics)), 0o644); err != nil {
		return err
	}
	if n.proxy, err = startProcess("kube-proxy", filepath.Join(n.dir, "kube-proxy.log"), filepath.Join(n.binaries, "kube-proxy"),
		"--config", proxyConfig); err != nil {
		return err
	}
	return n.waitReady(ctx, plane.Client, time.Time{})
}

// kubeProxyConfig is kube-proxy's configuration in the suite's network
// namespace: iptables rules for the Services, no change to the machine-wide
// conntrack table, nothing served outside loopback.
func kubeProxyConfig(kubeconfig string, healthzPort, metricsPort int) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection:
  kubeconfig: %s
hostnameOverride: %s
clusterCIDR: %s
bindAddress: 127.0.0.1
healthzBindAddress: 127.0.0.1:%d
metricsBindAddress: 127.0.0.1:%d
iptables:
  localhostNodePorts: false
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`, kubeconfig, nodeName, podSubnet, healthzPort, metricsPort)
}

// kubeletConfig is the KubeletConfiguration of a node on this kind of
// machine: cgroup v1 without CAP_SYS_RESOURCE, serving only on the suite's
// network namespace's address.
func kubeletConfig(socket, podLogs string, port int) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
containerRuntimeEndpoint: unix://%s
address: %s
port: %d
readOnlyPort: 0
healthzPort: 0
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
syncFrequency: %s
configMapAndSecretChangeDetectionStrategy: %s
podLogsDir: %s
resolvConf: ""
localStorageCapacityIsolation: false
`, socket, apiServerAddress, port, syncFrequency, changeDetection, podLogs)
}

func (n *node) startKubelet() error {
	var err error
	n.kubelet, err = startProcess("kubelet", filepath.Join(n.dir, "kubelet.log"), filepath.Join(n.binaries, "kubelet"), n.kubeletArgs...)
	return err
}

// waitReady waits for the node to report Ready, with a heartbeat after since.
func (n *node) waitReady(ctx context.Context, c client.Client, since time.Time) error {
	err := waitFor(2*time.Minute, "node "+nodeName+" Ready", func() (bool, error) {
		if n.kubelet.exited() {
			return true, nil
		}
		var node corev1.Node
		if err := c.Get(ctx, client.ObjectKey{Name: nodeName}, &node); err != nil {
			return false, err
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				ok := cond.Status == corev1.ConditionTrue && !cond.LastHeartbeatTime.Time.Before(since.Truncate(time.Second))
				return ok, fmt.Errorf("Ready=%s %s: %s", cond.Status, cond.Reason, cond.Message)
			}
		}
		return false, fmt.Errorf("no Ready condition yet")
	})
	if err != nil || n.kubelet.exited() {
		return fmt.Errorf("start the kubelet: %v; its log:\n%s", orExited(err), n.kubelet.tail())
	}
	return nil
}

func orExited(err error) error {
	if err == nil {
		return fmt.Errorf("it exited")
	}
	return err
}

// stop ends everything the node started: the control-plane components and
// the kubelet, every container (containerd's shims outlive containerd
// otherwise), then containerd; then it unmounts what they left mounted
// under dir.
func (n *node) stop() {
	n.scheduler.stop(5 * time.Second)
	n.controllerManager.stop(5 * time.Second)
	n.proxy.stop(5 * time.Second)
	n.kubelet.stop(10 * time.Second)
	if n.containerd != nil && !n.containerd.exited() {
		ctr := func(args ...string) (string, error) {
			return run(20*time.Second, "ctr", append([]string{"--address", n.socket, "-n", "k8s.io"}, args...)...)
		}
		if out, err := ctr("tasks", "ls", "-q"); err == nil {
			for _, id := range strings.Fields(out) {
				_, _ = ctr("tasks", "kill", "-s", "SIGKILL", id)
				_, _ = ctr("tasks", "delete", "-f", id)
			}
		}
	}
	n.containerd.stop(10 * time.Second)
	n.killLeftovers()
	n.removePodNetns()
	unmountUnder(n.dir)
	removeLinksInto("/var/log/containers", n.dir)
}

// killLeftovers kills, by the pids containerd recorded, containers and shims
// that a failed `ctr tasks delete` left running, then every process whose
// arguments name the node's directory: a shim whose task state containerd
// already removed has no pid file left, yet still runs.
func (n *node) killLeftovers() {
	pids, _ := filepath.Glob(filepath.Join(n.dir, "state", "io.containerd.runtime.v2.task", "*", "*", "*.pid"))
	for _, f := range pids {
		raw, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(raw))); err == nil && pid > 1 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	for _, p := range processesNaming(n.dir + "/") {
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
	}
	_ = waitFor(10*time.Second, "the node's processes gone", func() (bool, error) {
		return len(processesNaming(n.dir+"/")) == 0, nil
	})
}

// osProcess is a running process: its pid, executable and arguments, spaced.
type osProcess struct {
	pid       int
	exe, args string
}

// processesNaming lists the processes, other than this one, whose
// arguments contain s.
func processesNaming(s string) []osProcess {
	return processesWhere(func(p osProcess) bool { return strings.Contains(p.args, s) })
}

// processesWhere lists the processes, other than this one, that match.
func processesWhere(match func(osProcess) bool) []osProcess {
	var found []osProcess
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, proc := range procs {
		pid, err := strconv.Atoi(filepath.Base(proc))
		if err != nil || pid == os.Getpid() {
			continue
		}
		p := osProcess{pid: pid}
		p.exe, _ = os.Readlink(filepath.Join(proc, "exe"))
		args, _ := os.ReadFile(filepath.Join(proc, "cmdline"))
		p.args = strings.TrimSpace(strings.ReplaceAll(string(args), "\x00", " "))
		if match(p) {
			found = append(found, p)
		}
	}
	return found
}

// unmountUnder detaches every mount under dir, deepest first: container root
// filesystems, sandbox /dev/shm, the kubelet's subPath bind mounts.
func unmountUnder(dir string) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return
	}
	defer f.Close()
	var mounts []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMountPath(fields[4])
		if strings.HasPrefix(mp, dir+"/") {
			mounts = append(mounts, mp)
		}
	}
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i]) > len(mounts[j]) })
	for _, mp := range mounts {
		_ = syscall.Unmount(mp, syscall.MNT_DETACH)
	}
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// removeLinksInto removes the symlinks in dir that point under target.
func removeLinksInto(dir, target string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if dest, err := os.Readlink(p); err == nil && strings.HasPrefix(dest, target+"/") {
			_ = os.Remove(p)
		}
	}
}

// tails is the end of every log of the node, for a failure.
func (n *node) tails() string {
	var b strings.Builder
	for _, p := range []*process{n.containerd, n.kubelet, n.scheduler, n.controllerManager, n.proxy} {
		if p != nil {
			fmt.Fprintf(&b, "--- %s (%s)\n%s\n", p.name, p.log, p.tail())
		}
	}
	return b.String()
}

// netnsDir is where containerd keeps the pods' network namespaces, bind
// mounted, machine-wide.
const netnsDir = "/var/run/netns"

// podNetns are the network namespaces in netnsDir.
func podNetns() map[string]bool {
	names := map[string]bool{}
	entries, _ := os.ReadDir(netnsDir)
	for _, e := range entries {
		names[e.Name()] = true
	}
	return names
}

// removePodNetns unmounts and removes the pod network namespaces the node
// made: containerd removes a sandbox's only when the kubelet stops it, and
// the suite kills the containers instead.
func (n *node) removePodNetns() {
	for name := range podNetns() {
		if n.netnsBefore[name] || !strings.HasPrefix(name, "cni-") {
			continue
		}
		path := filepath.Join(netnsDir, name)
		_ = syscall.Unmount(path, syscall.MNT_DETACH)
		_ = os.Remove(path)
	}
}
