package controllers_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
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

	It("writes nothing when a re-apply changes nothing", func() {
		before := getPersona(ns, "p")
		cmVersion := resourceVersion(ns, "p")
		apply(ns, barePersona("p", "First"))
		Consistently(func() string { return resourceVersion(ns, "p") }).Should(Equal(cmVersion))
		after := getPersona(ns, "p")
		Expect(after.Generation).To(Equal(before.Generation))
		Expect(after.ResourceVersion).To(Equal(before.ResourceVersion))
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
