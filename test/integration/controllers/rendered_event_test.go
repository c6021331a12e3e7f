package controllers

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/persona-operator/persona-operator/internal/delivery"
)

var _ = Describe("The Rendered Event", func() {
	It("says which sections and how many lines an edit changed", func() {
		ns := newNamespace()
		apply(ns, barePersona("p", "One\nTwo"))
		Eventually(ready(ns, "p")).Should(Equal("Rendered"))
		By("describing the first render: one section of two lines")
		Eventually(events(ns, "p")).Should(ContainElement(HaveField("Note", HaveSuffix(": 1 section, 2 lines"))))

		apply(ns, layerManifest("house-style", "user", "append", "House style."))
		apply(ns, barePersona("p", "One\nTwo changed", "layers: [{name: house-style}]"))
		Eventually(func() string { return prompt(ns, "p")() }).Should(Equal("One\nTwo changed\n\nHouse style.\n"))
		By("naming the changed extension and the added layer, with the lines of system-prompt.md")
		// Lines One, Two became One, Two changed, a blank line, House style.
		// The Event names the delivered content's hash, which the ConfigMap
		// carries already; the status may patch it a moment later.
		hash := configMap(ns, "p").Annotations[delivery.ContentHashAnnotation]
		Eventually(events(ns, "p")).Should(ContainElement(HaveField("Note", And(
			ContainSubstring(hash),
			HaveSuffix(": added layer.house-style; changed extension.text; system-prompt.md +3/-1 lines")))))
	})

	It("tells an edit whose new reference arrives after it", func() {
		ns := newNamespace()
		apply(ns, barePersona("p", "One"))
		Eventually(ready(ns, "p")).Should(Equal("Rendered"))
		By("editing the Persona to list a layer that does not exist yet")
		apply(ns, barePersona("p", "One", "layers: [{name: late}]"))
		Eventually(ready(ns, "p")).Should(Equal("ReferenceNotFound"))
		apply(ns, layerManifest("late", "user", "append", "Late."))
		Eventually(func() string { return prompt(ns, "p")() }).Should(Equal("One\n\nLate.\n"))
		By("telling the edit's render on the Persona, as for any edit")
		Eventually(ready(ns, "p")).Should(Equal("Rendered"))
		hash := getPersona(ns, "p").Status.ContentHash
		Eventually(events(ns, "p")).Should(ContainElement(HaveField("Note", And(
			ContainSubstring(hash), HaveSuffix(": added layer.late; system-prompt.md +2/-0 lines")))))
	})
})
