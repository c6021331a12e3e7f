package delivery

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// SnapshotMeta is what the manager keeps of a ConfigMap that carries a
// snapshot's revision label: the few fields of a snapshot that the
// retention, the byte cap, a pin and the pod webhook read. In a cache it
// costs about two fifths of its metadata held whole (labels, annotations
// and owner references are maps and slices of their own). Whether it is a
// snapshot at all is decided once, as it is made.
type SnapshotMeta struct {
	Namespace, Name, ResourceVersion string
	UID                              types.UID
	// Created is its creation timestamp, by which eviction takes the
	// oldest first.
	Created metav1.Time
	// Deleting is set once it has a deletion timestamp.
	Deleting bool
	// Persona and Revision are what its name says (SnapshotOf).
	Persona  string
	Revision int64
	// Controller is the UID of its controller, set only when it is a
	// snapshot (IsSnapshot: a snapshot's name and labels, and the Persona
	// of that name its controller); empty, it is no Persona's snapshot.
	Controller types.UID
	// ContentHash and Guardrails are its ContentHashAnnotation and
	// GuardrailsAnnotation.
	ContentHash, Guardrails string
}

// NewSnapshotMeta is what the manager keeps of obj, a ConfigMap that carries
// a snapshot's revision label. Its strings are obj's.
func NewSnapshotMeta(obj metav1.Object) *SnapshotMeta {
	s := &SnapshotMeta{Namespace: obj.GetNamespace(), Name: obj.GetName(), ResourceVersion: obj.GetResourceVersion(), UID: obj.GetUID(),
		Created: obj.GetCreationTimestamp(), Deleting: obj.GetDeletionTimestamp() != nil}
	s.Persona, s.Revision, _ = SnapshotOf(s.Name) // a substring of Name: no copy
	if IsSnapshot(obj) {
		s.Controller = metav1.GetControllerOfNoCopy(obj).UID
		annotations := obj.GetAnnotations()
		s.ContentHash, s.Guardrails = annotations[ContentHashAnnotation], annotations[GuardrailsAnnotation]
	}
	return s
}

// IsSnapshot reports whether it is a snapshot its Persona controls, with a
// snapshot's labels (IsSnapshot).
func (s *SnapshotMeta) IsSnapshot() bool { return s.Controller != "" }

// IsSnapshotOf reports whether it is p's snapshot of revision n
// (IsSnapshotOf).
func (s *SnapshotMeta) IsSnapshotOf(p *v1alpha1.Persona, n int64) bool {
	return s.IsSnapshot() && s.Controller == p.UID && s.Persona == p.Name && s.Revision == n
}

// Key is its namespace and name.
func (s *SnapshotMeta) Key() types.NamespacedName {
	return types.NamespacedName{Namespace: s.Namespace, Name: s.Name}
}

// GetObjectMeta is its identity as object metadata, which is how an
// informer's store keys what it holds.
func (s *SnapshotMeta) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name, UID: s.UID, ResourceVersion: s.ResourceVersion}
}
