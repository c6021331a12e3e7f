package e2e

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/inject"
)

// The Deployments of the injection checks (docs/delivery.md#injection): the
// sample agent Deployment with its label and without the overlay's
// hand-written volume, once with snapshots, once live.
const (
	snapshotAgents   = "injected-agent"
	snapshotReplicas = 2
	liveAgents       = "live-agent"
	pinnedAgent      = "pinned-agent"
)

// injection is what the injection checks share: the revisions the snapshot
// pods ran, and the digest of system-prompt.md in each snapshot.
type injection struct {
	livePod       string
	snapshotPods  []string
	first, second int64
	prompts       map[int64]string
}

// sampleTemplate is a copy of the pod template of config/samples' agent
// Deployment as the overlay applied it, labelled for the persona.
func (s *suite) sampleTemplate(t *testing.T) *corev1.PodTemplateSpec {
	t.Helper()
	var sample appsv1.Deployment
	if err := s.c.Get(s.ctx, client.ObjectKey{Namespace: namespace, Name: agentApp}, &sample); err != nil {
		t.Fatal(err)
	}
	template := sample.Spec.Template.DeepCopy()
	if template.Labels[inject.PersonaLabel] != persona {
		t.Fatalf("the sample Deployment's pod template has the label %s=%q, want %q", inject.PersonaLabel, template.Labels[inject.PersonaLabel], persona)
	}
	return template
}

// agentDeployment is config/samples' agent Deployment as the overlay runs it,
// without its hand-written volume: one container whose agent reads
// $PERSONA_PROMPT_FILE each turn, with the annotations given on its pod
// template.
func (s *suite) agentDeployment(t *testing.T, name string, replicas int32, annotations map[string]string) *appsv1.Deployment {
	t.Helper()
	template := s.sampleTemplate(t)
	template.Labels[agentLabel] = name
	template.Annotations = annotations
	template.Spec.Volumes = nil
	var agent, cheap *corev1.Container
	for i := range template.Spec.Containers {
		if c := &template.Spec.Containers[i]; c.Name == mainAgent {
			agent = c
		}
	}
	var peer appsv1.Deployment
	if err := s.c.Get(s.ctx, client.ObjectKey{Namespace: namespace, Name: subPathApp}, &peer); err != nil {
		t.Fatal(err)
	}
	for i := range peer.Spec.Template.Spec.Containers {
		if c := &peer.Spec.Template.Spec.Containers[i]; c.Name == subPathPeer {
			cheap = c
		}
	}
	if agent == nil || cheap == nil {
		t.Fatalf("the overlay's Deployments have no containers %s and %s", mainAgent, subPathPeer)
	}
	container := *agent.DeepCopy()
	container.Command = []string{"/agent", "--prompt-env=" + inject.EnvPromptFile, "--bundle="}
	container.VolumeMounts = nil
	// Without a render per turn, the subPath container's share is enough.
	container.Resources = *cheap.Resources.DeepCopy()
	template.Spec.Containers = []corev1.Container{container}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{agentLabel: name}},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{agentLabel: name}},
			Template: *template,
		},
	}
}

// currentRevision is the persona's status.currentRevision.
func (s *suite) currentRevision() (int64, error) {
	var p v1alpha1.Persona
	if err := s.c.Get(s.ctx, client.ObjectKey{Namespace: namespace, Name: persona}, &p); err != nil {
		return 0, err
	}
	return p.Status.CurrentRevision, nil
}

// snapshotPrompt is the digest of system-prompt.md in the snapshot of
// revision n, which must be immutable.
func (s *suite) snapshotPrompt(n int64) (string, error) {
	var cm corev1.ConfigMap
	if err := s.c.Get(s.ctx, client.ObjectKey{Namespace: namespace, Name: delivery.SnapshotName(persona, n)}, &cm); err != nil {
		return "", err
	}
	if cm.Immutable == nil || !*cm.Immutable {
		return "", fmt.Errorf("snapshot %s is not immutable", cm.Name)
	}
	return digest([]byte(cm.Data["system-prompt.md"])), nil
}

