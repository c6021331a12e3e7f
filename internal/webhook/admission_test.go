package webhook_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/persona-operator/persona-operator/test/fixtures"
	"github.com/persona-operator/persona-operator/test/suite"
)

var _ = Describe("Admission", func() {
	var ns string
	BeforeEach(func() { ns = suite.NewNamespace() })

	persona := func(spec string) string {
		return "apiVersion: prompts.persona-operator.dev/v1alpha1\nkind: Persona\nmetadata: {name: p}\nspec:\n" + fixtures.IndentLines(strings.TrimSpace(spec), "  ")
	}
	layer := func(spec string) string {
		return "apiVersion: prompts.persona-operator.dev/v1alpha1\nkind: PromptLayer\nmetadata: {name: l}\nspec:\n" + fixtures.IndentLines(strings.TrimSpace(spec), "  ")
	}

	DescribeTable("refuses each class of admission problem with the field path",
		func(manifest, field, message string) {
			err := suite.TryApply(ns, manifest)
			Expect(err).To(HaveOccurred())
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
			Expect(err.Error()).To(ContainSubstring(field))
			Expect(err.Error()).To(ContainSubstring(message))
		},
		Entry("an unknown key under spec", persona("modle: x"), "spec.modle", "unknown field"),
		Entry("a misspelled key deep under spec", persona("systemPrompt:\n  platform:\n    waiver: {remove: true, replce: x}"), "spec.systemPrompt.platform.waiver.replce", `did you mean "replace"`),
		Entry("a misspelled extension key", persona("systemPrompt:\n  extensions: [{id: e, template: x, tempalte: y}]"), "spec.systemPrompt.extensions[0].tempalte", `did you mean "template"`),
		Entry("a platform key outside the catalog", persona("systemPrompt:\n  platform:\n    prMergability: {remove: true}"), "spec.systemPrompt.platform.prMergability", `did you mean "prMergeability"`),
		// The CRD's CEL rules hold these even without the webhook; the API
		// server applies them before it calls the webhook.
		Entry("replace and remove together", persona("systemPrompt:\n  platform:\n    waiver: {replace: x, remove: true}"), "spec.systemPrompt.platform[waiver]", "exactly one"),
		Entry("neither replace nor remove", persona("systemPrompt:\n  platform:\n    waiver: {replce: x}"), "spec.systemPrompt.platform[waiver]", "exactly one"),
		Entry("remove: false", persona("systemPrompt:\n  platform:\n    waiver: {remove: false}"), "spec.systemPrompt.platform[waiver]", "leave the key unset"),
		Entry("a bad extension id", persona("systemPrompt:\n  extensions: [{id: Bad-ID, template: x}]"), "spec.systemPrompt.extensions[0].id", ""),
		Entry("an empty extension template", persona(`systemPrompt:
  extensions: [{id: e, template: ""}]`), "spec.systemPrompt.extensions[0].template", ""),
		Entry("a template that does not parse", persona("systemPrompt:\n  extensions: [{id: e, template: '{{ if }}'}]"), "spec.systemPrompt.extensions[0].template", "missing value for if"),
		Entry("a function outside the set", persona(`systemPrompt:
  extensions: [{id: e, template: '{{ env "HOME" }}'}]`), "spec.systemPrompt.extensions[0].template", `function "env" not defined`),
		Entry("a non-literal include", persona("systemPrompt:\n  extensions: [{id: e, template: '{{ include .Slug . }}'}]"), "spec.systemPrompt.extensions[0].template", "literal layer name"),
		Entry("a field chain that does not exist", persona("systemPrompt:\n  extensions: [{id: e, template: '{{ range .Repos }}{{ .Nmae }}{{ end }}'}]"), "spec.systemPrompt.extensions[0].template", "no field Nmae"),
		Entry("a bad harness", persona("harness: gemini-cli"), "spec.harness", "Unsupported value"),
		Entry("a description over 1024 bytes", persona("description: "+strings.Repeat("é", 600)), "spec.description", "1024"),
		Entry("too many parents", persona("inherit: [a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q]"), "spec.inherit", "16"),
		Entry("a layer with both template and templateFrom", layer("template: x\ntemplateFrom: {configMapKeyRef: {name: c, key: k}}"), "spec", "templateFrom"),
		Entry("a layer with neither", layer("mode: append"), "spec", "template"),
		Entry("a layer with a bad source", layer("source: Bad_Source\ntemplate: x"), "spec.source", ""),
		Entry("a layer template that does not parse", layer("template: '{{ end }}'"), "spec.template", "unexpected"),
	)

	It("refuses a bad Persona name", func() {
		err := suite.TryApply(ns, strings.Replace(persona("model: x"), "name: p", "name: 9lives", 1))
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("metadata.name"))
	})

	It("accepts a disable layer without a template", func() {
		Expect(suite.TryApply(ns, layer("mode: disable"))).To(Succeed())
	})

	It("accepts the samples", func() {
		_, personas := suite.ApplySamples(ns)
		for _, name := range personas {
			Eventually(suite.Ready(ns, name)).Should(Equal("Rendered"), name)
		}
	})

	It("refuses a misspelled key from kubectl apply --validate=false", func() {
		kubectl, err := exec.LookPath("kubectl")
		if err != nil {
			Skip("kubectl is not installed")
		}
		file := filepath.Join(GinkgoT().TempDir(), "p.yaml")
		Expect(os.WriteFile(file, []byte(persona("systemPrompt:\n  platform:\n    waiver: {remove: true, replce: x}")), 0o600)).To(Succeed())
		out, err := exec.Command(kubectl, "--kubeconfig", suite.Plane.AdminKubeconfig, "apply", "--validate=false", "-n", ns, "-f", file).CombinedOutput()
		Expect(err).To(HaveOccurred(), "%s", out)
		Expect(string(out)).To(ContainSubstring("spec.systemPrompt.platform.waiver.replce"))
		Expect(string(out)).To(ContainSubstring(`did you mean "replace"`))
	})

	It("warns about references that do not exist yet", func() {
		kubectl, err := exec.LookPath("kubectl")
		if err != nil {
			Skip("kubectl is not installed")
		}
		file := filepath.Join(GinkgoT().TempDir(), "p.yaml")
		Expect(os.WriteFile(file, []byte(persona("inherit: [not-yet]\nlayers: [{name: nor-this}]")), 0o600)).To(Succeed())
		out, err := exec.Command(kubectl, "--kubeconfig", suite.Plane.AdminKubeconfig, "apply", "-n", ns, "-f", file).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "%s", out)
		Expect(string(out)).To(ContainSubstring(`Warning: spec.inherit[0]: Persona "not-yet" does not exist yet`))
		Expect(string(out)).To(ContainSubstring(`Warning: spec.layers[0].name: PromptLayer "nor-this" does not exist yet`))
	})

	It("warns about a templateFrom ConfigMap only while it does not exist", func() {
		kubectl, err := exec.LookPath("kubectl")
		if err != nil {
			Skip("kubectl is not installed")
		}
		dir := GinkgoT().TempDir()
		applyFile := func(name, manifest string) string {
			file := filepath.Join(dir, name)
			Expect(os.WriteFile(file, []byte(manifest), 0o600)).To(Succeed())
			out, err := exec.Command(kubectl, "--kubeconfig", suite.Plane.AdminKubeconfig, "apply", "-n", ns, "-f", file).CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), "%s", out)
			return string(out)
		}
		const missing = `Warning: spec.templateFrom.configMapKeyRef.name: ConfigMap "agents" does not exist yet ` +
			`or lacks the label prompts.persona-operator.dev/template-source: "true"`
		Expect(applyFile("early.yaml", layer("source: app\ntemplateFrom: {configMapKeyRef: {name: agents, key: AGENTS.md}}"))).To(ContainSubstring(missing))
		// A ConfigMap the operator does not write, applied with its layer:
		// the webhook knows it once the template sources' cache does.
		Eventually(func() string { return applyFile("both.yaml", fixtures.AgentsLayer("{AGENTS.md: Be brief.}")) }).
			ShouldNot(ContainSubstring("does not exist yet"))
	})

	It("warns about a templateFrom ConfigMap that lacks the template-source label", func() {
		kubectl, err := exec.LookPath("kubectl")
		if err != nil {
			Skip("kubectl is not installed")
		}
		file := filepath.Join(GinkgoT().TempDir(), "unlabelled.yaml")
		Expect(os.WriteFile(file, []byte(fixtures.UnlabelledAgentsLayer("Be brief.")), 0o600)).To(Succeed())
		out, err := exec.Command(kubectl, "--kubeconfig", suite.Plane.AdminKubeconfig, "apply", "-n", ns, "-f", file).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "%s", out)
		// The webhook reads only the template sources' cache, which holds
		// labelled ConfigMaps: it cannot tell a missing one from this.
		Expect(string(out)).To(ContainSubstring(`Warning: spec.templateFrom.configMapKeyRef.name: ConfigMap "agents" does not exist yet ` +
			`or lacks the label prompts.persona-operator.dev/template-source: "true"`))
	})
})
