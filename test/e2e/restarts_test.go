package e2e

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/controller"
	"github.com/persona-operator/persona-operator/internal/delivery"
)

// Restarts on change (docs/delivery.md#restarts-on-change), on the node:
// agents that read their prompt once, at start, in a namespace of their own
// so that a halt there is theirs alone.
const (
	restartNamespace = "e2e-restarts"
	// restartPersona is the Persona of the agents of the first two checks.
	restartPersona = "restarts"
	// fleetPersona is the Persona of the fleet of restartWavesOfTwenty.
	fleetPersona = "fleet"
	fleetSize    = 20
	// partOf labels every workload of these checks, for their cleanup.
	partOf = "app.kubernetes.io/part-of"
	// refusal is what the refusing agent will not start with.
	refusal = "UNSUPPORTED-DIRECTIVE"
	// restartPolicyName is the chart's ValidatingAdmissionPolicy.
	restartPolicyName = "persona-operator-restart-workloads"
)

// The agents of the first two checks: one whose pods get the prompt
// injected, one that mounts the live ConfigMap itself and names its Persona
// on its metadata, and one whose agent refuses a prompt holding refusal.
const (
	injectedAgent = "restart-injected"
	mountedAgent  = "restart-mounted"
	refusingAgent = "restart-refusing"
	// lateAgent opts in while a halt holds its Persona's cause.
	lateAgent = "restart-late"
	// heldFor is how long a held restart is watched not to happen: a
	// restart the limit allows is admitted within a second.
	heldFor = 5 * time.Second
)

