package suite

import (
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/test/controlplane"
)

// Objects decodes a multi-document manifest, in namespace ns.
func Objects(ns, manifest string) []*unstructured.Unstructured {
	out, err := controlplane.DecodeManifest(strings.NewReader(manifest))
	Expect(err).NotTo(HaveOccurred())
	for _, u := range out {
		u.SetNamespace(ns)
	}
	return out
}

// Apply creates the objects of a manifest in ns, or updates them when they exist.
func Apply(ns, manifest string) {
	for _, u := range Objects(ns, manifest) {
		Expect(CreateOrUpdate(u)).To(Succeed(), "apply %s/%s", u.GetKind(), u.GetName())
	}
}

// ApplySamples applies the Persona and PromptLayer manifests of
// config/samples in ns, and returns their files and the Personas' names.
func ApplySamples(ns string) (files, personas []string) {
	files, err := filepath.Glob(filepath.Join(root, "config", "samples", "prompts_*.yaml"))
	Expect(err).NotTo(HaveOccurred())
	Expect(files).NotTo(BeEmpty())
	for _, f := range files {
		raw, err := os.ReadFile(f)
		Expect(err).NotTo(HaveOccurred())
		for _, u := range Objects(ns, string(raw)) {
			Expect(CreateOrUpdate(u)).To(Succeed(), "apply %s from %s", u.GetName(), f)
			if u.GetKind() == "Persona" {
				personas = append(personas, u.GetName())
			}
		}
	}
	Expect(personas).NotTo(BeEmpty())
	return files, personas
}

// TryApply is Apply returning the first error, for manifests the webhook refuses.
func TryApply(ns, manifest string) error {
	for _, u := range Objects(ns, manifest) {
		if err := CreateOrUpdate(u); err != nil {
			return err
		}
	}
	return nil
}

// CreateOrUpdate creates u, or updates it to u; an update that conflicts
// with a write since it read the object (the controller's status patch) is
// tried again, as kubectl apply does.
func CreateOrUpdate(u *unstructured.Unstructured) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var current unstructured.Unstructured
		current.SetGroupVersionKind(u.GroupVersionKind())
		err := K8s.Get(Ctx, client.ObjectKeyFromObject(u), &current)
		if err != nil {
			return K8s.Create(Ctx, u)
		}
		u.SetResourceVersion(current.GetResourceVersion())
		return K8s.Update(Ctx, u)
	})
}

// GetPersona reads the Persona name of ns.
func GetPersona(ns, name string) *v1alpha1.Persona {
	var p v1alpha1.Persona
	Expect(K8s.Get(Ctx, client.ObjectKey{Namespace: ns, Name: name}, &p)).To(Succeed())
	return &p
}

// Ready returns the Ready condition's reason, "" while there is none.
func Ready(ns, name string) func() string {
	return func() string {
		var p v1alpha1.Persona
		if err := K8s.Get(Ctx, client.ObjectKey{Namespace: ns, Name: name}, &p); err != nil {
			return "error: " + err.Error()
		}
		c := meta.FindStatusCondition(p.Status.Conditions, "Ready")
		if c == nil || c.ObservedGeneration != p.Generation {
			return ""
		}
		return c.Reason
	}
}

// Condition returns the status of the Persona's condition of type t, "" when it has none.
func Condition(ns, name, t string) metav1.ConditionStatus {
	c := meta.FindStatusCondition(GetPersona(ns, name).Status.Conditions, t)
	if c == nil {
		return ""
	}
	return c.Status
}

// ReadyMessage is the message of the Persona's Ready condition.
func ReadyMessage(ns, name string) string {
	c := meta.FindStatusCondition(GetPersona(ns, name).Status.Conditions, "Ready")
	Expect(c).NotTo(BeNil())
	return c.Message
}

// ConfigMap returns persona-<name>, or nil when it does not exist.
func ConfigMap(ns, persona string) *corev1.ConfigMap {
	var cm corev1.ConfigMap
	if err := K8s.Get(Ctx, client.ObjectKey{Namespace: ns, Name: "persona-" + persona}, &cm); err != nil {
		return nil
	}
	return &cm
}

// Prompt returns system-prompt.md of persona-<name>, or "<missing>".
func Prompt(ns, persona string) func() string {
	return func() string {
		cm := ConfigMap(ns, persona)
		if cm == nil {
			return "<missing>"
		}
		return cm.Data["system-prompt.md"]
	}
}

// ResourceVersion is the resourceVersion of persona-<name>.
func ResourceVersion(ns, persona string) string {
	cm := ConfigMap(ns, persona)
	Expect(cm).NotTo(BeNil())
	return cm.ResourceVersion
}
