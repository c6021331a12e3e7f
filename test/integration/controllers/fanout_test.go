package controllers

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

	DescribeTable("re-renders exactly the Personas that read the changed object",
		func(change, reader, want string, changed ...string) {
			before := versions(all...)
			apply(ns, change)
			Eventually(prompt(ns, reader)).Should(Equal(want))
			expectOnly(before, changed...)
		},
		Entry("the users of an edited layer", layerManifest("shared", "app", "append", "Shared v2"),
			"with-layer", "L\n\nShared v2\n", "with-layer"),
		Entry("grandchildren of an edited grandparent", barePersona("grand", "G", "prompt: Grand v2"),
			"child", "C Grand v2\n", "grand", "parent", "child"),
		Entry("the includers of an edited included layer", layerManifest("fragment", "package", "append", "Fragment v2"),
			"with-include", "Fragment v2\n", "with-include"),
		Entry("the readers of an edited templateFrom ConfigMap", `
apiVersion: v1
kind: ConfigMap
metadata:
  name: agents
  labels: {prompts.persona-operator.dev/template-source: "true"}
data: {AGENTS.md: "Agents v2"}
`, "with-cm", "M\n\nAgents v2\n", "with-cm"),
	)
})
