package controllers

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ownWrites remembers what the Persona controller last wrote into each
// ConfigMap, so that the watch event of its own write does not bring the
// Persona back for a render that would find nothing to do. A hand edit, a
// deletion or a write by anyone else still does: the ConfigMap in those
// events no longer holds what was written.
type ownWrites struct {
	mu sync.Mutex
	// written holds, per ConfigMap, the metadata of the desired ConfigMap
	// last written (its data hash is the content-hash annotation).
	written map[client.ObjectKey]*corev1.ConfigMap
}

func newOwnWrites() *ownWrites {
	return &ownWrites{written: map[client.ObjectKey]*corev1.ConfigMap{}}
}

// record notes that desired is about to be written. It is called before the
// write, so that the write's event cannot arrive first.
func (w *ownWrites) record(desired *corev1.ConfigMap) {
	stub := &corev1.ConfigMap{ObjectMeta: *desired.ObjectMeta.DeepCopy()}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.written[client.ObjectKeyFromObject(desired)] = stub
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
	stub := w.written[client.ObjectKeyFromObject(cm)]
	w.mu.Unlock()
	if stub == nil {
		return false
	}
	owner, wrote := metav1.GetControllerOfNoCopy(cm), metav1.GetControllerOfNoCopy(stub)
	return owner != nil && wrote != nil && owner.UID == wrote.UID && isCurrent(cm, stub)
}