// agentPods waits for the want pods labelled app to run and their agents
// to have logged a turn, and returns them.
func (s *suite) agentPods(name string, want int) ([]corev1.Pod, error) {
	var pods corev1.PodList
	err := waitFor(2*time.Minute, fmt.Sprintf("%d pods %s=%s running", want, agentLabel, name), func() (bool, error) {
		if err := s.c.List(s.ctx, &pods, client.InNamespace(namespace), client.MatchingLabels{agentLabel: name}); err != nil {
			return false, err
		}
		if len(pods.Items) != want {
			return false, fmt.Errorf("%d pods", len(pods.Items))
		}
		for i := range pods.Items {
			pod := &pods.Items[i]
			if err := s.running(pod); err != nil {
				return false, err
			}
			if _, err := s.lastTurn(pod.Name, mainAgent); err != nil {
				return false, err
			}
		}
		return true, nil
	})
	return pods.Items, err
}

// promptVolume is the ConfigMap of the pod's persona-prompt volume.
func promptVolume(pod *corev1.Pod) string {
	for _, v := range pod.Spec.Volumes {
		if v.Name == inject.VolumeName && v.ConfigMap != nil {
			return v.ConfigMap.Name
		}
	}
	return ""
}

// readsSnapshot says why pod is not an injected pod of revision n whose
// agent read prompt, that snapshot's system-prompt.md, in its last turn.
func (s *suite) readsSnapshot(pod *corev1.Pod, n int64, prompt string) error {
	want := strconv.FormatInt(n, 10)
	if l, a := pod.Labels[inject.RevisionLabel], pod.Annotations[inject.RevisionAnnotation]; l != want || a != want {
		return fmt.Errorf("pod %s has the revision label %q and annotation %q, want %q", pod.Name, l, a, want)
	}
	if v, snapshot := promptVolume(pod), delivery.SnapshotName(persona, n); v != snapshot {
		return fmt.Errorf("pod %s mounts %q, want the snapshot %s", pod.Name, v, snapshot)
	}
	last, err := s.lastTurn(pod.Name, mainAgent)
	if err != nil {
		return err
	}
	if last.Prompt != prompt || last.Revision != want || last.Error != "" {
		return fmt.Errorf("the agent of pod %s read %.19s with PERSONA_REVISION %q in turn %d, want %.19s of snapshot %d; error %q",
			pod.Name, last.Prompt, last.Revision, last.Turn, prompt, n, last.Error)
	}
	return nil
}

