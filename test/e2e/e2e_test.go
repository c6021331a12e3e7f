package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/test/controlplane"
)

// The objects of config/samples the suite watches and edits.
const (
	namespace   = "default"
	persona     = "reviewer"
	agentLabel  = "app.kubernetes.io/name"
	agentApp    = "coding-agent"
	mainAgent   = "agent"
	subPathApp  = "coding-agent-subpath"
	subPathPeer = "agent-subpath"
)

// suite is the running cluster and what the checks share.
type suite struct {
	root, bin, work string
	plane           *controlplane.Plane
	c               client.Client
	node            *node
	ctx             context.Context
	// agentPod is the agent Deployment's pod, subPathPod the pod that mounts
	// the prompt by subPath, and firstPrompt what both read at start (the
	// subPath mount must keep it).
	agentPod, subPathPod string
	firstPrompt          string
	// injection is what the injection checks share (injection_test.go).
	injection *injection
}

// TestDelivery runs config/samples on a real node and checks how the
// operator's render reaches a running agent (docs/delivery.md). The checks
// run in order on one cluster; a failed one ends the suite.
func TestDelivery(t *testing.T) {
	s := setUp(t, installer{"dist/install.yaml with kubectl", (*suite).installRelease})
	checks := []struct {
		name  string
		check func(t *testing.T)
	}{
		{"PodReadsTheOperatorsRender", s.podReadsTheOperatorsRender},
		{"EditsReachTheRunningPod", s.editsReachTheRunningPod},
		{"StuckPersonaLeavesTheLastGoodPrompt", s.stuckPersonaLeavesTheLastGoodPrompt},
		{"KubeletRestartKeepsThePrompt", s.kubeletRestartKeepsThePrompt},
		{"InjectedPodsReadTheirPrompt", s.injectedPodsReadTheirPrompt},
		{"EditReachesOnlyTheLivePod", s.editReachesOnlyTheLivePod},
		{"RollingUpdateCanariesTheRevision", s.rollingUpdateCanariesTheRevision},
		{"AgentsStatusCountsPodsByRevision", s.agentsStatusCountsPodsByRevision},
		{"RealHarnessGetsEachEdit", s.realHarnessGetsEachEdit},
		{"MetricsNeedAToken", s.metricsNeedAToken},
		{"LeaderFailover", s.leaderFailover},
		{"RolloutRestartUnderLoad", s.rolloutRestartUnderLoad},
		{"CertificateRotationUnderLoad", s.certificateRotationUnderLoad},
		{"CertificateHealsWithNoReplicaRunning", s.certificateHealsWithNoReplicaRunning},
		{"DeletedPersona", s.deletedPersona},
	}
	for _, c := range checks {
		leaveTimeForCleanup(t, 2*time.Minute+10*syncFrequency)
		if !t.Run(c.name, c.check) {
			return
		}
	}
}

// leaveTimeForCleanup fails the suite while its cleanups can still run: past
// go test's -timeout the test binary panics, and the processes and containers
// it started would be left behind.
func leaveTimeForCleanup(t *testing.T, next time.Duration) {
	if deadline, ok := t.Deadline(); ok && time.Until(deadline) < next+time.Minute {
		t.Fatalf("%s left before go test's -timeout, and the next step may take %s: raise -timeout", time.Until(deadline).Round(time.Second), next)
	}
}

