package rollouts_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/test/controlplane"
	"github.com/persona-operator/persona-operator/test/rollouts"
)

var rolloutGVK = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Rollout"}

// agentRollout is an Argo Rollouts Rollout of the Persona reviewer that
// opts in to restarts, whose canary takes 20% and then waits for a
// promotion. It runs no replicas: the control plane has no kubelet, and
// Argo Rollouts goes through its steps all the same.
const agentRollout = `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata:
  name: agent
  labels: {prompts.persona-operator.dev/restart-on-change: "true"}
spec:
  replicas: 0
  selector: {matchLabels: {app: agent}}
  template:
    metadata:
      labels: {app: agent, prompts.persona-operator.dev/persona: reviewer}
    spec:
      containers: [{name: agent, image: agent:1}]
  strategy:
    canary:
      steps: [{setWeight: 20}, {pause: {}}]
`

// referencingRollout takes its template from a Deployment.
const referencingRollout = `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata:
  name: referencing
  labels: {prompts.persona-operator.dev/restart-on-change: "true", prompts.persona-operator.dev/persona: reviewer}
spec:
  replicas: 0
  selector: {matchLabels: {app: referencing}}
  workloadRef: {apiVersion: apps/v1, kind: Deployment, name: agent-template}
  strategy:
    canary:
      steps: [{setWeight: 20}, {pause: {}}]
`

// TestRolloutsAreRestartedByTheirOwnStrategy runs the manager with
// --restart-workloads and the restart-workloads component beside Argo
// Rollouts' own controller: a Rollout that opts in is restarted onto each
// revision its Persona delivers (the pod template's annotation, through the
// component's policy), and Argo Rollouts rolls the change out by the
// Rollout's canary steps: a new ReplicaSet of that template, paused at the
// canary's pause, which counts as the restart done. A Rollout that takes
// its template from another workload is told to label that one instead.
func TestRolloutsAreRestartedByTheirOwnStrategy(t *testing.T) {
	controlplane.RequireEnvtest(t)
	dir := rollouts.Require(t)
	root := repoRoot(t)
	ctx := t.Context()
	plane, err := controlplane.Start(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = plane.Stop() })
	// The CRDs and the rights come before the manager, which decides at
	// start whether Rollouts are restarted.
	if _, err := rollouts.Start(t, plane, dir); err != nil {
		t.Fatal(err)
	}
	if err := plane.InstallComponent(ctx, filepath.Join(root, "config", "components", "restart-workloads"), controlplane.ManagerUser); err != nil {
		t.Fatal(err)
	}
	runManager(t, plane, root, "--restart-workloads", "--restart-deadline=30s")

	c := plane.Client
	const ns = "team"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	persona := &v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reviewer"}}
	persona.Spec.Prompt = "One"
	if err := c.Create(ctx, persona); err != nil {
		t.Fatal(err)
	}
	waitPersona(t, c, ns, "revision 1 current", func(p *v1alpha1.Persona) bool { return p.Status.CurrentRevision == 1 })
	for _, manifest := range []string{agentRollout, referencingRollout} {
		objects, err := controlplane.DecodeManifest(strings.NewReader(manifest))
		if err != nil {
			t.Fatal(err)
		}
		objects[0].SetNamespace(ns)
		if err := c.Create(ctx, objects[0]); err != nil {
			t.Fatal(err)
		}
	}

	// Opting in restarts it onto revision 1; Argo Rollouts settles it.
	waitRollout(t, c, ns, "1")

	// Revision 2: the restart changes the template, and Argo Rollouts runs
	// the canary's steps on it: a new ReplicaSet of the template, the
	// Rollout paused at its pause step.
	persona = &v1alpha1.Persona{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "reviewer"}, persona); err != nil {
		t.Fatal(err)
	}
	persona.Spec.Prompt = "Two"
	if err := c.Update(ctx, persona); err != nil {
		t.Fatal(err)
	}
	edited := time.Now()
	rollout := waitRollout(t, c, ns, "2")
	hash, _, _ := unstructured.NestedString(rollout.Object, "status", "currentPodHash")
	step, _, _ := unstructured.NestedInt64(rollout.Object, "status", "currentStepIndex")
	if step != 1 {
		t.Errorf("the Rollout is at step %d of its canary, want its pause, step 1", step)
	}
	var sets appsv1.ReplicaSetList
	if err := c.List(ctx, &sets, client.InNamespace(ns), client.MatchingLabels{"rollouts-pod-template-hash": hash}); err != nil {
		t.Fatal(err)
	}
	if len(sets.Items) != 1 || sets.Items[0].Spec.Template.Annotations[delivery.RevisionAnnotation] != "2" {
		t.Errorf("the canary's ReplicaSets of pod hash %s: %d, want one whose template names revision 2", hash, len(sets.Items))
	}
	waitEvent(t, c, ns, "agent", corev1.EventTypeNormal, "Restarted", "revision 2 of Persona reviewer")
	t.Logf("edit -> the Rollout restarted onto revision 2 and paused at its canary step, Restarted, after %v", time.Since(edited).Round(time.Millisecond))

	// The component's policy holds the manager's identity to the restart's
	// two annotations on Rollouts too.
	asManager, err := client.New(plane.Impersonating(controlplane.ManagerUser), client.Options{Scheme: controlplane.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	// A patch, the one write its role allows.
	err = asManager.Patch(ctx, rollout, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":3}}`)))
	if err == nil || !strings.Contains(err.Error(), "may not change a workload's spec") {
		t.Errorf("the manager's identity scaling the Rollout: %v, want the policy's refusal", err)
	}

	waitEvent(t, c, ns, "referencing", corev1.EventTypeWarning, "TemplateNotOwn", "Deployment agent-template")
	referencing := &unstructured.Unstructured{}
	referencing.SetGroupVersionKind(rolloutGVK)
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "referencing"}, referencing); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedMap(referencing.Object, "spec", "template"); found || referencing.GetAnnotations()[v1alpha1.AppliedRevisionAnnotation] != "" {
		t.Errorf("the Rollout with spec.workloadRef was written: template %v, annotations %v", found, referencing.GetAnnotations())
	}
}

