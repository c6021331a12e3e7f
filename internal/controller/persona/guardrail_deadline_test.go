package persona

import (
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/render"
)

// A Persona whose renders run out of wall time, alone too, keeps its text
// while a new guardrail waits for a render in time; once the guardrail
// deadline has passed, the guardrail is delivered alone.
func TestANewGuardrailWaitsForARenderInTimeUntilTheDeadline(t *testing.T) {
	p, s, req := renderedWithADeadlineOfAnHour(t)
	// The tenant's text now always runs out of time; the guardrails alone do not.
	guardrailWhileOutOfTime(t, s)
	res, err := s.Reconcile(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	s.get(t, p)
	cm := configMapOf(t, s, p)
	if got := cm.Data[render.SystemPromptKey]; got != "Hello\n" {
		t.Errorf("before the deadline the ConfigMap holds %q, want the Persona's text kept", got)
	}
	if f := cm.Annotations[delivery.FallbackAnnotation]; f != "" {
		t.Errorf("fallback %q before the deadline, want none", f)
	}
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ReconcilingCondition); c == nil || c.Reason != v1alpha1.RenderFailedReason {
		t.Errorf("Reconciling %+v, want RenderFailed while it is retried", c)
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > overrunRetry {
		t.Errorf("retried after %v, want within %v", res.RequeueAfter, overrunRetry)
	}

	s.GuardrailDeadline = time.Nanosecond // the deadline has passed
	if _, err := s.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	s.get(t, p)
	cm = configMapOf(t, s, p)
	if got := cm.Data[render.SystemPromptKey]; got != "Guard.\n" {
		t.Errorf("after the deadline the ConfigMap holds %q, want the guardrail alone", got)
	}
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ReadyCondition); c == nil || c.Reason != v1alpha1.GuardrailsOnlyReason {
		t.Errorf("Ready %+v after the deadline, want GuardrailsOnly", c)
	}
}

// renderedWithADeadlineOfAnHour is a Persona p, rendered, whose
// guardrail deadline is an hour.
func renderedWithADeadlineOfAnHour(t *testing.T) (*v1alpha1.Persona, *steps, ctrl.Request) {
	t.Helper()
	p := barePersona("p", "Hello")
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"kubernetes.io/metadata.name": ns}}}
	s := newSteps(t, p, nsObj)
	s.GuardrailDeadline = time.Hour
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(p)}
	if _, err := s.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	return p, s, req
}

// guardrailWhileOutOfTime makes every render that holds the Persona's text
// run out of wall time, alone too (the guardrails alone render), then adds
// the guardrail "Guard." for every Persona.
func guardrailWhileOutOfTime(t *testing.T, s *steps) {
	t.Helper()
	outOfTimeWithText(s)
	guard := &v1alpha1.ClusterPromptLayer{ObjectMeta: clusterLayerMeta("guard"),
		Spec: v1alpha1.ClusterPromptLayerSpec{Position: v1alpha1.ClusterLayerLast, Template: "Guard."}}
	if err := s.cluster.Create(t.Context(), guard); err != nil {
		t.Fatal(err)
	}
}

// outOfTimeWithText makes every render that holds the Persona's text run
// out of wall time, alone too; the guardrails alone render.
func outOfTimeWithText(s *steps) {
	s.renderConfigMap = func(b *render.Bundle, deadline time.Time) (*render.Output, error) {
		if len(b.Extensions) > 0 {
			return nil, &render.LimitError{Limit: render.LimitPersonaTime}
		}
		return render.Default().ConfigMapBy(b, deadline)
	}
}