// requireNode skips the suite where it cannot run, unless make test-e2e asked for
// it (PERSONA_REQUIRE_E2E=1): then it fails with the reason.
func requireNode(t *testing.T) string {
	var why string
	switch {
	case os.Geteuid() != 0:
		why = "the e2e suite runs containerd and a kubelet, which need root"
	case os.Getenv("KUBEBUILDER_ASSETS") == "":
		why = "KUBEBUILDER_ASSETS is not set (hack/envtest-binaries.sh)"
	case os.Getenv("PERSONA_E2E_BINARIES") == "":
		why = "PERSONA_E2E_BINARIES is not set (hack/e2e-binaries.sh): run make test-e2e"
	}
	if why != "" {
		if os.Getenv("PERSONA_REQUIRE_E2E") == "1" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	return os.Getenv("PERSONA_E2E_BINARIES")
}

// installer installs the operator on a fresh cluster, as users do.
type installer struct {
	what    string
	install func(*suite) error
}

func setUp(t *testing.T, in installer) *suite {
	binaries := requireNode(t)
	// The client's only logs are the API server's warnings, which the checks
	// read from status instead.
	logf.SetLogger(logr.Discard())
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	work, err := os.MkdirTemp("", "persona-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	// Registered first, so it runs last: after the node unmounted its mounts.
	t.Cleanup(func() { _ = os.RemoveAll(work) })
	s := &suite{root: root, work: work, bin: filepath.Join(work, "bin"), ctx: context.Background()}

	step := func(what string, err error) {
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	start := time.Now()
	step("build", buildBinaries(root, s.bin))
	managerImage, err := releaseImage(root)
	step("read the manager's image from dist/install.yaml", err)
	images, err := writeImages(s.bin, filepath.Join(root, "test", "e2e", "testdata", "turn.json"), []string{managerImage, upgradeImage(managerImage)}, work)
	step("write the images", err)
	t.Logf("built the binaries and images in %s", time.Since(start).Round(time.Second))

	var cluster *controlplane.Cluster
	s.plane, cluster, err = controlplane.StartCluster(apiServerAddress)
	step("start the control plane", err)
	t.Cleanup(func() { _ = s.plane.Stop() })
	s.c = s.plane.Client

	s.node = &node{dir: filepath.Join(work, "node"), binaries: binaries}
	t.Cleanup(s.node.stop)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs of the node:\n%s\n--- manager\n%s", s.node.tails(), s.node.containerLogTails(installNamespace, "manager", 4<<10))
		}
	})
	step("start the node", startNode(s.ctx, s.node, root, s.plane, cluster, images))
	t.Logf("the node is Ready after %s", time.Since(start).Round(time.Second))

	step("install "+in.what, in.install(s))
	t.Logf("the operator, installed from %s, is Ready and admits through its Service after %s", in.what, time.Since(start).Round(time.Second))

	// The ServiceAccount controller makes it; pods wait for it.
	step("the default ServiceAccount", waitFor(time.Minute, "ServiceAccount "+namespace+"/default", func() (bool, error) {
		err := s.c.Get(s.ctx, client.ObjectKey{Namespace: namespace, Name: "default"}, &corev1.ServiceAccount{})
		return err == nil, err
	}))
	step("apply test/e2e/overlay", s.applyOverlay())
	s.agentPod, err = s.waitAgentPodRunning(agentApp, mainAgent)
	step("run the agent Deployment", err)
	s.subPathPod, err = s.waitAgentPodRunning(subPathApp, subPathPeer)
	step("run the subPath Deployment", err)
	t.Logf("the agent pod %s runs after %s", s.agentPod, time.Since(start).Round(time.Second))
	return s
}