// waitRollout waits until the Rollout agent of ns is restarted onto
// revision and Argo Rollouts has settled it (Healthy, or Paused at a step),
// and returns it.
func waitRollout(t *testing.T, c client.Client, ns, revision string) *unstructured.Unstructured {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(rolloutGVK)
		err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "agent"}, u)
		template, _, _ := unstructured.NestedString(u.Object, "spec", "template", "metadata", "annotations", delivery.RevisionAnnotation)
		observed, _, _ := unstructured.NestedString(u.Object, "status", "observedGeneration")
		phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		settled := observed == fmt.Sprint(u.GetGeneration()) && (phase == "Healthy" || phase == "Paused")
		if err == nil && template == revision && u.GetAnnotations()[v1alpha1.AppliedRevisionAnnotation] == revision && settled {
			return u
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Rollout is not restarted onto revision %s and settled within a minute (%v): template revision %q, applied %q, phase %q at generation %s of %d",
				revision, err, template, u.GetAnnotations()[v1alpha1.AppliedRevisionAnnotation], phase, observed, u.GetGeneration())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitEvent waits for an Event of type and reason about the object name of
// ns whose message holds text.
func waitEvent(t *testing.T, c client.Client, ns, name, eventType, reason, text string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var list corev1.EventList
		if err := c.List(t.Context(), &list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		var seen []string
		for _, e := range list.Items {
			if e.InvolvedObject.Name != name || e.Reason != reason {
				continue
			}
			if e.Type == eventType && strings.Contains(e.Message, text) {
				return
			}
			seen = append(seen, e.Type+": "+e.Message)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s Event %s on %s saying %q within a minute; seen %q", eventType, reason, name, text, seen)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
