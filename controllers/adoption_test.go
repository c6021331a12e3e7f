package controllers_test

import (
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
		Eventually(ready(ns, "p")).Should(Equal("Rendered"))
		Eventually(prompt(ns, "p")).Should(Equal("Second\n"))
		now := getPersona(ns, "p")
		Expect(now.UID).NotTo(Equal(old.UID))
		Expect(controller(configMap(ns, "p"))).To(HaveField("UID", now.UID))
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
})