// applyOverlay creates the objects of test/e2e/overlay: config/samples with
// the agent Deployment made to run on this node.
func (s *suite) applyOverlay() error {
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(s.root, "test", "e2e", "overlay"))
	if err != nil {
		return err
	}
	raw, err := res.AsYaml()
	if err != nil {
		return err
	}
	objs, err := controlplane.DecodeManifest(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	for _, o := range objs {
		if namespaced, err := s.c.IsObjectNamespaced(o); err != nil {
			return fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
		} else if namespaced {
			o.SetNamespace(namespace)
		}
		if err := s.c.Create(s.ctx, o); err != nil {
			return fmt.Errorf("create %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	return nil
}

// waitAgentPodRunning waits for the one pod of the Deployment app to run,
// and for its agent container to have logged a turn.
func (s *suite) waitAgentPodRunning(app, container string) (string, error) {
	var name string
	err := waitFor(2*time.Minute, "the "+app+" Deployment's pod running", func() (bool, error) {
		var pods corev1.PodList
		if err := s.c.List(s.ctx, &pods, client.InNamespace(namespace), client.MatchingLabels{agentLabel: app}); err != nil {
			return false, err
		}
		if len(pods.Items) != 1 {
			return false, fmt.Errorf("%d pods (is the controller-manager running?)", len(pods.Items))
		}
		pod := &pods.Items[0]
		name = pod.Name
		if err := s.running(pod); err != nil {
			return false, err
		}
		if turns, err := s.node.agentTurns(namespace, name, container); len(turns) == 0 {
			return false, fmt.Errorf("container %s has logged no turn: %v", container, err)
		}
		return true, nil
	})
	return name, err
}

// running says why pod does not run all its containers, with its events.
func (s *suite) running(pod *corev1.Pod) error {
	if pod.Spec.NodeName == "" {
		return fmt.Errorf("pod %s is not scheduled (is kube-scheduler running?)%s", pod.Name, s.events(pod.Name))
	}
	var waiting []string
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Running == nil {
			state := "not running"
			if w := cs.State.Waiting; w != nil {
				state = w.Reason + ": " + w.Message
			} else if x := cs.State.Terminated; x != nil {
				state = fmt.Sprintf("terminated %s (exit %d): %s", x.Reason, x.ExitCode, x.Message)
			}
			waiting = append(waiting, cs.Name+" "+state)
		}
	}
	if pod.Status.Phase != corev1.PodRunning || len(waiting) > 0 || len(pod.Status.ContainerStatuses) == 0 {
		return fmt.Errorf("pod %s is %s %v%s", pod.Name, pod.Status.Phase, waiting, s.events(pod.Name))
	}
	return nil
}

// events are the pod's warnings, one of each reason: they say why a sandbox
// or a mount failed.
func (s *suite) events(pod string) string {
	var list corev1.EventList
	if err := s.c.List(s.ctx, &list, client.InNamespace(namespace), client.MatchingFields{"involvedObject.name": pod}); err != nil {
		return ""
	}
	var b strings.Builder
	seen := map[string]bool{}
	for _, e := range list.Items {
		if e.Type == corev1.EventTypeWarning && !seen[e.Reason] {
			seen[e.Reason] = true
			fmt.Fprintf(&b, "\n  %s: %s", e.Reason, e.Message)
		}
	}
	return b.String()
}

// renderedPrompt is the digest of system-prompt.md in the persona's
// ConfigMap, and the ConfigMap's content hash.
func (s *suite) renderedPrompt() (prompt, contentHash string, err error) {
	var cm corev1.ConfigMap
	if err := s.c.Get(s.ctx, client.ObjectKey{Namespace: namespace, Name: delivery.ConfigMapName(persona)}, &cm); err != nil {
		return "", "", err
	}
	return digest([]byte(cm.Data["system-prompt.md"])), cm.Annotations[delivery.ContentHashAnnotation], nil
}

// lastTurn is the agent's latest turn in container.
func (s *suite) lastTurn(pod, container string) (turn, error) {
	turns, err := s.node.agentTurns(namespace, pod, container)
	if err != nil {
		return turn{}, err
	}
	if len(turns) == 0 {
		return turn{}, fmt.Errorf("no turn logged by %s", container)
	}
	return turns[len(turns)-1], nil
}

// waitSeen waits for container to read prompt in a turn after t, and
// returns when it first did.
func (s *suite) waitSeen(pod, container, prompt string, after time.Time, timeout time.Duration) (time.Time, error) {
	var seen time.Time
	err := waitFor(timeout, fmt.Sprintf("%s of pod %s reading prompt %.19s", container, pod, prompt), func() (bool, error) {
		turns, err := s.node.agentTurns(namespace, pod, container)
		if err != nil {
			return false, err
		}
		for _, t := range since(turns, after) {
			if t.Prompt == prompt {
				seen = t.At
				return true, nil
			}
		}
		if len(turns) > 0 {
			last := turns[len(turns)-1]
			return false, fmt.Errorf("its last turn, %d at %s, read %.19s %s", last.Turn, last.At.Format(time.TimeOnly), last.Prompt, last.Error)
		}
		return false, nil
	})
	return seen, err
}

// keepsReadingEither checks that every turn of container since after read
// before and then, from some turn on, now, without an error.
func (s *suite) keepsReadingEither(pod, container, before, now string, after time.Time) error {
	turns, err := s.node.agentTurns(namespace, pod, container)
	if err != nil {
		return err
	}
	want := before
	for _, t := range since(turns, after) {
		if t.Prompt == now {
			want = now
		}
		if t.Prompt != want || t.Error != "" {
			return fmt.Errorf("%s turn %d at %s read %.19s, want %.19s; error %q", container, t.Turn, t.At.Format(time.TimeOnly), t.Prompt, want, t.Error)
		}
	}
	return nil
}

// keepsReading checks that every turn of container from after to now read
// prompt, without an error.
func (s *suite) keepsReading(pod, container, prompt string, after time.Time) error {
	turns, err := s.node.agentTurns(namespace, pod, container)
	if err != nil {
		return err
	}
	turns = since(turns, after)
	if len(turns) == 0 {
		return fmt.Errorf("%s logged no turn since %s", container, after.Format(time.TimeOnly))
	}
	for _, t := range turns {
		if t.Prompt != prompt || t.Error != "" {
			return fmt.Errorf("%s turn %d at %s read %.19s, want %.19s; error %q", container, t.Turn, t.At.Format(time.TimeOnly), t.Prompt, prompt, t.Error)
		}
	}
	return nil
}

func (s *suite) podReadsTheOperatorsRender(t *testing.T) {
	out, err := exec.Command(filepath.Join(s.bin, "kubectl-persona"), "render", "-f", filepath.Join(s.root, "config", "samples"),
		"--persona", persona, "--turn", filepath.Join(s.root, "test", "e2e", "testdata", "turn.json")).Output()
	if err != nil {
		t.Fatalf("kubectl-persona render -f config/samples: %v", err)
	}
	outside := digest(out)
	var prompt string
	err = waitFor(30*time.Second, "the agent's turn reading the operator's render", func() (bool, error) {
		var err error
		if prompt, _, err = s.renderedPrompt(); err != nil {
			return false, err
		}
		last, err := s.lastTurn(s.agentPod, mainAgent)
		if err != nil {
			return false, err
		}
		if last.Prompt != prompt || last.Render != outside || last.Error != "" {
			return false, fmt.Errorf("system-prompt.md %.19s in the pod, %.19s in the ConfigMap; "+
				"in the pod kubectl-persona render --bundle --turn prints %.19s, outside render -f config/samples prints %.19s; error %q",
				last.Prompt, prompt, last.Render, outside, last.Error)
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	peer, err := s.lastTurn(s.subPathPod, subPathPeer)
	if err != nil || peer.Prompt != prompt {
		t.Fatalf("the subPath container read %.19s (%v), want the operator's render %.19s", peer.Prompt, err, prompt)
	}
	s.firstPrompt = prompt
	t.Logf("system-prompt.md in the pod is the operator's render (%s); the per-turn render with --turn in the pod is the one outside (%s)", prompt, outside)
}

// edit changes an object the persona's render reads; n makes each edit new.
type edit struct {
	what  string
	apply func(n int) error
}

func (s *suite) edits() []edit {
	update := func(obj client.Object, change func()) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := s.c.Get(s.ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				return err
			}
			change()
			return s.c.Update(s.ctx, obj)
		})
	}
	return []edit{
		{"PromptLayer org-policy", func(n int) error {
			l := &v1alpha1.PromptLayer{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "org-policy"}}
			return update(l, func() {
				text := fmt.Sprintf("Follow the organization's security policy: never commit secrets. (policy revision %d)\n", n)
				l.Spec.Template = &text
			})
		}},
		{"parent Persona agentic", func(n int) error {
			p := &v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "agentic"}}
			return update(p, func() {
				p.Spec.Prompt = fmt.Sprintf("## Critical Rules\n1. Complete every task before stopping.\n%d. Re-read the task before the last commit.\n", n+1)
			})
		}},
		{"templateFrom ConfigMap agents-md", func(n int) error {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "agents-md"}}
			return update(cm, func() {
				cm.Data["AGENTS.md"] = fmt.Sprintf("# Project rules\nKeep commits small and run `make test` before pushing (rules revision %d).\n", n)
			})
		}},
	}
}