// injectedPodsReadTheirPrompt: a labelled Deployment's pods get the snapshot
// of the current revision, whose system-prompt.md their agents read through
// PERSONA_PROMPT_FILE, with PERSONA_REVISION their revision label; a live
// pod gets persona-<name>, with no revision.
func (s *suite) injectedPodsReadTheirPrompt(t *testing.T) {
	n, err := s.currentRevision()
	if err != nil || n == 0 {
		t.Fatalf("persona %s has current revision %d (%v)", persona, n, err)
	}
	snapshot, err := s.snapshotPrompt(n)
	if err != nil {
		t.Fatal(err)
	}
	live, _, err := s.renderedPrompt()
	if err != nil {
		t.Fatal(err)
	}
	if snapshot != live {
		t.Fatalf("the snapshot of the current revision %d has system-prompt.md %.19s, the live ConfigMap %.19s", n, snapshot, live)
	}
	d := s.agentDeployment(t, snapshotAgents, snapshotReplicas, nil)
	// A canary: one new pod at a time, and no old one goes before it runs.
	d.Spec.MinReadySeconds = 2
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
		MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0)),
	}}
	created := time.Now()
	for _, d := range []*appsv1.Deployment{d, s.agentDeployment(t, liveAgents, 1, map[string]string{inject.DeliveryAnnotation: inject.DeliveryLive})} {
		if err := s.c.Create(s.ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	pods, err := s.agentPods(snapshotAgents, snapshotReplicas)
	if err != nil {
		t.Fatal(err)
	}
	started := time.Since(created)
	s.injection = &injection{first: n, prompts: map[int64]string{n: snapshot}}
	for i := range pods {
		if err := s.readsSnapshot(&pods[i], n, snapshot); err != nil {
			t.Fatal(err)
		}
		s.injection.snapshotPods = append(s.injection.snapshotPods, pods[i].Name)
	}
	livePods, err := s.agentPods(liveAgents, 1)
	if err != nil {
		t.Fatal(err)
	}
	pod := &livePods[0]
	if l, ok := pod.Labels[inject.RevisionLabel]; ok {
		t.Errorf("the live pod %s has the revision label %q", pod.Name, l)
	}
	if v := promptVolume(pod); v != delivery.ConfigMapName(persona) {
		t.Errorf("the live pod %s mounts %q, want %s", pod.Name, v, delivery.ConfigMapName(persona))
	}
	last, err := s.lastTurn(pod.Name, mainAgent)
	if err != nil || last.Prompt != live || last.Revision != "" || last.Error != "" {
		t.Fatalf("the agent of the live pod %s read %.19s with PERSONA_REVISION %q (%v, %q), want %.19s and none", pod.Name, last.Prompt, last.Revision, err, last.Error, live)
	}
	s.injection.livePod = pod.Name
	t.Logf("the %d pods of the labelled Deployment %s run %s after %s, and their agents read $%s, system-prompt.md of snapshot %d (%.19s), with %s=%d; the live pod %s reads persona-%s",
		len(pods), snapshotAgents, delivery.SnapshotName(persona, n), started.Round(time.Second), inject.EnvPromptFile, n, snapshot, inject.EnvRevision, n, pod.Name, persona)
}

// editReachesOnlyTheLivePod: a Persona edit reaches the live pod after the
// kubelet's sync, and never the snapshot pods, over the same syncs.
func (s *suite) editReachesOnlyTheLivePod(t *testing.T) {
	in := s.injection
	old := in.prompts[in.first]
	e := s.edits()[0]
	// As in EditsReachTheRunningPod, the edit comes at any point of a sync.
	time.Sleep(rand.N(syncFrequency))
	edited := time.Now()
	if err := e.apply(3000); err != nil {
		t.Fatalf("edit the %s: %v", e.what, err)
	}
	var next int64
	var prompt string
	if err := waitFor(30*time.Second, "a new current revision with the edit of the "+e.what, func() (bool, error) {
		n, err := s.currentRevision()
		if err != nil || n == in.first {
			return false, fmt.Errorf("current revision %d (%v)", n, err)
		}
		live, _, err := s.renderedPrompt()
		if err != nil {
			return false, err
		}
		snapshot, err := s.snapshotPrompt(n)
		if err != nil || snapshot != live {
			return false, fmt.Errorf("snapshot %d has %.19s (%v), the live ConfigMap %.19s", n, snapshot, err, live)
		}
		next, prompt = n, snapshot
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	if prompt == old {
		t.Fatalf("the edit of the %s left system-prompt.md as it was", e.what)
	}
	seen, err := s.waitSeen(in.livePod, mainAgent, prompt, edited, 3*time.Minute)
	if err != nil {
		t.Fatalf("the live pod: %v", err)
	}
	if err := s.keepsReadingEither(in.livePod, mainAgent, old, prompt, edited); err != nil {
		t.Errorf("the live pod: %v", err)
	}
	// The kubelet syncs each pod at least every 1.5 syncFrequency.
	time.Sleep(time.Until(edited.Add(2*syncFrequency + time.Second)))
	for _, pod := range in.snapshotPods {
		if err := s.keepsReading(pod, mainAgent, old, edited); err != nil {
			t.Errorf("the snapshot pod %s: %v", pod, err)
		}
	}
	if snapshot, err := s.snapshotPrompt(in.first); err != nil || snapshot != old {
		t.Errorf("snapshot %d now has %.19s (%v), was %.19s", in.first, snapshot, err, old)
	}
	in.second, in.prompts[next] = next, prompt
	t.Logf("the edit of the %s (revision %d -> %d) was read in the live pod %s after %s (kubelet syncFrequency %s); the snapshot pods kept reading revision %d's %.19s for the %s since the edit",
		e.what, in.first, next, in.livePod, seen.Sub(edited).Round(time.Millisecond), syncFrequency, in.first, old, time.Since(edited).Round(time.Second))
}

// rollingUpdateCanariesTheRevision sets the pod template annotation
// prompts.persona-operator.dev/revision to the new revision, as a restart
// does, and watches the rolling update: the old ReplicaSet's pods stay on the
// old revision and the new one's get exactly the new one, each agent reading
// its own snapshot, until the rollout completes.
func (s *suite) rollingUpdateCanariesTheRevision(t *testing.T) {
	in := s.injection
	want := strconv.FormatInt(in.second, 10)
	d := &appsv1.Deployment{}
	key := client.ObjectKey{Namespace: namespace, Name: snapshotAgents}
	started := time.Now()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := s.c.Get(s.ctx, key, d); err != nil {
			return err
		}
		if d.Spec.Template.Annotations == nil {
			d.Spec.Template.Annotations = map[string]string{}
		}
		d.Spec.Template.Annotations[inject.RevisionAnnotation] = want
		return s.c.Update(s.ctx, d)
	}); err != nil {
		t.Fatal(err)
	}
	// violation ends the wait: a pod on a revision other than its
	// ReplicaSet's, or an agent reading another snapshot.
	var violation error
	var polls, mixed, mixedTurns, most int
	turns := map[int64]int{}
	newPods := map[string]bool{}
	err := waitForEvery(50*time.Millisecond, 3*time.Minute, "the rollout of Deployment "+snapshotAgents, func() (bool, error) {
		polls++
		var sets appsv1.ReplicaSetList
		if err := s.c.List(s.ctx, &sets, client.InNamespace(namespace), client.MatchingLabels{agentLabel: snapshotAgents}); err != nil {
			return false, err
		}
		revisionOf := map[string]int64{}
		for _, rs := range sets.Items {
			switch a, ok := rs.Spec.Template.Annotations[inject.RevisionAnnotation]; {
			case !ok:
				revisionOf[rs.Name] = in.first
			case a == want:
				revisionOf[rs.Name] = in.second
			default:
				return false, fmt.Errorf("ReplicaSet %s's template names revision %q", rs.Name, a)
			}
		}
		var pods corev1.PodList
		if err := s.c.List(s.ctx, &pods, client.InNamespace(namespace), client.MatchingLabels{agentLabel: snapshotAgents}); err != nil {
			return false, err
		}
		counts, read := map[int64]int{}, map[int64]int{}
		active := 0
		for i := range pods.Items {
			pod := &pods.Items[i]
			owner := metav1.GetControllerOf(pod)
			if owner == nil {
				continue
			}
			n, ok := revisionOf[owner.Name]
			if !ok {
				// A ReplicaSet made since the list above.
				return false, nil
			}
			counts[n]++
			if got := pod.Labels[inject.RevisionLabel]; got != strconv.FormatInt(n, 10) {
				violation = fmt.Errorf("pod %s of ReplicaSet %s (revision %d) has the revision label %q", pod.Name, owner.Name, n, got)
				return true, nil
			}
			if n == in.second {
				newPods[pod.Name] = true
			}
			if pod.DeletionTimestamp != nil {
				continue
			}
			// maxSurge bounds the pods not being deleted.
			active++
			if s.running(pod) != nil {
				continue
			}
			if _, err := s.lastTurn(pod.Name, mainAgent); err != nil {
				continue
			}
			if err := s.readsSnapshot(pod, n, in.prompts[n]); err != nil {
				violation = err
				return true, nil
			}
			read[n]++
		}
		most = max(most, active)
		if counts[in.first] > 0 && counts[in.second] > 0 {
			mixed++
			if read[in.first] > 0 && read[in.second] > 0 {
				mixedTurns++
			}
		}
		for n, c := range read {
			turns[n] += c
		}
		if err := s.c.Get(s.ctx, key, d); err != nil {
			return false, err
		}
		st := d.Status
		complete := st.ObservedGeneration == d.Generation && st.UpdatedReplicas == snapshotReplicas && st.AvailableReplicas == snapshotReplicas && st.Replicas == snapshotReplicas
		return complete && counts[in.first] == 0, fmt.Errorf("%d pods on revision %d, %d on %d; %d updated, %d available", counts[in.first], in.first, counts[in.second], in.second, st.UpdatedReplicas, st.AvailableReplicas)
	})
	if err != nil {
		t.Fatal(err)
	}
	if violation != nil {
		t.Fatalf("during the rollout: %v", violation)
	}
	took := time.Since(started)
	if mixedTurns == 0 {
		t.Fatalf("over %d looks at the rollout, none saw agents of both revisions reading their snapshots (%d saw pods of both)", polls, mixed)
	}
	if len(newPods) < snapshotReplicas || most > snapshotReplicas+1 {
		t.Fatalf("%d new pods, at most %d pods not being deleted at once; want %d new pods and at most maxSurge 1 above %d", len(newPods), most, snapshotReplicas, snapshotReplicas)
	}
	in.snapshotPods = in.snapshotPods[:0]
	for pod := range newPods {
		in.snapshotPods = append(in.snapshotPods, pod)
	}
	t.Logf("the rolling update to revision %d (maxSurge 1, maxUnavailable 0, minReadySeconds %d, %d replicas) completed %s after the annotation was set; over %d looks (%d with pods of both ReplicaSets, %d with agents of both reading), the old ReplicaSet's pods were on revision %d and the new one's on %d, each reading its snapshot",
		in.second, d.Spec.MinReadySeconds, snapshotReplicas, took.Round(100*time.Millisecond), polls, mixed, mixedTurns, in.first, in.second)
}

// agentsStatusCountsPodsByRevision: status.agents counts the rolled-out
// Deployment's pods on the new revision, once the old ones are gone; then,
// with a pod whose template pins the old revision, both revisions. The live
// pod is never counted.
func (s *suite) agentsStatusCountsPodsByRevision(t *testing.T) {
	in := s.injection
	rolledOut := &v1alpha1.AgentsStatus{Current: snapshotReplicas, Revisions: []v1alpha1.RevisionAgents{
		{Revision: in.second, Pods: snapshotReplicas},
	}}
	start := time.Now()
	if err := s.waitAgentsStatus(rolledOut); err != nil {
		t.Fatalf("after the rollout: %v", err)
	}
	afterRollout := time.Since(start)

	d := s.agentDeployment(t, pinnedAgent, 1, map[string]string{inject.RevisionAnnotation: strconv.FormatInt(in.first, 10)})
	pinned := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: pinnedAgent,
		Labels: d.Spec.Template.Labels, Annotations: d.Spec.Template.Annotations}, Spec: d.Spec.Template.Spec}
	created := time.Now()
	if err := s.c.Create(s.ctx, pinned); err != nil {
		t.Fatal(err)
	}
	pods, err := s.agentPods(pinnedAgent, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.readsSnapshot(&pods[0], in.first, in.prompts[in.first]); err != nil {
		t.Fatalf("the pod pinned to revision %d: %v", in.first, err)
	}
	both := &v1alpha1.AgentsStatus{Current: snapshotReplicas, Revisions: []v1alpha1.RevisionAgents{
		{Revision: in.second, Pods: snapshotReplicas}, {Revision: in.first, Pods: 1},
	}}
	if err := s.waitAgentsStatus(both); err != nil {
		t.Fatalf("with the pinned pod: %v", err)
	}
	t.Logf("status.agents counted the %d pods on revision %d %s after the rollout completed, and with the pod pinned to revision %d both revisions %s after its create; the live pod was never counted (--agents-status-interval 30s)",
		snapshotReplicas, in.second, afterRollout.Round(time.Second), in.first, time.Since(created).Round(time.Second))
	s.removeInjectionAgents(t)
}

