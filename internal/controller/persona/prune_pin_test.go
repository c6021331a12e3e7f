package persona

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
)

// snapshotExists reports whether p's snapshot of revision n is in the cluster.
func snapshotExists(t *testing.T, c client.Client, persona string, n int64) bool {
	t.Helper()
	err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: delivery.SnapshotName(persona, n)}, &corev1.ConfigMap{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

// A pin set while a reconcile ran, after it read the Persona, keeps the
// snapshot it names from that reconcile's pruning: read afresh, or as the
// reconcile's status patch answered, which then needs no read, or, set
// after the patch answered, as the cache has the Persona once the pods are
// listed.
func TestPruneKeepsAPinSetMeanwhile(t *testing.T) {
	for _, tc := range []struct {
		name string
		// answered is whether the pin comes in the status patch's answer
		// alone (the cluster's Persona has none), rather than from a read.
		answered bool
		// afterPatch is whether the patch answered without the pin, which
		// the cluster's Persona has.
		afterPatch bool
	}{{name: "read afresh"}, {name: "as the status patch answered", answered: true}, {name: "set after the status patch", afterPatch: true}} {
		t.Run(tc.name, func(t *testing.T) {
			s, p, req := guardedSteps(t)
			limit := int32(1)
			p.Spec.RevisionHistoryLimit = &limit
			if err := s.cluster.Update(t.Context(), p); err != nil {
				t.Fatal(err)
			}
			for _, text := range []string{"Two", "Three"} {
				editText(t, s, p, req, text)
			}
			if !snapshotExists(t, s.cluster, "p", 2) {
				t.Fatal("revision 2's snapshot is gone before the pin")
			}
			read := p.DeepCopy() // what the reconcile read, before the pin
			var patched *metav1.PartialObjectMetadata
			pin := map[string]string{v1alpha1.PinRevisionAnnotation: "2"}
			switch {
			case tc.answered:
				patched = &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, Annotations: pin}}
			case tc.afterPatch:
				patched = &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name}}
				fallthrough
			default:
				pinned := p.DeepCopy()
				pinned.Annotations = pin
				if err := s.cluster.Update(t.Context(), pinned); err != nil {
					t.Fatal(err)
				}
			}
			read.Status.CurrentRevision, read.Status.LatestRevision = 4, 4 // a fourth revision, whose pruning sees no pin
			if err := s.prune(t.Context(), read, patched); err != nil {
				t.Fatal(err)
			}
			if !snapshotExists(t, s.cluster, "p", 2) {
				t.Error("pruning deleted revision 2's snapshot, which the pin set meanwhile names")
			}
			if !snapshotExists(t, s.cluster, "p", 3) || snapshotExists(t, s.cluster, "p", 1) {
				t.Error("want revision 3's snapshot kept (the one within the limit) and revision 1's pruned")
			}
		})
	}
}