// editAndWait applies e and waits for the operator to render it and for the
// agent to read it; it returns how long each took from the edit.
func (s *suite) editAndWait(e edit, n int) (toConfigMap, toPod time.Duration, err error) {
	before, hash, err := s.renderedPrompt()
	if err != nil {
		return 0, 0, err
	}
	edited := time.Now()
	if err := e.apply(n); err != nil {
		return 0, 0, fmt.Errorf("edit the %s: %w", e.what, err)
	}
	var prompt string
	// Polled often: the operator takes about as long as waitFor's interval.
	err = waitForEvery(10*time.Millisecond, 30*time.Second, "the operator rendering the edit of the "+e.what, func() (bool, error) {
		p, h, err := s.renderedPrompt()
		prompt = p
		return err == nil && h != hash, err
	})
	if err != nil {
		return 0, 0, err
	}
	toConfigMap = time.Since(edited)
	if prompt == before {
		return 0, 0, fmt.Errorf("the edit of the %s left system-prompt.md as it was", e.what)
	}
	seen, err := s.waitSeen(s.agentPod, mainAgent, prompt, edited, 4*syncFrequency+30*time.Second)
	if err != nil {
		return 0, 0, fmt.Errorf("the edit of the %s: %w", e.what, err)
	}
	return toConfigMap, seen.Sub(edited), nil
}

