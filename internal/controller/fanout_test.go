package controller_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Each change re-renders exactly the Personas whose render read the changed
// object, directly or through inheritance and include.
var _ = Describe("Fan-out", func() {
	var ns string
	versions := func(names ...string) map[string]string {
		out := map[string]string{}
		for _, n := range names {
			out[n] = resourceVersion(ns, n)
		}
		return out
	}
	all := []string{"grand", "parent", "child", "with-layer", "with-include", "with-cm", "unrelated"}

	BeforeEach(func() {
		ns = newNamespace()
		apply(ns, layerManifest("shared", "app", "append", "Shared v1"))
		apply(ns, layerManifest("fragment", "package", "append", "Fragment v1"))
		apply(ns, agentsLayer(`{AGENTS.md: "Agents v1"}`))
		apply(ns, barePersona("grand", "G", "prompt: Grand v1"))
		apply(ns, barePersona("parent", "P", "inherit: [grand]"))
		apply(ns, barePersona("child", "C {{ .Persona.Prompt }}", "inherit: [parent]"))
		apply(ns, barePersona("with-layer", "L", "layers: [{name: shared}]"))
		apply(ns, barePersona("with-include", `{{ include "fragment" . }}`))
		apply(ns, barePersona("with-cm", "M", "layers: [{name: agents-md}]"))
		apply(ns, barePersona("unrelated", "U"))
		for _, n := range all {
			Eventually(ready(ns, n)).Should(Equal("Rendered"), n)
		}
		Expect(prompt(ns, "child")()).To(Equal("C Grand v1\n"))
	})

	expectOnly := func(before map[string]string, changed ...string) {
		isChanged := map[string]bool{}
		for _, n := range changed {
			isChanged[n] = true
		}
		for _, n := range all {
			if isChanged[n] {
				Eventually(func() string { return resourceVersion(ns, n) }).ShouldNot(Equal(before[n]), n)
			}
		}
		for _, n := range all {
			if !isChanged[n] {
				Consistently(func() string { return resourceVersion(ns, n) }, "500ms").Should(Equal(before[n]), n)
			}
		}
	}

	It("re-renders the users of an edited layer", func() {
		before := versions(all...)
		apply(ns, layerManifest("shared", "app", "append", "Shared v2"))
		Eventually(prompt(ns, "with-layer")).Should(Equal("L\n\nShared v2\n"))
		expectOnly(before, "with-layer")
	})

	It("re-renders grandchildren of an edited grandparent", func() {
		before := versions(all...)
		apply(ns, barePersona("grand", "G", "prompt: Grand v2"))
		Eventually(prompt(ns, "child")).Should(Equal("C Grand v2\n"))
		expectOnly(before, "grand", "parent", "child")
	})

	It("re-renders the includers of an edited included layer", func() {
		before := versions(all...)
		apply(ns, layerManifest("fragment", "package", "append", "Fragment v2"))
		Eventually(prompt(ns, "with-include")).Should(Equal("Fragment v2\n"))
		expectOnly(before, "with-include")
	})

	It("re-renders the readers of an edited templateFrom ConfigMap", func() {
		before := versions(all...)
		apply(ns, `
apiVersion: v1
kind: ConfigMap
metadata:
  name: agents
  labels: {prompts.persona-operator.dev/template-source: "true"}
data: {AGENTS.md: "Agents v2"}
`)
		Eventually(prompt(ns, "with-cm")).Should(Equal("M\n\nAgents v2\n"))
		expectOnly(before, "with-cm")
	})
})
