package controllers

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/test/scrape"
)

// personasWithReason is the manager's gauge of Personas whose Ready reason is reason.
func personasWithReason(reason string) func() float64 {
	return func() float64 {
		s, err := scrape.Get(ctx, metricsURL)
		Expect(err).NotTo(HaveOccurred())
		return s.Sum("persona_personas_by_ready_reason", map[string]string{"reason": reason})
	}
}

// gaugeOverAPI is how many more Personas with Ready reason reason the
// manager's gauge counts than the API server holds, in every namespace:
// other specs' Personas settle meanwhile, so the gauge is compared with
// the cluster, not with a count taken before.
func gaugeOverAPI(reason string) func() float64 {
	return func() float64 {
		var list v1alpha1.PersonaList
		Expect(k8s.List(ctx, &list)).To(Succeed())
		held := 0
		for _, p := range list.Items {
			if c := apimeta.FindStatusCondition(p.Status.Conditions, v1alpha1.ReadyCondition); c != nil && c.Reason == reason {
				held++
			}
		}
		return personasWithReason(reason)() - float64(held)
	}
}

var _ = Describe("Metrics", func() {
	It("counts Personas by Ready reason", func() {
		ns := newNamespace()
		apply(ns, barePersona("a", "A", "inherit: [b]"))
		apply(ns, barePersona("b", "B", "inherit: [a]"))
		Eventually(ready(ns, "a")).Should(Equal("InheritanceCycle"))
		Eventually(ready(ns, "b")).Should(Equal("InheritanceCycle"))
		Eventually(gaugeOverAPI("InheritanceCycle")).Should(BeZero())
		Expect(personasWithReason("InheritanceCycle")()).To(BeNumerically(">=", 2))

		apply(ns, barePersona("b", "B"))
		Eventually(ready(ns, "a")).Should(Equal("Rendered"))
		Eventually(ready(ns, "b")).Should(Equal("Rendered"))
		Eventually(gaugeOverAPI("InheritanceCycle")).Should(BeZero())
		Expect(personasWithReason("Rendered")()).To(BeNumerically(">=", 2))
	})
})