// waitAgentsStatus waits for the persona's status.agents to be want: it is
// written at most once every 30 s (--agents-status-interval) per Persona.
func (s *suite) waitAgentsStatus(want *v1alpha1.AgentsStatus) error {
	return waitFor(2*time.Minute, "status.agents of persona "+persona, func() (bool, error) {
		var p v1alpha1.Persona
		if err := s.c.Get(s.ctx, client.ObjectKey{Namespace: namespace, Name: persona}, &p); err != nil {
			return false, err
		}
		return reflect.DeepEqual(p.Status.Agents, want), fmt.Errorf("status.agents %+v, want %+v", p.Status.Agents, want)
	})
}

// removeInjectionAgents deletes what the injection checks made, and waits
// for their pods to be gone, so that the later checks have the node to
// themselves.
func (s *suite) removeInjectionAgents(t *testing.T) {
	for _, o := range []client.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: snapshotAgents}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: liveAgents}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: pinnedAgent}},
	} {
		if err := s.c.Delete(s.ctx, o, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	if err := waitFor(time.Minute, "the injection checks' pods gone", func() (bool, error) {
		for _, app := range []string{snapshotAgents, liveAgents, pinnedAgent} {
			var pods corev1.PodList
			if err := s.c.List(s.ctx, &pods, client.InNamespace(namespace), client.MatchingLabels{agentLabel: app}); err != nil {
				return false, err
			}
			if len(pods.Items) > 0 {
				return false, fmt.Errorf("%d pods of %s", len(pods.Items), app)
			}
		}
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
}