// helmUpgradeEnablesRestarts turns restarts on in the running release as a
// Helm user does, with the value docs/install.md names.
func (s *suite) helmUpgradeEnablesRestarts(t *testing.T) {
	if out, err := s.helm("upgrade", helmRelease, filepath.Join(s.root, "dist", "chart"), "-n", installNamespace,
		"--reuse-values", "--set", "restartWorkloads.enabled=true"); err != nil {
		t.Fatalf("helm upgrade --set restartWorkloads.enabled=true: %v: %s", err, out)
	}
	if err := s.waitManagerReplicas(); err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := s.c.Get(s.ctx, client.ObjectKey{Namespace: installNamespace, Name: managerDeployment}, &d); err != nil {
		t.Fatal(err)
	}
	if args := d.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--restart-workloads") {
		t.Fatalf("the manager's args after the upgrade are %v, want --restart-workloads among them", args)
	}
	if err := s.c.Get(s.ctx, client.ObjectKey{Name: restartPolicyName}, &admissionregistrationv1.ValidatingAdmissionPolicy{}); err != nil {
		t.Fatalf("the policy that bounds the restarts: %v", err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: restartNamespace}}
	if err := s.c.Create(s.ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// The ServiceAccount controller makes it; pods wait for it.
	if err := waitFor(time.Minute, "ServiceAccount "+restartNamespace+"/default", func() (bool, error) {
		err := s.c.Get(s.ctx, client.ObjectKey{Namespace: restartNamespace, Name: "default"}, &corev1.ServiceAccount{})
		return err == nil, err
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("helm upgrade --reuse-values --set restartWorkloads.enabled=true: both replicas run with --restart-workloads, and the policy %s is in place", restartPolicyName)
}

// restartRollsOutTheNewPrompt: an edit of the Persona of agents that read
// their prompt once reaches them through a rollout of their Deployments,
// both for injected pods and for a hand-mounted ConfigMap.
func (s *suite) restartRollsOutTheNewPrompt(t *testing.T) {
	p := &v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: restartNamespace, Name: restartPersona},
		Spec: taskPrompt("Fix the failing test, then stop. (prompt 1)\n")}
	if err := s.c.Create(s.ctx, p); err != nil {
		t.Fatal(err)
	}
	first, err := s.waitRevision(restartPersona, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []*appsv1.Deployment{
		restartDeployment(injectedAgent, restartPersona, true, agentContainer()),
		restartDeployment(mountedAgent, restartPersona, false, agentContainer()),
	} {
		if err := s.c.Create(s.ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	agents := []string{injectedAgent, mountedAgent}
	// Opting in restarts a workload once onto the current revision.
	if err := s.waitRestarted(agents, first, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	before, err := s.agentsReading(agents, first)
	if err != nil {
		t.Fatal(err)
	}

	edited := time.Now()
	if err := s.editPersona(restartPersona, "Fix the failing test, run the suite, then stop. (prompt 2)\n"); err != nil {
		t.Fatal(err)
	}
	second, err := s.waitRevision(restartPersona, first)
	if err != nil {
		t.Fatal(err)
	}
	prompt, err := s.livePrompt(restartPersona)
	if err != nil {
		t.Fatal(err)
	}
	if prompt == before[injectedAgent].prompt {
		t.Fatalf("revision %d left system-prompt.md as revision %d had it", second, first)
	}
	if err := s.waitRestarted(agents, second, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	rolledOut := time.Since(edited)
	after, err := s.agentsReading(agents, second)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range agents {
		a := after[name]
		if a.pod == before[name].pod {
			t.Errorf("%s still runs pod %s: no rollout", name, a.pod)
		}
		if a.prompt != prompt {
			t.Errorf("the new pod %s of %s read %.19s at start, want revision %d's %.19s", a.pod, name, a.prompt, second, prompt)
		}
	}
	t.Logf("edit of Persona %s -> both Deployments rolled out onto revision %d after %s; their new pods %s and %s read its prompt %.19s at start (one injected, one mounting %s by hand)",
		restartPersona, second, rolledOut.Round(time.Millisecond), after[injectedAgent].pod, after[mountedAgent].pod, prompt, delivery.ConfigMapName(restartPersona))
}

// failedRolloutHaltsTheRestarts: an edit whose new pods cannot become ready
// in one Deployment halts its cause's restarts in the namespace, with a
// Warning Event and the RolloutHalted condition, leaves Ready and the old
// pods as they were, holds the restart of a workload that opts in
// meanwhile, and the cause's next revision resumes them.
func (s *suite) failedRolloutHaltsTheRestarts(t *testing.T) {
	t.Cleanup(func() { s.deleteWorkloads(t, restartPersona) })
	refusing := restartDeployment(refusingAgent, restartPersona, true, agentContainer("--refuse="+refusal, "--ready-addr=:8080"))
	refusing.Spec.Template.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(8080)}},
		PeriodSeconds: 1, FailureThreshold: 1,
	}
	// Deployment's own deadline: a rollout without progress for 15s has
	// failed (ProgressDeadlineExceeded).
	refusing.Spec.ProgressDeadlineSeconds = ptr.To[int32](15)
	if err := s.c.Create(s.ctx, refusing); err != nil {
		t.Fatal(err)
	}
	agents := []string{injectedAgent, mountedAgent, refusingAgent}
	current, err := s.waitRevision(restartPersona, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.waitRestarted(agents, current, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	before, err := s.agentsReading(agents, current)
	if err != nil {
		t.Fatal(err)
	}

	edited := time.Now()
	if err := s.editPersona(restartPersona, "Fix the failing test, then stop. "+refusal+" (prompt 3)\n"); err != nil {
		t.Fatal(err)
	}
	broken, err := s.waitRevision(restartPersona, current)
	if err != nil {
		t.Fatal(err)
	}
	named := fmt.Sprintf("the rollout of Deployment %s/%s onto revision %d of Persona %s, made by Persona %s, failed (ProgressDeadlineExceeded)",
		restartNamespace, refusingAgent, broken, restartPersona, restartPersona)
	if err := s.waitEvent(restartPersona, corev1.EventTypeWarning, "RestartsHalted", named); err != nil {
		t.Fatalf("%v; %s", err, s.deploymentState(refusingAgent))
	}
	halted := time.Since(edited)
	// The restarts record the Event as they decide the halt; the Persona
	// controller writes the condition in the Persona's next status patch,
	// a reconcile later.
	if err := s.waitPersonaCondition(restartNamespace, restartPersona, v1alpha1.RolloutHaltedCondition, metav1.ConditionTrue, v1alpha1.RolloutFailedReason); err != nil {
		t.Error(err)
	}
	var p v1alpha1.Persona
	if err := s.c.Get(s.ctx, client.ObjectKey{Namespace: restartNamespace, Name: restartPersona}, &p); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ReadyCondition); c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.RenderedReason || p.Status.ObservedGeneration != p.Generation {
		t.Errorf("Persona %s is %+v at generation %d of %d, want Ready=True %s: a halt does not change Ready", restartPersona, c, p.Status.ObservedGeneration, p.Generation, v1alpha1.RenderedReason)
	}
	// The refusing agent's old pod serves on: its new ReplicaSet's pods
	// never became ready, so the rolling update kept it.
	var d appsv1.Deployment
	if err := s.c.Get(s.ctx, client.ObjectKey{Namespace: restartNamespace, Name: refusingAgent}, &d); err != nil {
		t.Fatal(err)
	}
	if c := deploymentCondition(&d, appsv1.DeploymentProgressing); c == nil || c.Reason != "ProgressDeadlineExceeded" {
		t.Errorf("Deployment %s's Progressing condition is %+v, want ProgressDeadlineExceeded", refusingAgent, c)
	}
	var old corev1.Pod
	if err := s.c.Get(s.ctx, client.ObjectKey{Namespace: restartNamespace, Name: before[refusingAgent].pod}, &old); err != nil {
		t.Fatalf("the refusing agent's old pod: %v", err)
	}
	if !podReady(&old) || old.DeletionTimestamp != nil {
		t.Errorf("the refusing agent's old pod %s is not Ready any more: %+v", old.Name, old.Status.Conditions)
	}
	if got := old.Annotations[delivery.RevisionAnnotation]; got != strconv.FormatInt(current, 10) {
		t.Errorf("the refusing agent's old pod %s has revision %q, want %d", old.Name, got, current)
	}
	// The other two, admitted with it in the same wave, rolled out.
	if err := s.waitRestarted([]string{injectedAgent, mountedAgent}, broken, time.Minute); err != nil {
		t.Error(err)
	}
	t.Logf("edit of Persona %s to revision %d, which %s refuses: the wave halted %s after the edit (RestartsHalted on the Persona, RolloutHalted=True, Ready=True); the refusing agent's old pod %s still serves revision %d",
		restartPersona, broken, refusingAgent, halted.Round(time.Millisecond), old.Name, current)

	// A workload that opts in now waits: its restart is of the halted cause.
	if err := s.c.Create(s.ctx, restartDeployment(lateAgent, restartPersona, true, agentContainer())); err != nil {
		t.Fatal(err)
	}
	held := time.Now()
	for time.Since(held) < heldFor {
		var d appsv1.Deployment
		if err := s.c.Get(s.ctx, client.ObjectKey{Namespace: restartNamespace, Name: lateAgent}, &d); err != nil {
			t.Fatal(err)
		}
		if got, ok := d.Annotations[v1alpha1.AppliedRevisionAnnotation]; ok {
			t.Fatalf("Deployment %s, opted in during the halt, was restarted onto revision %s", lateAgent, got)
		}
		time.Sleep(100 * time.Millisecond)
	}
	agents = append(agents, lateAgent)

	fixed := time.Now()
	if err := s.editPersona(restartPersona, "Fix the failing test, then stop. (prompt 4)\n"); err != nil {
		t.Fatal(err)
	}
	next, err := s.waitRevision(restartPersona, broken)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.waitPersonaCondition(restartNamespace, restartPersona, v1alpha1.RolloutHaltedCondition, metav1.ConditionFalse, v1alpha1.RolloutsResumedReason); err != nil {
		t.Error(err)
	}
	if err := s.waitRestarted(agents, next, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	prompt, err := s.livePrompt(restartPersona)
	if err != nil {
		t.Fatal(err)
	}
	after, err := s.agentsReading(agents, next)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range agents {
		if after[name].prompt != prompt {
			t.Errorf("the new pod %s of %s read %.19s at start, want revision %d's %.19s", after[name].pod, name, after[name].prompt, next, prompt)
		}
	}
	t.Logf("Deployment %s, opted in during the halt, was held for %s; the fix, revision %d, resumed the halted restarts (RolloutHalted=False %s): all four Deployments run it after %s",
		lateAgent, heldFor,
		next, v1alpha1.RolloutsResumedReason, time.Since(fixed).Round(time.Millisecond))
}

// restartWavesOfTwenty measures, for 20 Deployments of one Persona, the
// time from an edit to the last of them rolled out, in waves of
// --max-concurrent-restarts (its default), and checks that at no moment
// more are rolling out.
func (s *suite) restartWavesOfTwenty(t *testing.T) {
	p := &v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: restartNamespace, Name: fleetPersona},
		Spec: taskPrompt("Keep the fleet green. (prompt 1)\n")}
	if err := s.c.Create(s.ctx, p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.deleteWorkloads(t, fleetPersona) })
	first, err := s.waitRevision(fleetPersona, 0)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, fleetSize)
	for i := range names {
		names[i] = fmt.Sprintf("fleet-%02d", i)
	}
	// Created at once, in any order, as a GitOps sync does.
	var wg sync.WaitGroup
	errs := make([]error, fleetSize)
	for i, k := range rand.Perm(fleetSize) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.c.Create(s.ctx, restartDeployment(names[k], fleetPersona, true, pauseContainer()))
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	created := time.Now()
	if err := s.waitRestarted(names, first, 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d Deployments created at once, opted in: all restarted onto revision %d after %s", fleetSize, first, time.Since(created).Round(time.Millisecond))

	edited := time.Now()
	if err := s.editPersona(fleetPersona, "Keep the fleet green, and say so. (prompt 2)\n"); err != nil {
		t.Fatal(err)
	}
	var (
		want       = ""
		maxRolling int
		admitted   = map[string]time.Duration{}
		done       = map[string]time.Duration{}
	)
	err = waitForEvery(50*time.Millisecond, 5*time.Minute, fmt.Sprintf("%d Deployments rolled out onto the edit", fleetSize), func() (bool, error) {
		if want == "" {
			var p v1alpha1.Persona
			if err := s.c.Get(s.ctx, client.ObjectKey{Namespace: restartNamespace, Name: fleetPersona}, &p); err != nil {
				return false, err
			}
			if p.Status.CurrentRevision == first {
				return false, fmt.Errorf("persona %s still at revision %d", fleetPersona, first)
			}
			want = strconv.FormatInt(p.Status.CurrentRevision, 10)
		}
		// One list is one moment of the API server: a workload the manager
		// admitted after another completed shows with that completion.
		var list appsv1.DeploymentList
		if err := s.c.List(s.ctx, &list, client.InNamespace(restartNamespace), client.MatchingLabels{partOf: fleetPersona}); err != nil {
			return false, err
		}
		at := time.Since(edited)
		rolling := 0
		for i := range list.Items {
			d := &list.Items[i]
			if d.Annotations[v1alpha1.AppliedRevisionAnnotation] != want {
				continue
			}
			if _, ok := admitted[d.Name]; !ok {
				admitted[d.Name] = at
			}
			if rolledOut(d) && d.Spec.Template.Annotations[delivery.RevisionAnnotation] == want {
				if _, ok := done[d.Name]; !ok {
					done[d.Name] = at
				}
			} else {
				rolling++
			}
		}
		maxRolling = max(maxRolling, rolling)
		return len(done) == fleetSize, fmt.Errorf("%d admitted, %d rolling, %d rolled out", len(admitted), rolling, len(done))
	})
	if err != nil {
		t.Fatal(err)
	}
	last := slices.Max(mapValues(done))
	if limit := controller.DefaultMaxConcurrentRestarts; maxRolling > limit {
		t.Errorf("%d Deployments were rolling out at once, beyond --max-concurrent-restarts' %d", maxRolling, limit)
	}
	t.Logf("edit of Persona %s -> the last of %d Deployments (1 replica each) rolled out onto revision %s after %s, with at most %d rolling out at once (--max-concurrent-restarts %d); first rolled out after %s; admitted after %s",
		fleetPersona, fleetSize, want, last.Round(time.Millisecond), maxRolling, controller.DefaultMaxConcurrentRestarts,
		slices.Min(mapValues(done)).Round(time.Millisecond), roundAll(sortedValues(admitted)))
}

// restartDeployment is an opted-in Deployment of one replica for persona:
// injected, its pod template names the Persona; otherwise it names it on
// its metadata, and mounts the live ConfigMap itself.
func restartDeployment(name, persona string, injected bool, c corev1.Container) *appsv1.Deployment {
	labels := map[string]string{agentLabel: name, partOf: persona}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: restartNamespace, Name: name,
			Labels: map[string]string{agentLabel: name, partOf: persona, v1alpha1.RestartOnChangeLabel: "true"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{agentLabel: name, partOf: persona}},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](1),
					Containers:                    []corev1.Container{c},
				},
			},
		},
	}
	if injected {
		d.Spec.Template.Labels[delivery.PersonaLabel] = persona
		return d
	}
	d.Labels[delivery.PersonaLabel] = persona
	d.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "persona", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: delivery.ConfigMapName(persona)}}}}}
	d.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "persona", MountPath: "/etc/persona", ReadOnly: true}}
	return d
}

