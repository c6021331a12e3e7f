package persona

import (
	"slices"
	"testing"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

func TestAwaiting(t *testing.T) {
	a := newAwaiting()
	cm := objectRef{v1alpha1.ConfigMapKind, "ns", "agents"}
	layerRef := objectRef{v1alpha1.PromptLayerKind, "ns", "l"}
	a.set(objectKey("ns", "p"), []objectRef{cm, layerRef})
	a.set(objectKey("ns", "q"), []objectRef{cm})
	if got := a.waiters(cm); !slices.Equal(got, []string{"p", "q"}) {
		t.Fatalf("waiters of the ConfigMap = %v, want [p q]", got)
	}
	a.set(objectKey("ns", "p"), []objectRef{layerRef})
	if got := a.waiters(cm); !slices.Equal(got, []string{"q"}) {
		t.Fatalf("p no longer waits for the ConfigMap, waiters = %v", got)
	}
	a.set(objectKey("ns", "q"), nil)
	a.set(objectKey("ns", "p"), nil)
	if len(a.byRef) != 0 || len(a.byPersona) != 0 {
		t.Fatalf("nothing is awaited, yet the record holds %v and %v", a.byRef, a.byPersona)
	}
}