// editCount is how many edits the latency is measured over: at least 20, or
// PERSONA_E2E_EDITS (make e2e-fast sets 3, one of each kind).
func editCount(t *testing.T) int {
	if v := os.Getenv("PERSONA_E2E_EDITS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("PERSONA_E2E_EDITS=%q: want a positive number", v)
		}
		return n
	}
	return 21
}

func (s *suite) editsReachTheRunningPod(t *testing.T) {
	edits := s.edits()
	var toConfigMap, toPod []time.Duration
	for i := 0; i < editCount(t); i++ {
		e := edits[i%len(edits)]
		leaveTimeForCleanup(t, 6*syncFrequency+30*time.Second)
		// An edit made right after the pod read the last one would always
		// wait a whole kubelet sync period; real edits come at any point of it.
		time.Sleep(rand.N(syncFrequency))
		cm, pod, err := s.editAndWait(e, i+1)
		if err != nil {
			t.Fatal(err)
		}
		toConfigMap, toPod = append(toConfigMap, cm), append(toPod, pod)
		t.Logf("edit %2d of the %s: in the ConfigMap after %s, read in the pod after %s", i+1, e.what, cm.Round(time.Millisecond), pod.Round(time.Millisecond))
	}
	t.Logf("edit -> read in the pod over %d edits: p50 %s, p99 %s, max %s (edit -> ConfigMap: p50 %s, p99 %s); kubelet syncFrequency %s, configMapAndSecretChangeDetectionStrategy %s, agent turn every 500ms",
		len(toPod), percentile(toPod, 50), percentile(toPod, 99), percentile(toPod, 100), percentile(toConfigMap, 50), percentile(toConfigMap, 99), syncFrequency, changeDetection)

	now, _, err := s.renderedPrompt()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.keepsReading(s.subPathPod, subPathPeer, s.firstPrompt, time.Time{}); err != nil {
		t.Errorf("the subPath mount changed: %v", err)
	}
	if now == s.firstPrompt {
		t.Errorf("the edits left the prompt as it was at start")
	}
	s.noRestarts(t, nil)
	t.Logf("the volume mount followed every edit; the subPath mount kept the prompt of the container's start, %.19s, with no container restarted", s.firstPrompt)
}

// noRestarts fails when a container of the agent pod restarted or changed
// from the ids in before (when given); it returns the container ids.
func (s *suite) noRestarts(t *testing.T, before map[string]string) map[string]string {
	t.Helper()
	var pod corev1.Pod
	if err := s.c.Get(s.ctx, client.ObjectKey{Namespace: namespace, Name: s.agentPod}, &pod); err != nil {
		t.Fatal(err)
	}
	if err := s.running(&pod); err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, cs := range pod.Status.ContainerStatuses {
		ids[cs.Name] = cs.ContainerID
		if cs.RestartCount != 0 {
			t.Errorf("container %s restarted %d times", cs.Name, cs.RestartCount)
		}
		if before != nil && before[cs.Name] != cs.ContainerID {
			t.Errorf("container %s is now %s, was %s", cs.Name, cs.ContainerID, before[cs.Name])
		}
	}
	return ids
}