// agentContainer runs the suite's agent reading the prompt once, at start.
func agentContainer(args ...string) corev1.Container {
	return corev1.Container{
		Name: "agent", Image: agentImage, ImagePullPolicy: corev1.PullNever,
		Command:   append([]string{"/agent", "--once", "--bundle=", "--every=1s"}, args...),
		Resources: smallResources(),
	}
}

func pauseContainer() corev1.Container {
	return corev1.Container{Name: "pause", Image: pauseImage, ImagePullPolicy: corev1.PullNever, Resources: smallResources()}
}

func smallResources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("5m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
	}
}

// rolledOut reads d's status as kubectl rollout status does: the status of
// its generation, every replica updated and available, none old left.
func rolledOut(d *appsv1.Deployment) bool {
	st, replicas := d.Status, ptr.Deref(d.Spec.Replicas, 1)
	return st.ObservedGeneration >= d.Generation && st.UpdatedReplicas == replicas && st.Replicas == replicas && st.AvailableReplicas == replicas
}

func deploymentCondition(d *appsv1.Deployment, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range d.Status.Conditions {
		if d.Status.Conditions[i].Type == t {
			return &d.Status.Conditions[i]
		}
	}
	return nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitRestarted waits for each Deployment to be restarted onto revision n:
// both annotations name it, and its rollout is complete.
func (s *suite) waitRestarted(names []string, n int64, timeout time.Duration) error {
	want := strconv.FormatInt(n, 10)
	return waitFor(timeout, fmt.Sprintf("%v restarted onto revision %d", names, n), func() (bool, error) {
		for _, name := range names {
			var d appsv1.Deployment
			if err := s.c.Get(s.ctx, client.ObjectKey{Namespace: restartNamespace, Name: name}, &d); err != nil {
				return false, err
			}
			applied, template := d.Annotations[v1alpha1.AppliedRevisionAnnotation], d.Spec.Template.Annotations[delivery.RevisionAnnotation]
			if applied != want || template != want || !rolledOut(&d) {
				st := d.Status
				return false, fmt.Errorf("%s: applied-revision %q, pod template revision %q, %d replicas, %d updated, %d available at generation %d of %d",
					name, applied, template, st.Replicas, st.UpdatedReplicas, st.AvailableReplicas, st.ObservedGeneration, d.Generation)
			}
		}
		return true, nil
	})
}

// agentRead is a Deployment's one pod and the prompt its agent read.
type agentRead struct{ pod, prompt string }

// agentsReading waits for each Deployment to have one pod of revision n,
// running, whose agent logged a turn; it returns what each read.
func (s *suite) agentsReading(names []string, n int64) (map[string]agentRead, error) {
	out := map[string]agentRead{}
	want := strconv.FormatInt(n, 10)
	for _, name := range names {
		err := waitFor(time.Minute, fmt.Sprintf("the pod of %s on revision %d reading its prompt", name, n), func() (bool, error) {
			var pods corev1.PodList
			if err := s.c.List(s.ctx, &pods, client.InNamespace(restartNamespace), client.MatchingLabels{agentLabel: name}); err != nil {
				return false, err
			}
			var live []corev1.Pod
			for _, p := range pods.Items {
				if p.DeletionTimestamp == nil {
					live = append(live, p)
				}
			}
			if len(live) != 1 {
				return false, fmt.Errorf("%d pods", len(live))
			}
			pod := &live[0]
			if got := pod.Annotations[delivery.RevisionAnnotation]; got != want {
				return false, fmt.Errorf("pod %s has revision %q", pod.Name, got)
			}
			if err := s.running(pod); err != nil {
				return false, err
			}
			turns, err := s.node.agentTurns(restartNamespace, pod.Name, "agent")
			if err != nil || len(turns) == 0 {
				return false, fmt.Errorf("pod %s: no turn: %v", pod.Name, err)
			}
			// Read once: every turn reports the prompt of the start.
			for _, t := range turns {
				if t.Prompt != turns[0].Prompt || t.Error != "" {
					return false, fmt.Errorf("pod %s turn %d read %.19s, its first %.19s; error %q", pod.Name, t.Turn, t.Prompt, turns[0].Prompt, t.Error)
				}
			}
			out[name] = agentRead{pod: pod.Name, prompt: turns[0].Prompt}
			return true, nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// waitRevision waits for the Persona to be Ready at its generation with a
// delivered revision past after, and returns it.
func (s *suite) waitRevision(name string, after int64) (int64, error) {
	var n int64
	err := waitFor(30*time.Second, fmt.Sprintf("persona %s delivering a revision past %d", name, after), func() (bool, error) {
		var p v1alpha1.Persona
		if err := s.c.Get(s.ctx, client.ObjectKey{Namespace: restartNamespace, Name: name}, &p); err != nil {
			return false, err
		}
		n = p.Status.CurrentRevision
		ready := p.Status.ObservedGeneration == p.Generation && meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ReadyCondition)
		return ready && n > after, fmt.Errorf("revision %d, generation %d of %d", n, p.Status.ObservedGeneration, p.Generation)
	})
	return n, err
}

// taskPrompt is a Persona's spec whose system prompt ends with task: the
// platform's sections, and an extension of its own.
func taskPrompt(task string) v1alpha1.PersonaSpec {
	return v1alpha1.PersonaSpec{SystemPrompt: &v1alpha1.SystemPromptSpec{Extensions: []v1alpha1.Extension{{ID: "task", Template: task}}}}
}

// editPersona sets the task of the Persona's system prompt.
func (s *suite) editPersona(name, prompt string) error {
	p := &v1alpha1.Persona{}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := s.c.Get(s.ctx, client.ObjectKey{Namespace: restartNamespace, Name: name}, p); err != nil {
			return err
		}
		p.Spec.SystemPrompt = taskPrompt(prompt).SystemPrompt
		return s.c.Update(s.ctx, p)
	})
}

// livePrompt is the digest of system-prompt.md in the Persona's live
// ConfigMap.
func (s *suite) livePrompt(name string) (string, error) {
	var cm corev1.ConfigMap
	if err := s.c.Get(s.ctx, client.ObjectKey{Namespace: restartNamespace, Name: delivery.ConfigMapName(name)}, &cm); err != nil {
		return "", err
	}
	return digest([]byte(cm.Data["system-prompt.md"])), nil
}

// waitEvent waits for an Event of type and reason on the Persona whose
// message holds text.
func (s *suite) waitEvent(persona, eventType, reason, text string) error {
	return waitFor(2*time.Minute, fmt.Sprintf("a %s Event %s on Persona %s saying %q", eventType, reason, persona, text), func() (bool, error) {
		var list corev1.EventList
		if err := s.c.List(s.ctx, &list, client.InNamespace(restartNamespace)); err != nil {
			return false, err
		}
		var seen []string
		for _, e := range list.Items {
			if e.InvolvedObject.Kind != v1alpha1.PersonaKind || e.InvolvedObject.Name != persona || e.Reason != reason {
				continue
			}
			if e.Type == eventType && strings.Contains(e.Message, text) {
				return true, nil
			}
			seen = append(seen, e.Type+": "+e.Message)
		}
		return false, fmt.Errorf("the %s Events are %q", reason, seen)
	})
}

// waitPersonaCondition waits for a condition of a Persona.
func (s *suite) waitPersonaCondition(namespace, name, condition string, status metav1.ConditionStatus, reason string) error {
	return waitFor(time.Minute, fmt.Sprintf("persona %s %s=%s %s", name, condition, status, reason), func() (bool, error) {
		var p v1alpha1.Persona
		if err := s.c.Get(s.ctx, client.ObjectKey{Namespace: namespace, Name: name}, &p); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(p.Status.Conditions, condition)
		if c == nil {
			return false, fmt.Errorf("no %s condition", condition)
		}
		return c.Status == status && c.Reason == reason, fmt.Errorf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)
	})
}

// deleteWorkloads deletes the Deployments of persona's check and the
// Persona, and waits for their pods to be gone.
func (s *suite) deleteWorkloads(t *testing.T, persona string) {
	var list appsv1.DeploymentList
	if err := s.c.List(s.ctx, &list, client.InNamespace(restartNamespace), client.MatchingLabels{partOf: persona}); err != nil {
		t.Errorf("list the Deployments of %s: %v", persona, err)
		return
	}
	for i := range list.Items {
		if err := s.c.Delete(s.ctx, &list.Items[i], client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete Deployment %s: %v", list.Items[i].Name, err)
		}
	}
	p := &v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: restartNamespace, Name: persona}}
	if err := s.c.Delete(s.ctx, p); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("delete Persona %s: %v", persona, err)
	}
	if err := waitFor(2*time.Minute, "the pods of "+persona+"'s Deployments gone", func() (bool, error) {
		var pods corev1.PodList
		if err := s.c.List(s.ctx, &pods, client.InNamespace(restartNamespace), client.MatchingLabels{partOf: persona}); err != nil {
			return false, err
		}
		return len(pods.Items) == 0, fmt.Errorf("%d pods left", len(pods.Items))
	}); err != nil {
		t.Error(err)
	}
}

func mapValues(m map[string]time.Duration) []time.Duration {
	out := make([]time.Duration, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func sortedValues(m map[string]time.Duration) []time.Duration {
	out := mapValues(m)
	slices.Sort(out)
	return out
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(100 * time.Millisecond)
	}
	return out
}

// deploymentState is a Deployment's conditions and its pods' states, for a
// failure.
func (s *suite) deploymentState(name string) string {
	var d appsv1.Deployment
	if err := s.c.Get(s.ctx, client.ObjectKey{Namespace: restartNamespace, Name: name}, &d); err != nil {
		return err.Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Deployment %s at generation %d of %d: %+v", name, d.Status.ObservedGeneration, d.Generation, d.Status.Conditions)
	var pods corev1.PodList
	if err := s.c.List(s.ctx, &pods, client.InNamespace(restartNamespace), client.MatchingLabels{agentLabel: name}); err == nil {
		for i := range pods.Items {
			p := &pods.Items[i]
			fmt.Fprintf(&b, "\n  pod %s revision %s ready %t: %v", p.Name, p.Annotations[delivery.RevisionAnnotation], podReady(p), s.running(p))
		}
	}
	return b.String()
}
