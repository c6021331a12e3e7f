package persona

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/internal/controller/kube"
	"github.com/persona-operator/persona-operator/internal/delivery"
)

func TestOwnWrites(t *testing.T) {
	key := client.ObjectKey{Namespace: "ns", Name: "persona-p"}
	// event is the ConfigMap's metadata as a watch event carries it.
	event := func(resourceVersion, hash string, controlled bool) *metav1.PartialObjectMetadata {
		m := kube.ConfigMapMetadata()
		m.Name, m.Namespace, m.ResourceVersion = key.Name, key.Namespace, resourceVersion
		m.Annotations = map[string]string{delivery.ContentHashAnnotation: hash}
		if controlled {
			m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "prompts.persona-operator.dev/v1alpha1", Kind: "Persona", Name: "p", UID: "u", Controller: new(true)}}
		}
		return m
	}

	w := newOwnWrites()
	if w.holds(event("1", "sha256:a", true)) {
		t.Error("holds a ConfigMap nothing is known of")
	}
	if _, ok := w.hashAt(key, "1"); ok {
		t.Error("knows the hash of a ConfigMap nothing is known of")
	}

	// A write whose event comes before its answer.
	w.writing(key, "sha256:a", nil)
	if !w.holds(event("2", "sha256:a", true)) {
		t.Error("the event of the write under way is not recognized")
	}
	for name, e := range map[string]*metav1.PartialObjectMetadata{
		"another hash":   event("3", "sha256:b", true),
		"no controller":  event("3", "sha256:a", false),
		"no annotations": {ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace, ResourceVersion: "3"}},
	} {
		if w.holds(e) {
			t.Errorf("%s: taken for the write under way", name)
		}
	}
	if w.wrote(key, "2") {
		t.Error("the write's own event was taken for someone else's write")
	}
	if hash, ok := w.hashAt(key, "2"); !ok || hash != "sha256:a" {
		t.Errorf("hash at the version written: %q, %v; want sha256:a", hash, ok)
	}
	if !w.holds(event("2", "sha256:a", true)) {
		t.Error("the event of the version written is not recognized after the answer")
	}
	// A hand edit of the data keeps the annotation, and only changes the version.
	if w.holds(event("4", "sha256:a", true)) {
		t.Error("a later version with the same annotation was taken for the controller's own")
	}
	if _, ok := w.hashAt(key, "4"); ok {
		t.Error("knows the hash of a version nobody read")
	}

	// Someone else's write with the same annotation lands between the
	// controller's write and its answer.
	w.writing(key, "sha256:c", nil)
	w.holds(event("5", "sha256:c", true))
	w.holds(event("6", "sha256:c", true))
	if !w.wrote(key, "5") {
		t.Error("a write answered with version 5, whose ConfigMap was also seen at version 6, was not reported overwritten")
	}

	w.read(key, "6", "sha256:d", nil)
	if hash, ok := w.hashAt(key, "6"); !ok || hash != "sha256:d" {
		t.Errorf("hash at the version read: %q, %v; want sha256:d", hash, ok)
	}
	if !w.holds(event("6", "sha256:c", true)) {
		t.Error("the event of the version read is not recognized")
	}

	w.writing(key, "sha256:e", nil)
	w.forget(key) // the write failed
	if _, ok := w.hashAt(key, "6"); ok {
		t.Error("a failed write leaves what the ConfigMap holds known")
	}
	if w.holds(event("7", "sha256:e", true)) {
		t.Error("a failed write's hash is still taken for the controller's own")
	}

	w.read(key, "8", "sha256:f", nil)
	w.forget(key)
	if _, ok := w.hashAt(key, "8"); ok || w.holds(event("8", "sha256:f", true)) {
		t.Error("known after forget")
	}
}

// Only a write's answer makes a ConfigMap one this process wrote: a read,
// as of another owner's ConfigMap in the way, or a write that failed, does
// not; forgetting its Persona clears it.
func TestOwnWritesWroteBefore(t *testing.T) {
	key := client.ObjectKey{Namespace: "ns", Name: "persona-p"}
	w := newOwnWrites()
	w.read(key, "1", "sha256:theirs", nil)
	w.writing(key, "sha256:a", nil)
	w.forget(key) // the write failed
	if w.wroteBefore(key) {
		t.Error("a ConfigMap read, and a write that failed, count as written")
	}
	w.writing(key, "sha256:a", nil)
	w.wrote(key, "2")
	w.read(key, "3", "sha256:b", nil)
	if !w.wroteBefore(key) {
		t.Error("a ConfigMap written, then read again, does not count as written")
	}
	w.forgetPersona(client.ObjectKey{Namespace: "ns", Name: "p"})
	if w.wroteBefore(key) {
		t.Error("a forgotten Persona's ConfigMap counts as written")
	}
}
