package delivery

import (
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// Which ConfigMaps are a Persona's: its live ConfigMap and its snapshots are
// those its name is for and the Persona of that name controls, and a
// snapshot carries a snapshot's labels too. Anyone who may write a
// ConfigMap may give it any name and owners, so the controllers, the
// caches' trims and the byte cap ask these rather than the name alone.

// ControlledByPersona reports whether obj's controller is the Persona
// named name: by kind, API version and name, whatever its UID.
func ControlledByPersona(obj metav1.Object, name string) bool {
	ref := metav1.GetControllerOfNoCopy(obj)
	return ref != nil && ref.Kind == v1alpha1.PersonaKind && ref.Name == name && ref.APIVersion == v1alpha1.GroupVersion.String()
}

// Controls reports whether p is obj's controller: its owner reference by
// UID, and by kind, API version and name too, so that a reference forged
// with p's UID under another kind or group is not taken for p's.
func Controls(p *v1alpha1.Persona, obj metav1.Object) bool {
	return metav1.IsControlledBy(obj, p) && ControlledByPersona(obj, p.Name)
}

// PersonaOfConfigMap is the Persona whose live ConfigMap has this name: a
// Persona's name has no dot, a snapshot's has.
func PersonaOfConfigMap(name string) (string, bool) {
	persona, ok := strings.CutPrefix(name, ConfigMapPrefix)
	return persona, ok && persona != "" && !strings.Contains(persona, ".")
}

// IsLiveConfigMap reports whether obj is the live ConfigMap of the Persona
// its name is for, controlled by that Persona.
func IsLiveConfigMap(obj metav1.Object) bool {
	name, ok := PersonaOfConfigMap(obj.GetName())
	return ok && ControlledByPersona(obj, name)
}

// IsSnapshot reports whether obj is a snapshot its Persona controls, with
// a snapshot's labels.
func IsSnapshot(obj metav1.Object) bool {
	persona, _, ok := LabelledSnapshot(obj)
	return ok && ControlledByPersona(obj, persona)
}

// IsSnapshotOf reports whether obj is p's snapshot of revision n: of that
// name, with a snapshot's labels, and controlled by p. Only the operator
// may label a ConfigMap so, and a Persona's controller reference alone can
// be forged where the ConfigMap policy is not installed.
func IsSnapshotOf(p *v1alpha1.Persona, obj metav1.Object, n int64) bool {
	persona, m, ok := LabelledSnapshot(obj)
	return ok && persona == p.Name && m == n && Controls(p, obj)
}

// PodRevision is the revision a pod's RevisionLabel names, as the webhook
// writes it: a positive number in canonical decimal, else none.
func PodRevision(labels map[string]string) (int64, bool) {
	v, ok := labels[RevisionLabel]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 || strconv.FormatInt(n, 10) != v {
		return 0, false
	}
	return n, true
}
