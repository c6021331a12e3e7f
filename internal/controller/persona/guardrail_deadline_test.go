package persona

import (
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
	p := barePersona("p", "Hello")
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"kubernetes.io/metadata.name": ns}}}
	s := newSteps(t, p, nsObj)
	s.GuardrailDeadline = time.Hour
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(p)}
	if _, err := s.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	// The tenant's text now always runs out of time; the guardrails alone do not.
	s.renderConfigMap = func(b *render.Bundle, deadline time.Time) (*render.Output, error) {
		if len(b.Extensions) > 0 {
			return nil, &render.LimitError{Limit: render.LimitPersonaTime}
		}
		return render.Default().ConfigMapBy(b, deadline)
	}
	guard := &v1alpha1.ClusterPromptLayer{ObjectMeta: clusterLayerMeta("guard"),
		Spec: v1alpha1.ClusterPromptLayerSpec{Position: v1alpha1.ClusterLayerLast, Template: "Guard."}}
	if err := s.cluster.Create(t.Context(), guard); err != nil {
		t.Fatal(err)
	}
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
