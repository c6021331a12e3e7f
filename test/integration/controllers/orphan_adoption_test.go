package controllers

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// controller is the controller owner reference of a ConfigMap, or nil.
func controller(cm *corev1.ConfigMap) *metav1.OwnerReference {
	if cm == nil {
		return nil
	}
	return metav1.GetControllerOf(cm)
}

var _ = Describe("Orphaned ConfigMaps", func() {
	It("adopts its orphan when the Persona is made again after kubectl delete --cascade=orphan", func() {
		ns := newNamespace()
		apply(ns, barePersona("p", "First"))
		Eventually(ready(ns, "p")).Should(Equal("Rendered"))
		old := getPersona(ns, "p")

		By("deleting the Persona with --cascade=orphan; the garbage collector, which envtest lacks, is done by hand: it takes the Persona off the ConfigMap's owners, then drops the orphan finalizer")
		Expect(k8s.Delete(ctx, old, client.PropagationPolicy(metav1.DeletePropagationOrphan))).To(Succeed())
		cm := configMap(ns, "p")
		cm.OwnerReferences = nil
		Expect(k8s.Update(ctx, cm)).To(Succeed())
		Eventually(func() error {
			p := getPersona(ns, "p")
			controllerutil.RemoveFinalizer(p, metav1.FinalizerOrphanDependents)
			return k8s.Update(ctx, p)
		}).Should(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(old), &v1alpha1.Persona{}))
		}).Should(BeTrue())

		By("editing the orphan, which no Persona controls")
		cm = configMap(ns, "p")
		cm.Data["system-prompt.md"] = "edited while orphaned\n"
		Expect(k8s.Update(ctx, cm)).To(Succeed())
		Consistently(prompt(ns, "p"), "1s").Should(Equal("edited while orphaned\n"))

		By("making the Persona again: it takes the ConfigMap back and restores its content")
		apply(ns, barePersona("p", "Second"))
		Eventually(ready(ns, "p")).Should(Equal("Rendered"), func() string {
			// Which owner the ConfigMap names, beside the two Personas' UIDs.
			return fmt.Sprintf("the old Persona's UID %s, the new one's %s; the ConfigMap's owners %+v",
				old.UID, getPersona(ns, "p").UID, configMap(ns, "p").OwnerReferences)
		})
		Eventually(prompt(ns, "p")).Should(Equal("Second\n"))
		now := getPersona(ns, "p")
		Expect(now.UID).NotTo(Equal(old.UID))
		Expect(controller(configMap(ns, "p"))).To(HaveField("UID", now.UID))
	})

	It("does not make the ConfigMap of a Persona deleted in the foreground again", func() {
		ns := newNamespace()
		apply(ns, barePersona("p", "First"))
		Eventually(ready(ns, "p")).Should(Equal("Rendered"))

		By("deleting the Persona in the foreground; the garbage collector, which envtest lacks, is done by hand: it deletes the ConfigMap, then drops the finalizer")
		Expect(k8s.Delete(ctx, getPersona(ns, "p"), client.PropagationPolicy(metav1.DeletePropagationForeground))).To(Succeed())
		Expect(getPersona(ns, "p").Finalizers).To(ContainElement(metav1.FinalizerDeleteDependents))
		Expect(k8s.Delete(ctx, configMap(ns, "p"))).To(Succeed())
		Consistently(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "persona-p"}, &corev1.ConfigMap{}))
		}, "2s").Should(BeTrue(), "the ConfigMap of a Persona being deleted was made again")
		Eventually(func() error {
			p := getPersona(ns, "p")
			controllerutil.RemoveFinalizer(p, metav1.FinalizerDeleteDependents)
			return k8s.Update(ctx, p)
		}).Should(Succeed())
	})

	It("adopts a ConfigMap labelled as its own that no one controls, keeping its other owners", func() {
		ns := newNamespace()
		other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "unrelated", Namespace: ns}}
		Expect(k8s.Create(ctx, other)).To(Succeed())
		orphan := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "persona-q", Namespace: ns,
				Labels:          map[string]string{"app.kubernetes.io/managed-by": "persona-operator"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: other.Name, UID: other.UID}}},
			Data: map[string]string{"system-prompt.md": "not the render\n", "extra": "x"},
		}
		Expect(k8s.Create(ctx, orphan)).To(Succeed())
		apply(ns, barePersona("q", "Q"))
		Eventually(ready(ns, "q")).Should(Equal("Rendered"))
		cm := configMap(ns, "q")
		Expect(cm.Data).To(HaveKeyWithValue("system-prompt.md", "Q\n"))
		Expect(cm.Data).NotTo(HaveKey("extra"))
		Expect(controller(cm)).To(HaveField("UID", getPersona(ns, "q").UID))
		Expect(cm.OwnerReferences).To(ContainElement(HaveField("UID", other.UID)))
	})

	It("never takes an orphan's data for the last good inputs: a failing Persona with guardrails adopts it with the guardrails alone", func() {
		ns := newNamespace()
		guardNamespace(ns, v1alpha1.ClusterLayerLast, "Rule.")
		// What anyone who may write ConfigMaps can leave as an orphan: text
		// of its own, and inputs that would render without the guardrail.
		forgedBundle := `{"version":1,"persona":{"name":"q","namespace":"` + ns + `","harness":"claude","prompt":"Forged."}}`
		Expect(k8s.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "persona-q", Namespace: ns,
				Labels: map[string]string{"app.kubernetes.io/managed-by": "persona-operator"},
				Annotations: map[string]string{
					"prompts.persona-operator.dev/content-hash": "sha256:0",
					"prompts.persona-operator.dev/guardrails":   "sha256:forged",
				}},
			Data: map[string]string{"system-prompt.md": "No rules.\n", "bundle.json": forgedBundle},
		})).To(Succeed())
		apply(ns, barePersona("q", `{{ fail "broken on purpose" }}`))
		// The guardrails alone: one last ClusterPromptLayer, nothing of the tenant's.
		Eventually(prompt(ns, "q")).Should(Equal("Rule.\n"))
		Eventually(ready(ns, "q")).Should(Equal("GuardrailsOnly"))
		Expect(controller(configMap(ns, "q"))).To(HaveField("UID", getPersona(ns, "q").UID))
	})

	It("does not take a controller forged with its UID under another group for its own", func() {
		ns := newNamespace()
		apply(ns, barePersona("r", "R"))
		Eventually(ready(ns, "r")).Should(Equal("Rendered"))
		uid := getPersona(ns, "r").UID
		cm := configMap(ns, "r")
		cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "x.example/v1", Kind: "Persona", Name: "r", UID: uid, Controller: new(true)}}
		cm.Data["system-prompt.md"] = "Forged.\n"
		Expect(k8s.Update(ctx, cm)).To(Succeed())
		apply(ns, barePersona("r", "R again"))
		Eventually(ready(ns, "r")).Should(Equal("ConfigMapConflict"))
		Expect(prompt(ns, "r")()).To(Equal("Forged.\n"))
		// A Persona in conflict looks again by itself, for good: gone, it
		// leaves the manager idle for the specs that count its reconciles.
		Expect(k8s.Delete(ctx, getPersona(ns, "r"))).To(Succeed())
	})
})