func (s *suite) stuckPersonaLeavesTheLastGoodPrompt(t *testing.T) {
	good, hash, err := s.renderedPrompt()
	if err != nil {
		t.Fatal(err)
	}
	var saved v1alpha1.PersonaSpec
	p := &v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: persona}}
	change := func(f func()) {
		t.Helper()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := s.c.Get(s.ctx, client.ObjectKeyFromObject(p), p); err != nil {
				return err
			}
			f()
			return s.c.Update(s.ctx, p)
		})
		if err != nil {
			t.Fatalf("update persona %s: %v", persona, err)
		}
	}
	// A change that would reach the prompt, with a layer that does not exist.
	edited := time.Now()
	change(func() {
		saved = *p.Spec.DeepCopy()
		p.Spec.Prompt += "This line must never reach the pod.\n"
		p.Spec.Layers = append(p.Spec.Layers, v1alpha1.LayerReference{Name: "e2e-missing-layer"})
	})
	reverted := false
	defer func() {
		if !reverted {
			change(func() { p.Spec = saved })
		}
	}()
	if err := s.waitCondition(v1alpha1.ReadyCondition, metav1.ConditionFalse, v1alpha1.ReferenceNotFoundReason); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2*syncFrequency + time.Second)
	if _, h, err := s.renderedPrompt(); err != nil || h != hash {
		t.Fatalf("the stuck persona's ConfigMap changed: content hash %s (%v), was %s", h, err, hash)
	}
	if err := s.keepsReading(s.agentPod, mainAgent, good, edited); err != nil {
		t.Fatalf("the pod lost the last good prompt: %v", err)
	}
	change(func() { p.Spec = saved })
	reverted = true
	if err := s.waitCondition(v1alpha1.ReadyCondition, metav1.ConditionTrue, v1alpha1.RenderedReason); err != nil {
		t.Fatal(err)
	}
	t.Logf("with persona %s stuck on a missing PromptLayer (Ready=False %s) for %s, the pod kept reading the last good prompt %.19s",
		persona, v1alpha1.ReferenceNotFoundReason, time.Since(edited).Round(time.Second), good)
}

// waitCondition waits for the persona's condition, of its latest generation.
func (s *suite) waitCondition(condition string, status metav1.ConditionStatus, reason string) error {
	return waitFor(30*time.Second, fmt.Sprintf("persona %s %s=%s %s", persona, condition, status, reason), func() (bool, error) {
		var p v1alpha1.Persona
		if err := s.c.Get(s.ctx, client.ObjectKey{Namespace: namespace, Name: persona}, &p); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(p.Status.Conditions, condition)
		if c == nil || p.Status.ObservedGeneration != p.Generation {
			return false, fmt.Errorf("status of generation %d, %+v", p.Status.ObservedGeneration, c)
		}
		return c.Status == status && c.Reason == reason, fmt.Errorf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)
	})
}

func (s *suite) kubeletRestartKeepsThePrompt(t *testing.T) {
	ids := s.noRestarts(t, nil)
	prompt, _, err := s.renderedPrompt()
	if err != nil {
		t.Fatal(err)
	}
	// Killed, as a crash would. Without the kubelet the pod's containers run
	// on, with their files; an edit made now reaches them only once it is back.
	s.node.kubelet.kill()
	killed := time.Now()
	e := s.edits()[0]
	if err := e.apply(1000); err != nil {
		t.Fatalf("edit the %s: %v", e.what, err)
	}
	var edited string
	if err := waitFor(30*time.Second, "the operator rendering the edit of the "+e.what, func() (bool, error) {
		p, _, err := s.renderedPrompt()
		edited = p
		return err == nil && p != prompt, err
	}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(killed.Add(2*syncFrequency + time.Second)))
	if err := s.keepsReading(s.agentPod, mainAgent, prompt, killed); err != nil {
		t.Fatalf("without the kubelet: %v", err)
	}
	restarted := time.Now()
	if err := s.node.startKubelet(); err != nil {
		t.Fatal(err)
	}
	if err := s.node.waitReady(s.ctx, s.c, restarted); err != nil {
		t.Fatal(err)
	}
	seen, err := s.waitSeen(s.agentPod, mainAgent, edited, restarted, 4*syncFrequency+30*time.Second)
	if err != nil {
		t.Fatalf("after the kubelet's restart: %v", err)
	}
	if err := s.keepsReadingEither(s.agentPod, mainAgent, prompt, edited, killed); err != nil {
		t.Fatalf("across the kubelet's restart: %v", err)
	}
	s.noRestarts(t, ids)
	t.Logf("with the kubelet killed for %s the pod kept reading its prompt; the edit made meanwhile was read %s after the kubelet started again, in the same containers",
		restarted.Sub(killed).Round(time.Second), seen.Sub(restarted).Round(time.Millisecond))
}

