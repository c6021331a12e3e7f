package controllers

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/test/argocd"
)

// health is how GitOps tools read a live object: kstatus (Flux) and the
// Argo CD health script of config/argocd, as "<kstatus> <argo status>: <argo message>".
func health(obj *unstructured.Unstructured) string {
	res, err := status.Compute(obj)
	Expect(err).NotTo(HaveOccurred())
	script, err := argocd.Script(inRepo())
	Expect(err).NotTo(HaveOccurred())
	argo, message, err := argocd.Health(script, obj.Object)
	Expect(err).NotTo(HaveOccurred())
	return fmt.Sprintf("%s %s: %s", res.Status, argo, message)
}

// liveHealth reads the object kind/name of ns from the API server and returns its health.
func liveHealth(ns, kind, name string) func() string {
	return func() string {
		var u unstructured.Unstructured
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: "prompts.persona-operator.dev", Version: "v1alpha1", Kind: kind})
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &u); err != nil {
			return "error: " + err.Error()
		}
		return health(&u)
	}
}

var _ = Describe("Health as kstatus and Argo CD read it", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("reads a Persona awaiting a reference as in progress, then failed, then current once it arrives", func() {
		apply(ns, barePersona("p", "P", "layers: [{name: later}]"))
		Eventually(liveHealth(ns, "Persona", "p")).Should(And(
			HavePrefix("InProgress Progressing: "), ContainSubstring(`PromptLayer "later" (referenced by persona "p") not found`)))
		Eventually(liveHealth(ns, "Persona", "p")).Should(Equal(
			`Failed Degraded: ReferenceNotFound: PromptLayer "later" (referenced by persona "p") not found`))

		apply(ns, layerManifest("later", "app", "append", "Later"))
		Eventually(liveHealth(ns, "Persona", "p")).Should(HavePrefix("Current Healthy: ConfigMap persona-p holds the render"))
	})

	It("restarts the grace period when the missing references change", func() {
		apply(ns, barePersona("p", "P", "layers: [{name: first}]"))
		Eventually(liveHealth(ns, "Persona", "p")).Should(HavePrefix("Failed Degraded: "))
		apply(ns, barePersona("p", "P", "layers: [{name: first}, {name: second}]"))
		Eventually(liveHealth(ns, "Persona", "p")).Should(And(HavePrefix("InProgress Progressing: "), ContainSubstring(`"second"`)))
		Eventually(liveHealth(ns, "Persona", "p")).Should(And(HavePrefix("Failed Degraded: "), ContainSubstring(`"second"`)))
	})

	It("reads a Persona that cannot render as failed at once", func() {
		apply(ns, barePersona("a", "A", "inherit: [b]"))
		apply(ns, barePersona("b", "B", "inherit: [a]"))
		Eventually(liveHealth(ns, "Persona", "a")).Should(Equal("Failed Degraded: InheritanceCycle: inheritance cycle: a -> b -> a"))
		Expect(condition(ns, "a", "Reconciling")).To(BeEmpty())
	})

	It("reads a Persona whose new generation is not yet observed as in progress", func() {
		apply(ns, barePersona("p", "P"))
		Eventually(liveHealth(ns, "Persona", "p")).Should(HavePrefix("Current Healthy: "))
		// The object the update returns is the live one at that instant: a
		// new generation under the previous one's status.
		u := objects(ns, barePersona("p", "P2"))[0]
		Expect(createOrUpdate(u)).To(Succeed())
		Expect(health(u)).To(HavePrefix("InProgress Progressing: waiting for the controller to observe generation 2"))
		Eventually(liveHealth(ns, "Persona", "p")).Should(HavePrefix("Current Healthy: "))
	})

	It("reads a PromptLayer awaiting its templateFrom ConfigMap as in progress, then failed, then current", func() {
		apply(ns, `
apiVersion: prompts.persona-operator.dev/v1alpha1
kind: PromptLayer
metadata: {name: agents-md}
spec:
  templateFrom: {configMapKeyRef: {name: agents, key: AGENTS.md}}
`)
		Eventually(liveHealth(ns, "PromptLayer", "agents-md")).Should(Equal(
			`InProgress Progressing: ConfigMap "agents" (referenced by layer "agents-md") not found`))
		Eventually(liveHealth(ns, "PromptLayer", "agents-md")).Should(Equal(
			`Failed Degraded: ReferenceNotFound: ConfigMap "agents" (referenced by layer "agents-md") not found`))
		apply(ns, `{apiVersion: v1, kind: ConfigMap, metadata: {name: agents, labels: {prompts.persona-operator.dev/template-source: "true"}}, data: {AGENTS.md: "Be brief."}}`)
		Eventually(liveHealth(ns, "PromptLayer", "agents-md")).Should(Equal("Current Healthy: the template parses"))
	})

	It("reads a PromptLayer whose new generation is not yet observed as in progress", func() {
		apply(ns, layerManifest("l", "app", "append", "v1"))
		Eventually(liveHealth(ns, "PromptLayer", "l")).Should(Equal("Current Healthy: the template parses"))
		u := objects(ns, layerManifest("l", "app", "append", "v2"))[0]
		Expect(createOrUpdate(u)).To(Succeed())
		Expect(health(u)).To(HavePrefix("InProgress Progressing: waiting for the controller to observe generation 2"))
		Eventually(liveHealth(ns, "PromptLayer", "l")).Should(Equal("Current Healthy: the template parses"))
	})

	It("reads a PromptLayer whose template does not parse as failed at once", func() {
		apply(ns, agentsLayer(`{AGENTS.md: "{{ .Nope"}`))
		Eventually(liveHealth(ns, "PromptLayer", "agents-md")).Should(HavePrefix("Failed Degraded: TemplateInvalid: "))
	})
})
