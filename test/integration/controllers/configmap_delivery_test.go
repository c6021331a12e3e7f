package controllers

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/test/scrape"
)

var _ = Describe("ConfigMap delivery", func() {
	var ns string
	BeforeEach(func() {
		ns = newNamespace()
		apply(ns, barePersona("p", "First"))
		Eventually(ready(ns, "p")).Should(Equal("Rendered"))
	})

	It("reflects a Persona edit within a second", func() {
		apply(ns, barePersona("p", "Second"))
		Eventually(prompt(ns, "p"), time.Second).Should(Equal("Second\n"))
	})

	It("restores a deleted ConfigMap within 5 seconds", func() {
		Expect(k8s.Delete(ctx, configMap(ns, "p"))).To(Succeed())
		Eventually(prompt(ns, "p"), 5*time.Second).Should(Equal("First\n"))
	})

	It("undoes a hand edit", func() {
		cm := configMap(ns, "p")
		cm.Data["system-prompt.md"] = "edited by hand\n"
		cm.Data["extra.md"] = "x"
		Expect(k8s.Update(ctx, cm)).To(Succeed())
		Eventually(func() map[string]string { return configMap(ns, "p").Data }, 5*time.Second).
			Should(And(HaveKeyWithValue("system-prompt.md", "First\n"), Not(HaveKey("extra.md"))))
	})

	It("keeps the last good ConfigMap when a render fails", func() {
		good := configMap(ns, "p")
		apply(ns, barePersona("p", "{{ (index .Repos 9).Name }}"))
		Eventually(ready(ns, "p")).Should(Equal("RenderFailed"))
		Consistently(func() string { return resourceVersion(ns, "p") }).Should(Equal(good.ResourceVersion))
		st := getPersona(ns, "p").Status
		Expect(st.ContentHash).To(Equal(good.Annotations["prompts.persona-operator.dev/content-hash"]))

		By("rendering again once fixed")
		apply(ns, barePersona("p", "Fixed"))
		Eventually(prompt(ns, "p")).Should(Equal("Fixed\n"))
	})

	It("writes nothing when a reconcile finds the render unchanged", func() {
		// A layer's description is not part of the render: editing it brings
		// the persona back (status.dependencies) for the same content.
		apply(ns, layerManifest("l", "app", "append", "L"))
		apply(ns, barePersona("p", "First", "layers: [{name: l}]"))
		Eventually(prompt(ns, "p")).Should(Equal("First\n\nL\n"))
		Eventually(func() int { return len(getPersona(ns, "p").Status.Dependencies) }).Should(Equal(1))
		before := getPersona(ns, "p")
		cmVersion := resourceVersion(ns, "p")
		reconciles := personaReconciles()
		apply(ns, layerManifest("l", "app", "append", "L")+"  description: edited\n")
		Eventually(personaReconciles).Should(BeNumerically(">", reconciles))
		Consistently(func() string { return resourceVersion(ns, "p") }).Should(Equal(cmVersion))
		Expect(getPersona(ns, "p").ResourceVersion).To(Equal(before.ResourceVersion))
	})

	It("is deleted with its Persona", func() {
		Expect(k8s.Delete(ctx, &v1alpha1.Persona{ObjectMeta: getPersona(ns, "p").ObjectMeta})).To(Succeed())
		cm := configMap(ns, "p")
		// envtest runs no garbage collector: the owner reference is what deletes it.
		Expect(cm.OwnerReferences).To(HaveLen(1))
		Expect(*cm.OwnerReferences[0].Controller).To(BeTrue())
		Expect(*cm.OwnerReferences[0].BlockOwnerDeletion).To(BeTrue())
	})
})

// personaReconciles is the manager's count of Persona reconciles.
func personaReconciles() float64 {
	s, err := scrape.Get(ctx, metricsURL)
	Expect(err).NotTo(HaveOccurred())
	return s.Sum("controller_runtime_reconcile_total", map[string]string{"controller": "persona"})
}

var _ = Describe("Reconciles", func() {
	It("renders a new Persona once: its own ConfigMap write does not bring it back", func() {
		const n = 20
		ns := newNamespace()
		// The specs before may have left reconciles to come: a fan-out's
		// status passes follow it by a second.
		Eventually(func() bool {
			reconciles := personaReconciles()
			time.Sleep(1500 * time.Millisecond)
			return personaReconciles() == reconciles
		}, 30*time.Second).Should(BeTrue(), "the manager never stopped reconciling")
		before := personaReconciles()
		for i := range n {
			apply(ns, barePersona(fmt.Sprintf("p%d", i), fmt.Sprintf("Persona %d", i)))
		}
		for i := range n {
			Eventually(ready(ns, fmt.Sprintf("p%d", i))).Should(Equal("Rendered"))
		}
		// A reconcile is counted once it returns, after its status patch.
		Eventually(personaReconciles).Should(BeNumerically(">=", before+n))
		// One more is tolerated: another spec's persona may be retried meanwhile.
		Consistently(personaReconciles, 2*time.Second).Should(BeNumerically("<=", before+n+1))
	})
})

var _ = Describe("ConfigMap labels", func() {
	It("takes back its ConfigMap when a hand edit removes its managed-by label", func() {
		ns := newNamespace()
		apply(ns, barePersona("p", "First"))
		Eventually(ready(ns, "p")).Should(Equal("Rendered"))
		cm := configMap(ns, "p")
		delete(cm.Labels, "app.kubernetes.io/managed-by")
		cm.Data["system-prompt.md"] = "edited by hand\n"
		Expect(k8s.Update(ctx, cm)).To(Succeed())
		Eventually(func() map[string]string { return configMap(ns, "p").Labels }, 5*time.Second).
			Should(HaveKeyWithValue("app.kubernetes.io/managed-by", "persona-operator"))
		Expect(prompt(ns, "p")()).To(Equal("First\n"))
		By("rendering the next edit into it as before")
		apply(ns, barePersona("p", "Second"))
		Eventually(prompt(ns, "p")).Should(Equal("Second\n"))
		Eventually(ready(ns, "p")).Should(Equal("Rendered"))
	})

	// The label would take it out of the watch of the operator's ConfigMaps
	// into that of the snapshots, where no edit of it would be seen.
	It("takes back its ConfigMap when a hand edit gives it a snapshot's revision label", func() {
		ns := newNamespace()
		apply(ns, barePersona("p", "First"))
		Eventually(ready(ns, "p")).Should(Equal("Rendered"))
		cm := configMap(ns, "p")
		cm.Labels["prompts.persona-operator.dev/revision"] = "1"
		cm.Data["system-prompt.md"] = "edited by hand\n"
		Expect(k8s.Update(ctx, cm)).To(Succeed())
		Eventually(func() map[string]string { return configMap(ns, "p").Labels }, 5*time.Second).
			ShouldNot(HaveKey("prompts.persona-operator.dev/revision"))
		Eventually(prompt(ns, "p"), 5*time.Second).Should(Equal("First\n"))
		By("seeing the next hand edit, back in the watch")
		cm = configMap(ns, "p")
		cm.Data["system-prompt.md"] = "edited by hand again\n"
		Expect(k8s.Update(ctx, cm)).To(Succeed())
		Eventually(prompt(ns, "p"), 5*time.Second).Should(Equal("First\n"))
	})
})
