package persona

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
)

// A pin stored while the webhook was down that does not parse is
// InvalidPin, and the latest render is delivered.
func TestInvalidPinDeliversTheLatest(t *testing.T) {
	for _, value := range []string{"two", "0", "-1", ""} {
		p := barePersona("p", "Hello")
		p.Annotations = map[string]string{v1alpha1.PinRevisionAnnotation: value}
		s := newSteps(t, p)
		if _, err := s.Reconcile(t.Context(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(p)}); err != nil {
			t.Fatalf("pin %q: %v", value, err)
		}
		s.get(t, p)
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.PinnedCondition)
		if c == nil || c.Status != "False" || c.Reason != v1alpha1.InvalidPinReason {
			t.Errorf("pin %q: Pinned condition %+v, want False InvalidPin", value, c)
		}
		cm := configMapOf(t, s, p)
		if cm.Data["system-prompt.md"] != "Hello\n" || cm.Annotations[delivery.RevisionAnnotation] != "1" || p.Status.PinnedRevision != 0 {
			t.Errorf("pin %q: ConfigMap %q at revision %s, pinnedRevision %d; want the latest render, revision 1, none pinned",
				value, cm.Data["system-prompt.md"], cm.Annotations[delivery.RevisionAnnotation], p.Status.PinnedRevision)
		}
		if ready := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ReadyCondition); ready == nil || ready.Reason != v1alpha1.RenderedReason {
			t.Errorf("pin %q: Ready %+v, want Rendered", value, ready)
		}
	}
}

// A rebase's inputs are the pinned revision's, with the current
// guardrails instead of its own; its cause is the guardrail that changed.
func TestRebaseInputsAndCause(t *testing.T) {
	persona := v1alpha1.RevisionInput{Kind: v1alpha1.PersonaKind, Namespace: ns, Name: "p", Generation: 1}
	old := v1alpha1.RevisionInput{Kind: v1alpha1.ClusterPromptLayerKind, Name: "a", Generation: 1}
	edited := v1alpha1.RevisionInput{Kind: v1alpha1.ClusterPromptLayerKind, Name: "a", Generation: 2}
	added := v1alpha1.RevisionInput{Kind: v1alpha1.ClusterPromptLayerKind, Name: "b", Generation: 1}
	later := v1alpha1.RevisionInput{Kind: v1alpha1.PersonaKind, Namespace: ns, Name: "p", Generation: 5}
	base := []v1alpha1.RevisionInput{persona, old}
	current := []v1alpha1.RevisionInput{later, edited, added}
	if got, want := rebasedInputs(base, current), []v1alpha1.RevisionInput{persona, edited, added}; !slices.Equal(got, want) {
		t.Errorf("rebasedInputs = %v, want %v", got, want)
	}
	for _, tc := range []struct {
		name          string
		base, current []v1alpha1.RevisionInput
		want          v1alpha1.RevisionInput
	}{
		{"an edited guardrail", base, []v1alpha1.RevisionInput{later, edited}, edited},
		{"an added guardrail", base, []v1alpha1.RevisionInput{later, old, added}, added},
		{"a removed guardrail", base, []v1alpha1.RevisionInput{later}, old},
		{"the same guardrails", base, []v1alpha1.RevisionInput{later, old}, v1alpha1.RevisionInput{Kind: v1alpha1.RevisionCauseOperator}},
	} {
		if got := guardrailChange(tc.base, tc.current); got != tc.want {
			t.Errorf("%s: guardrailChange = %v, want %v", tc.name, got, tc.want)
		}
	}
}
