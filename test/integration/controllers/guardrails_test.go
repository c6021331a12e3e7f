package controllers

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

var guardrailCount int

// newGuardrail creates a ClusterPromptLayer selecting the namespaces
// labelled guardrails=<its own name>, so that it reaches no other spec's
// Personas, and deletes it when the spec ends.
func newGuardrail(position v1alpha1.ClusterLayerPosition, template string) *v1alpha1.ClusterPromptLayer {
	return newNamedGuardrail(nextGuardrailName(), position, template)
}

// nextGuardrailName is the name of a guardrail not created yet, for a
// Namespace to be labelled before it exists.
func nextGuardrailName() string {
	guardrailCount++
	return fmt.Sprintf("guardrail-%d-%d", GinkgoParallelProcess(), guardrailCount)
}

// newNamedGuardrail is newGuardrail with the name given.
func newNamedGuardrail(name string, position v1alpha1.ClusterLayerPosition, template string) *v1alpha1.ClusterPromptLayer {
	l := &v1alpha1.ClusterPromptLayer{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.ClusterPromptLayerSpec{
			Position: position, Template: template,
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"guardrails": name}},
		},
	}
	Expect(k8s.Create(ctx, l)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, l))).To(Succeed()) })
	return l
}

// guardNamespace is a new guardrail (newGuardrail) that selects ns.
func guardNamespace(ns string, position v1alpha1.ClusterLayerPosition, template string) *v1alpha1.ClusterPromptLayer {
	g := newGuardrail(position, template)
	labelNamespace(ns, g.Name)
	return g
}

// labelNamespace sets (value "") or removes the label guardrails on ns.
func labelNamespace(ns, value string) {
	var n corev1.Namespace
	Expect(k8s.Get(ctx, client.ObjectKey{Name: ns}, &n)).To(Succeed())
	if value == "" {
		delete(n.Labels, "guardrails")
	} else {
		n.Labels["guardrails"] = value
	}
	Expect(k8s.Update(ctx, &n)).To(Succeed())
}

var _ = Describe("Guardrails (ClusterPromptLayer)", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("puts a guardrail into every selected Persona that no tenant edit can take out", func() {
		g := guardNamespace(ns, v1alpha1.ClusterLayerLast, "Never push to the default branch.")
		apply(ns, barePersona("p", "Tenant text"))
		Eventually(prompt(ns, "p")).Should(Equal("Tenant text\n\nNever push to the default branch.\n"))
		// The status follows the ConfigMap.
		Eventually(ready(ns, "p")).Should(Equal("Rendered"))
		st := getPersona(ns, "p").Status
		Expect(st.Dependencies).To(ContainElements(
			v1alpha1.Dependency{Kind: "ClusterPromptLayer", Name: g.Name}, v1alpha1.Dependency{Kind: "Namespace", Name: ns}))
		Expect(st.Sections).To(ContainElement(v1alpha1.RenderedSection{
			Name: "clusterlayer." + g.Name, Origin: "clusterlayer/" + g.Name, Bytes: int64(len("Never push to the default branch.")),
		}))

		By("a run-rank replace layer, then a run-rank disable layer")
		apply(ns, layerManifest("silence", "run", "disable", "")+"---\n"+layerManifest("mine", "run", "replace", "Only mine."))
		apply(ns, barePersona("p", "Tenant text", "layers: [{name: mine}]"))
		Eventually(prompt(ns, "p")).Should(Equal("Only mine.\n\nNever push to the default branch.\n"))
		apply(ns, barePersona("p", "Tenant text", "layers: [{name: mine}, {name: silence}]"))
		Eventually(prompt(ns, "p")).Should(Equal("Never push to the default branch.\n"))
	})

	It("re-renders the selected Personas, and only those, when the guardrail is edited", func() {
		g := guardNamespace(ns, v1alpha1.ClusterLayerFirst, "Rule v1.")
		other := newNamespace()
		apply(ns, barePersona("p", "P"))
		apply(other, barePersona("q", "Q"))
		Eventually(prompt(ns, "p")).Should(Equal("Rule v1.\n\nP\n"))
		Eventually(prompt(other, "q")).Should(Equal("Q\n"))
		untouched := resourceVersion(other, "q")

		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(g), g)).To(Succeed())
		g.Spec.Template = "Rule v2."
		Expect(k8s.Update(ctx, g)).To(Succeed())
		Eventually(prompt(ns, "p"), 5*time.Second).Should(Equal("Rule v2.\n\nP\n"))
		Expect(resourceVersion(other, "q")).To(Equal(untouched))
		Eventually(eventsOf("default", "ClusterPromptLayer", g.Name, "Propagated")).Should(
			ContainElement(HaveField("Note", "the change re-renders 1 Persona")))
	})

	It("renders a guardrail created after the Personas it selects, with the Namespace labelled before it", func() {
		guardrailCount++
		name := fmt.Sprintf("guardrail-%d-%d", GinkgoParallelProcess(), guardrailCount)
		labelNamespace(ns, name)
		apply(ns, barePersona("p", "P"))
		Eventually(prompt(ns, "p")).Should(Equal("P\n"))
		l := &v1alpha1.ClusterPromptLayer{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha1.ClusterPromptLayerSpec{Template: "Late rule.",
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"guardrails": name}}},
		}
		Expect(unthrottledClient().Create(ctx, l)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, l))).To(Succeed()) })
		Eventually(prompt(ns, "p"), 10*time.Second).Should(Equal("P\n\nLate rule.\n"))
	})

	It("re-renders a namespace's Personas when its labels select or deselect a guardrail", func() {
		g := newGuardrail(v1alpha1.ClusterLayerLast, "Guarded.")
		apply(ns, barePersona("p", "P"))
		Eventually(prompt(ns, "p")).Should(Equal("P\n"))
		labelNamespace(ns, g.Name)
		Eventually(prompt(ns, "p"), 5*time.Second).Should(Equal("P\n\nGuarded.\n"))
		labelNamespace(ns, "")
		Eventually(prompt(ns, "p"), 5*time.Second).Should(Equal("P\n"))
	})

	It("reports a ClusterPromptLayer Ready as kstatus and Argo CD read it", func() {
		g := newGuardrail(v1alpha1.ClusterLayerLast, "G")
		Eventually(liveHealth("", "ClusterPromptLayer", g.Name)).Should(Equal("Current Healthy: the template parses"))
	})

	It("does not take a ClusterPromptLayer for a PromptLayer of the same name", func() {
		g := newGuardrail(v1alpha1.ClusterLayerLast, "G")
		apply(ns, barePersona("p", "P", "layers: [{name: "+g.Name+"}]"))
		Eventually(ready(ns, "p")).Should(Equal("ReferenceNotFound"))
		Expect(readyMessage(ns, "p")).To(ContainSubstring(`PromptLayer "` + g.Name + `"`))
	})
})
