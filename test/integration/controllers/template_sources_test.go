package controllers

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// unlabelledAgents is the message of a Persona's or PromptLayer's Ready
// when the ConfigMap "agents" that the layer "agents-md" reads lacks the
// template-source label.
const unlabelledAgents = `ConfigMap "agents" (referenced by layer "agents-md") is not a template source: it lacks the label prompts.persona-operator.dev/template-source: "true"`

// layerCondition is the PromptLayer's condition of type t as
// "status/reason: message", "" when it has none.
func layerCondition(ns, name, t string) func() string {
	return func() string {
		var l v1alpha1.PromptLayer
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &l); err != nil {
			return err.Error()
		}
		c := meta.FindStatusCondition(l.Status.Conditions, t)
		if c == nil {
			return ""
		}
		return string(c.Status) + "/" + c.Reason + ": " + c.Message
	}
}

// labelAgents labels the ConfigMap "agents" as a template source, or with
// on false takes the label off.
func labelAgents(ns string, on bool) {
	var cm corev1.ConfigMap
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "agents"}, &cm)).To(Succeed())
	patch := client.MergeFrom(cm.DeepCopy())
	if on {
		metav1.SetMetaDataLabel(&cm.ObjectMeta, "prompts.persona-operator.dev/template-source", "true")
	} else {
		delete(cm.Labels, "prompts.persona-operator.dev/template-source")
	}
	Expect(k8s.Patch(ctx, &cm, patch)).To(Succeed())
}

var _ = Describe("Template sources", func() {
	It("awaits an unlabelled templateFrom ConfigMap like a missing one, then stalls, naming the label; the label heals it", func() {
		ns := newNamespace()
		apply(ns, unlabelledAgentsLayer("Be brief."))
		apply(ns, barePersona("p", "P", "layers: [{name: agents-md}]"))

		By("awaiting it for the grace period")
		Eventually(ready(ns, "p")).Should(Equal("ReferenceNotFound"))
		// Until the layer reaches the manager's cache, the Persona awaits
		// the layer itself: then the ConfigMap.
		Eventually(func() string { return readyMessage(ns, "p") }).Should(Equal(unlabelledAgents))
		Expect(condition(ns, "p", "Reconciling")).To(Equal(metav1.ConditionTrue))
		Eventually(layerCondition(ns, "agents-md", "Reconciling")).Should(Equal("True/ReferenceNotFound: " + unlabelledAgents))
		Expect(configMap(ns, "p")).To(BeNil())

		By("stalling after it")
		Eventually(func() metav1.ConditionStatus { return condition(ns, "p", "Stalled") }, referenceGracePeriod+10*time.Second).
			Should(Equal(metav1.ConditionTrue))
		Eventually(layerCondition(ns, "agents-md", "Stalled"), 10*time.Second).Should(Equal("True/ReferenceNotFound: " + unlabelledAgents))

		By("reading it once it is labelled")
		labelAgents(ns, true)
		Eventually(prompt(ns, "p")).Should(Equal("P\n\nBe brief.\n"))
		Eventually(ready(ns, "p")).Should(Equal("Rendered"))
		Eventually(layerCondition(ns, "agents-md", "Ready")).Should(Equal("True/Valid: the template parses"))
	})

	It("stops reading a source whose label is taken off", func() {
		ns := newNamespace()
		apply(ns, agentsLayer(`{AGENTS.md: "Be brief."}`))
		apply(ns, barePersona("p", "P", "layers: [{name: agents-md}]"))
		Eventually(prompt(ns, "p")).Should(Equal("P\n\nBe brief.\n"))
		labelAgents(ns, false)
		Eventually(ready(ns, "p")).Should(Equal("ReferenceNotFound"))
		Expect(readyMessage(ns, "p")).To(Equal(unlabelledAgents))
		// The last good prompt stays.
		Expect(prompt(ns, "p")()).To(Equal("P\n\nBe brief.\n"))
	})
})

// With --template-source-label=warn the manager reads unlabelled sources,
// and warns on each PromptLayer that reads one. The manager is restarted
// with the flag, then without it.
var _ = Describe("Template sources with --template-source-label=warn", Serial, func() {
	It("reads an unlabelled ConfigMap, with a Warning Event on the PromptLayer", func() {
		extra := manager.Extra
		Expect(manager.Stop()).To(Succeed())
		manager.Extra = append(append([]string{}, extra...), "--template-source-label=warn")
		Expect(manager.Start(ctx)).To(Succeed())
		DeferCleanup(func() {
			Expect(manager.Stop()).To(Succeed())
			manager.Extra = extra
			Expect(manager.Start(ctx)).To(Succeed())
		})

		ns := newNamespace()
		apply(ns, unlabelledAgentsLayer("Be brief."))
		apply(ns, barePersona("p", "P", "layers: [{name: agents-md}]"))
		Eventually(prompt(ns, "p")).Should(Equal("P\n\nBe brief.\n"))
		Eventually(layerCondition(ns, "agents-md", "Ready")).Should(Equal("True/Valid: the template parses"))
		Eventually(func() []string {
			var list eventsv1.EventList
			Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			var notes []string
			for _, e := range list.Items {
				if e.Regarding.Kind == "PromptLayer" && e.Regarding.Name == "agents-md" && e.Type == "Warning" && e.Reason == "UnlabelledTemplateSource" {
					notes = append(notes, e.Note)
				}
			}
			return notes
		}).Should(ContainElement(unlabelledAgents + "; it is read only because the manager runs with --template-source-label=warn"))

		By("seeing its changes, as every ConfigMap is watched")
		var cm corev1.ConfigMap
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "agents"}, &cm)).To(Succeed())
		cm.Data["AGENTS.md"] = "Be briefer."
		Expect(k8s.Update(ctx, &cm)).To(Succeed())
		Eventually(prompt(ns, "p")).Should(Equal("P\n\nBe briefer.\n"))
	})
})
