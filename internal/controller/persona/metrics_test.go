package persona

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// personaWithReason is a Persona whose Ready condition has reason; none
// when reason is empty.
func personaWithReason(name, reason string) *v1alpha1.Persona {
	p := &v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name}}
	if reason != "" {
		p.Status.Conditions = []metav1.Condition{
			{Type: v1alpha1.SnapshotFailedCondition, Status: metav1.ConditionTrue, Reason: "SnapshotNameTaken"},
			{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionFalse, Reason: reason},
		}
	}
	return p
}

// TestReadyReasonsFollowTheInformer drives the counts through the
// handler's events as an informer sends them, and reads them as a scrape
// does.
func TestReadyReasonsFollowTheInformer(t *testing.T) {
	reasons := newReadyReasons()
	h := reasons.handler()
	a, b, c := personaWithReason("a", ""), personaWithReason("b", "InheritanceCycle"), personaWithReason("c", "InheritanceCycle")
	for _, p := range []*v1alpha1.Persona{a, b, c} {
		h.OnAdd(p, true)
	}
	// A change within a reason, then from one to another.
	h.OnUpdate(c, personaWithReason("c", "InheritanceCycle"))
	h.OnUpdate(b, personaWithReason("b", "Rendered"))
	h.OnUpdate(a, personaWithReason("a", "Rendered"))
	// c dropped by a relist that missed its deletion, then an object that
	// is no Persona.
	h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "team/c", Obj: c})
	h.OnDelete(&metav1.PartialObjectMetadata{})

	// a and b are Rendered; nothing is left with InheritanceCycle or none,
	// and a reason no Persona has is not reported at 0.
	want := `
# HELP persona_personas_by_ready_reason Personas by the reason of their Ready condition (empty before their first reconcile).
# TYPE persona_personas_by_ready_reason gauge
persona_personas_by_ready_reason{reason="Rendered"} 2
`
	if err := testutil.CollectAndCompare(reasons, strings.NewReader(want)); err != nil {
		t.Error(err)
	}

	h.OnAdd(personaWithReason("d", ""), false)
	h.OnDelete(personaWithReason("b", "Rendered"))
	want = `
# HELP persona_personas_by_ready_reason Personas by the reason of their Ready condition (empty before their first reconcile).
# TYPE persona_personas_by_ready_reason gauge
persona_personas_by_ready_reason{reason=""} 1
persona_personas_by_ready_reason{reason="Rendered"} 1
`
	if err := testutil.CollectAndCompare(reasons, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