// A tenant whose renders run out of wall time cannot hold a new guardrail
// back by relabelling its Persona in and out of a personaSelector, which
// changes the set of ClusterPromptLayers that select it at every turn: the
// wait is the Persona's, and ends at the deadline.
func TestRelabellingThePersonaDoesNotStartTheGuardrailWaitAgain(t *testing.T) {
	p := barePersona("p", "Hello")
	p.Labels = map[string]string{"style": "terse"}
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"kubernetes.io/metadata.name": ns}}}
	style := &v1alpha1.ClusterPromptLayer{ObjectMeta: clusterLayerMeta("style"),
		Spec: v1alpha1.ClusterPromptLayerSpec{Position: v1alpha1.ClusterLayerFirst, Template: "Style.",
			PersonaSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"style": "terse"}}}}
	s := newSteps(t, p, nsObj, style)
	const deadline = 300 * time.Millisecond
	s.GuardrailDeadline = deadline
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(p)}
	if _, err := s.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if got := configMapOf(t, s, p).Data[render.SystemPromptKey]; got != "Style.\n\nHello\n" {
		t.Fatalf("the first render holds %q", got)
	}
	guardrailWhileOutOfTime(t, s)
	start := time.Now()
	for time.Since(start) < 3*deadline {
		if _, err := s.Reconcile(t.Context(), req); err != nil {
			t.Fatal(err)
		}
		time.Sleep(deadline / 4)
		// kubectl label persona p style- ; kubectl label persona p style=terse
		s.get(t, p)
		if _, ok := p.Labels["style"]; ok {
			p.Labels = nil
		} else {
			p.Labels = map[string]string{"style": "terse"}
		}
		if err := s.cluster.Update(t.Context(), p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if got := configMapOf(t, s, p).Data[render.SystemPromptKey]; got != "Guard.\n" && got != "Style.\n\nGuard.\n" {
		t.Errorf("%v after the guardrail came (the deadline is %v), relabelled all along, the ConfigMap holds %q, want the guardrails alone",
			time.Since(start).Round(time.Millisecond), deadline, got)
	}
}

// The wait's start is the Persona's GuardrailsWaiting condition's
// lastTransitionTime, so that a restart of the manager, which forgets what
// it held, does not start the wait again.
func TestTheGuardrailWaitOutlivesARestart(t *testing.T) {
	p, s, req := renderedWithADeadlineOfAnHour(t)
	guardrailWhileOutOfTime(t, s)
	if _, err := s.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	s.get(t, p)
	waiting := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.GuardrailsWaitingCondition)
	if waiting == nil || waiting.Status != metav1.ConditionTrue || waiting.Reason != v1alpha1.AwaitingRenderReason {
		t.Fatalf("GuardrailsWaiting %+v while the guardrail waits, want True, AwaitingRender", waiting)
	}
	if got := configMapOf(t, s, p).Data[render.SystemPromptKey]; got != "Hello\n" {
		t.Fatalf("while the guardrail waits the ConfigMap holds %q, want the Persona's text", got)
	}

	// The wait began 61 minutes ago, as the condition recorded; the
	// manager restarts and holds nothing of it.
	waiting.LastTransitionTime = metav1.NewTime(time.Now().Add(-61 * time.Minute))
	if err := s.cluster.Status().Update(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	s.guardrailsWaiting, s.overruns = newGuardrailsWaiting(), newOverruns()
	if _, err := s.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if got := configMapOf(t, s, p).Data[render.SystemPromptKey]; got != "Guard.\n" {
		t.Errorf("after a restart past the deadline the ConfigMap holds %q, want the guardrail alone", got)
	}
	s.get(t, p)
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.GuardrailsWaitingCondition); c != nil {
		t.Errorf("GuardrailsWaiting %+v once the guardrail is delivered, want none", c)
	}
}

// A pin delivers its revision with the current guardrails: the wait ends,
// and GuardrailsWaiting goes with it.
func TestAPinThatDeliversEndsTheGuardrailWait(t *testing.T) {
	p := barePersona("p", "Hello")
	s := newSteps(t, p)
	s.GuardrailDeadline = time.Hour
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(p)}
	if _, err := s.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	s.get(t, p)
	first := p.Status.CurrentRevision
	// The tenant's new text always runs out of wall time.
	s.renderConfigMap = func(b *render.Bundle, dl time.Time) (*render.Output, error) {
		raw, _ := render.MarshalBundle(b)
		if strings.Contains(string(raw), "Heavy") {
			return nil, &render.LimitError{Limit: render.LimitTime}
		}
		return render.Default().ConfigMapBy(b, dl)
	}
	s.get(t, p)
	p.Spec.SystemPrompt.Extensions[0].Template = "Heavy"
	p.Generation++
	if err := s.cluster.Update(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	guard := &v1alpha1.ClusterPromptLayer{ObjectMeta: clusterLayerMeta("guard"),
		Spec: v1alpha1.ClusterPromptLayerSpec{Position: v1alpha1.ClusterLayerLast, Template: "Guard."}}
	if err := s.cluster.Create(t.Context(), guard); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	s.get(t, p)
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.GuardrailsWaitingCondition); c == nil || c.Status != "True" {
		t.Fatalf("setup: no GuardrailsWaiting after the guardrail: %+v", p.Status.Conditions)
	}
	// kubectl annotate persona p prompts.persona-operator.dev/pin-revision=<first>
	p.Annotations = map[string]string{v1alpha1.PinRevisionAnnotation: strconv.FormatInt(first, 10)}
	if err := s.cluster.Update(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	s.get(t, p)
	cm := configMapOf(t, s, p)
	got := cm.Data[render.SystemPromptKey]
	c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.GuardrailsWaitingCondition)
	ready := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ReadyCondition)
	t.Logf("pinned to %d: ConfigMap %q (guardrails %q); Ready %s/%s; GuardrailsWaiting %v", first, got, cm.Annotations[delivery.GuardrailsAnnotation], ready.Status, ready.Reason, c)
	if !strings.Contains(got, "Guard.") {
		t.Fatalf("the pinned revision was delivered without the guardrail: %q", got)
	}
	if c != nil {
		t.Errorf("the ConfigMap holds the guardrail, and the status still says the guardrails wait: %s", c.Message)
	}
}
