package persona

import (
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/internal/delivery"
)

// ownWrites knows, for each Persona's ConfigMap, the content hash of its
// data at one resourceVersion: the version the Persona controller last
// wrote, or last read from the API server. The manager watches ConfigMaps
// by metadata only, so this is how it knows what a ConfigMap holds without
// its data: at a known version, the data is known; at any other version,
// someone else wrote it, and it is read again. It also lets the watch event
// of the controller's own write go by without a render that would find
// nothing to do.
type ownWrites struct {
	mu    sync.Mutex
	known map[client.ObjectKey]knownData
}

// knownData is what a ConfigMap holds at resourceVersion: its content hash
// and the inputs its revision.json names (nil when not known); while a
// write is under way, also what that write carries.
type knownData struct {
	resourceVersion, hash string
	record                *recordedInputs
	writing               *pendingWrite
	// written is set once a write of this process's was answered.
	written bool
}

// pendingWrite is a write whose answer has not come back yet: its own watch
// event may come first, and is told by the content hash it carries.
type pendingWrite struct {
	hash   string
	record *recordedInputs
	// seen are the versions of the events taken for this write.
	seen []string
}

func newOwnWrites() *ownWrites {
	return &ownWrites{known: map[client.ObjectKey]knownData{}}
}

// writing notes that a write of content hash hash, whose revision.json
// names record (keptRecord), into the ConfigMap key is about to be sent.
// It is called before the write, so that the write's event cannot arrive
// unrecognized.
func (w *ownWrites) writing(key client.ObjectKey, hash string, record *recordedInputs) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := w.known[key]
	k.writing = &pendingWrite{hash: hash, record: record}
	w.known[key] = k
}

// wrote records the answer of the write writing announced: the ConfigMap
// holds that write's hash at resourceVersion. It reports whether an event
// taken for the write had another version: someone else wrote the
// ConfigMap meanwhile, and what they wrote must be read. A write that
// failed is not answered: forget it, since what the ConfigMap holds is
// unknown (a write fails on a ConfigMap that changed).
func (w *ownWrites) wrote(key client.ObjectKey, resourceVersion string) (overwritten bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.known[key].writing
	if p == nil { // forgotten meanwhile: its Persona is gone
		return false
	}
	overwritten = slices.ContainsFunc(p.seen, func(rv string) bool { return rv != resourceVersion })
	w.known[key] = knownData{resourceVersion: resourceVersion, hash: p.hash, record: p.record, written: true}
	return overwritten
}

// read records that the ConfigMap key, read from the API server, holds
// data of content hash hash at resourceVersion.
func (w *ownWrites) read(key client.ObjectKey, resourceVersion, hash string, data map[string]string) {
	record := keptRecord(data)
	w.mu.Lock()
	defer w.mu.Unlock()
	k := w.known[key]
	k.resourceVersion, k.hash, k.record = resourceVersion, hash, record
	w.known[key] = k
}

// hashAt is the content hash of the data the ConfigMap key holds at
// resourceVersion, if it is known.
func (w *ownWrites) hashAt(key client.ObjectKey, resourceVersion string) (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k, ok := w.known[key]
	if !ok || k.resourceVersion == "" || k.resourceVersion != resourceVersion {
		return "", false
	}
	return k.hash, true
}

// recordAt is what the revision.json of the ConfigMap key names at
// resourceVersion, if it is known.
func (w *ownWrites) recordAt(key client.ObjectKey, resourceVersion string) (*recordedInputs, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k, ok := w.known[key]
	if !ok || k.record == nil || k.resourceVersion == "" || k.resourceVersion != resourceVersion {
		return nil, false
	}
	return k.record, true
}

// wroteBefore reports whether this process wrote the ConfigMap key since
// its Persona was last forgotten.
func (w *ownWrites) wroteBefore(key client.ObjectKey) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.known[key].written
}

// forget drops what is known of the ConfigMap key, once its Persona is gone.
func (w *ownWrites) forget(key client.ObjectKey) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.known, key)
}

// holds reports whether a watch event's ConfigMap is the controller's own:
// at the version it knows, or carrying the hash of a write under way.
func (w *ownWrites) holds(obj client.Object) bool {
	key := client.ObjectKeyFromObject(obj)
	w.mu.Lock()
	defer w.mu.Unlock()
	k, ok := w.known[key]
	switch {
	case !ok:
		return false
	case k.resourceVersion != "" && k.resourceVersion == obj.GetResourceVersion():
		return true
	case k.writing != nil && k.writing.hash == obj.GetAnnotations()[delivery.ContentHashAnnotation] && metav1.GetControllerOfNoCopy(obj) != nil:
		k.writing.seen = append(k.writing.seen, obj.GetResourceVersion())
		return true
	}
	return false
}

// forgetPersona drops what is known of persona's ConfigMap.
func (w *ownWrites) forgetPersona(persona types.NamespacedName) {
	w.forget(client.ObjectKey{Namespace: persona.Namespace, Name: delivery.ConfigMapName(persona.Name)})
}
