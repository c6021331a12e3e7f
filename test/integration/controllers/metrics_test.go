package controllers

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

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

var _ = Describe("Metrics", func() {
	It("counts Personas by Ready reason", func() {
		cycles := personasWithReason("InheritanceCycle")()
		ns := newNamespace()
		apply(ns, barePersona("a", "A", "inherit: [b]"))
		apply(ns, barePersona("b", "B", "inherit: [a]"))
		Eventually(personasWithReason("InheritanceCycle")).Should(Equal(cycles + 2))
		apply(ns, barePersona("b", "B"))
		Eventually(personasWithReason("InheritanceCycle")).Should(Equal(cycles))
		Expect(personasWithReason("Rendered")()).To(BeNumerically(">=", 2))
	})
})
