package controllers

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/internal/delivery"
)

// ownWrites remembers what the Persona controller last wrote into each
// ConfigMap, so that the watch event of its own write does not bring the
// Persona back for a render that would find nothing to do. A hand edit, a
// deletion or a write by anyone else still does: the ConfigMap in those
// events no longer holds what was written.
type ownWrites struct {
	mu      sync.Mutex
	written map[client.ObjectKey]written
}

// written is what was last written into a ConfigMap: little, since the
// manager keeps one per Persona. The rest of its metadata is what
// delivery.ConfigMap makes for the Persona and the hash.
type written struct {
	owner         types.UID
	persona, hash string
}

func newOwnWrites() *ownWrites {
	return &ownWrites{written: map[client.ObjectKey]written{}}
}

// record notes that desired, made by delivery.ConfigMap, is about to be
// written. It is called before the write, so that the write's event cannot
// arrive first.
func (w *ownWrites) record(desired *corev1.ConfigMap) {
	rec := written{persona: desired.Labels[delivery.PersonaLabel], hash: desired.Annotations[delivery.ContentHashAnnotation]}
	if owner := metav1.GetControllerOfNoCopy(desired); owner != nil {
		rec.owner = owner.UID
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.written[client.ObjectKeyFromObject(desired)] = rec
}

// forget drops what was recorded for the ConfigMap key, once its Persona is gone.
func (w *ownWrites) forget(key client.ObjectKey) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.written, key)
}

// holds reports whether obj, a ConfigMap from a watch event, holds what was
// last written into it: the same controller, data, labels and annotations.
func (w *ownWrites) holds(obj client.Object) bool {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return false
	}
	w.mu.Lock()
	rec, recorded := w.written[client.ObjectKeyFromObject(cm)]
	w.mu.Unlock()
	if !recorded || rec.owner == "" {
		return false
	}
	owner := metav1.GetControllerOfNoCopy(cm)
	return owner != nil && owner.UID == rec.owner && holdsRender(cm, rec.persona, rec.hash)
}