func (s *suite) deletedPersona(t *testing.T) {
	var p v1alpha1.Persona
	if err := s.c.Get(s.ctx, client.ObjectKey{Namespace: namespace, Name: persona}, &p); err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	cmKey := client.ObjectKey{Namespace: namespace, Name: delivery.ConfigMapName(persona)}
	if err := s.c.Get(s.ctx, cmKey, &cm); err != nil {
		t.Fatal(err)
	}
	if owner := metav1.GetControllerOf(&cm); owner == nil || owner.UID != p.UID {
		t.Fatalf("ConfigMap %s is not controlled by persona %s: %v", cm.Name, persona, cm.OwnerReferences)
	}
	last := digest([]byte(cm.Data["system-prompt.md"]))

	deleted := time.Now()
	if err := s.c.Delete(s.ctx, &p); err != nil {
		t.Fatal(err)
	}
	// Nothing but the garbage collector deletes an owned object here.
	if err := waitFor(30*time.Second, "the garbage collector deleting ConfigMap "+cm.Name, func() (bool, error) {
		err := s.c.Get(s.ctx, cmKey, &corev1.ConfigMap{})
		return apierrors.IsNotFound(err), err
	}); err != nil {
		t.Fatal(err)
	}
	collected := time.Since(deleted)

	// A new pod for the persona, from the Deployment's template.
	late := s.latePod(t)
	time.Sleep(2*syncFrequency + time.Second)
	if err := s.keepsReading(s.agentPod, mainAgent, last, deleted); err != nil {
		t.Fatalf("the running pod lost its files when the ConfigMap was deleted: %v", err)
	}
	if err := s.c.Get(s.ctx, client.ObjectKeyFromObject(late), late); err != nil {
		t.Fatal(err)
	}
	waiting := s.running(late)
	if waiting == nil || !strings.Contains(waiting.Error(), "ContainerCreating") {
		t.Fatalf("the new pod without its ConfigMap: %v, want it waiting in ContainerCreating", waiting)
	}

	recreated := time.Now()
	back := &v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: persona}, Spec: p.Spec}
	if err := s.c.Create(s.ctx, back); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(30*time.Second, "the operator rendering persona "+persona+" again", func() (bool, error) {
		p, _, err := s.renderedPrompt()
		return err == nil && p == last, fmt.Errorf("prompt %.19s (%v)", p, err)
	}); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(2*time.Minute, "the new pod running", func() (bool, error) {
		if err := s.c.Get(s.ctx, client.ObjectKeyFromObject(late), late); err != nil {
			return false, err
		}
		err := s.running(late)
		return err == nil, err
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.waitSeen(late.Name, mainAgent, last, recreated, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("the garbage collector deleted ConfigMap %s %s after its Persona; the running pod kept reading %.19s; the new pod waited in ContainerCreating and ran %s after the Persona was back",
		cm.Name, collected.Round(time.Millisecond), last, time.Since(recreated).Round(time.Second))
}

// latePod creates a pod like the Deployment's, with its one agent container.
func (s *suite) latePod(t *testing.T) *corev1.Pod {
	var pod corev1.Pod
	if err := s.c.Get(s.ctx, client.ObjectKey{Namespace: namespace, Name: s.agentPod}, &pod); err != nil {
		t.Fatal(err)
	}
	late := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "agent-after-delete"}, Spec: *pod.Spec.DeepCopy()}
	late.Spec.NodeName = ""
	late.Spec.Containers = late.Spec.Containers[:1]
	if late.Spec.Containers[0].Name != mainAgent {
		t.Fatalf("the Deployment's first container is %s, want %s", late.Spec.Containers[0].Name, mainAgent)
	}
	if err := s.c.Create(s.ctx, late); err != nil {
		t.Fatal(err)
	}
	return late
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// percentile is the nearest-rank percentile p of ds.
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sorted := append([]time.Duration(nil), ds...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	rank := (p*len(sorted) + 99) / 100
	if rank < 1 {
		rank = 1
	}
	return sorted[rank-1].Round(time.Millisecond)
}
