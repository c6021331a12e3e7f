package controllers

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/test/scrape"
)

// eventsOf lists the Events of reason on the object kind/name of ns.
func eventsOf(ns, kind, name, reason string) func() []eventsv1.Event {
	return func() []eventsv1.Event {
		var list eventsv1.EventList
		Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		var out []eventsv1.Event
		for _, e := range list.Items {
			if e.Regarding.Kind == kind && e.Regarding.Name == name && e.Reason == reason {
				out = append(out, e)
			}
		}
		return out
	}
}

// propagations are the notes of the Propagated Events on the object
// kind/name of ns at a resourceVersion past since, one per change told: an
// Event told again (a series) is listed once for each time.
func propagations(ns, kind, name, since string) func() []string {
	after, err := strconv.ParseInt(since, 10, 64)
	Expect(err).NotTo(HaveOccurred())
	return func() []string {
		var notes []string
		for _, e := range eventsOf(ns, kind, name, "Propagated")() {
			// envtest's resourceVersions are etcd's revisions, in order.
			if v, err := strconv.ParseInt(e.Regarding.ResourceVersion, 10, 64); err != nil || v <= after {
				continue
			}
			times := 1
			if e.Series != nil {
				times = int(e.Series.Count)
			}
			for range times {
				notes = append(notes, e.Note)
			}
		}
		return notes
	}
}

// renders is the manager's count of Persona renders.
func renders() float64 {
	s, err := scrape.Get(ctx, metricsURL)
	Expect(err).NotTo(HaveOccurred())
	return s.Sum("persona_render_duration_seconds_count", nil)
}

// statusCurrent reports whether the Persona's status describes what its
// ConfigMap holds.
func statusCurrent(ns, name string) func() bool {
	return func() bool {
		cm := configMap(ns, name)
		p := getPersona(ns, name)
		return cm != nil && p.Status.ContentHash == cm.Annotations["prompts.persona-operator.dev/content-hash"] &&
			strings.Contains(readyMessage(ns, name), p.Status.ContentHash)
	}
}

var _ = Describe("Changes propagate, told once on the changed object", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("tells the edited layer how many Personas it re-renders, and none of them", func() {
		const n = 30
		apply(ns, layerManifest("shared", "app", "append", "Shared v1"))
		for i := range n {
			apply(ns, barePersona(fmt.Sprintf("p%02d", i), fmt.Sprintf("P%d", i), "layers: [{name: shared}]"))
		}
		for i := range n {
			Eventually(ready(ns, fmt.Sprintf("p%02d", i))).Should(Equal("Rendered"))
		}
		rendered := len(eventsOf(ns, "Persona", "p00", "Rendered")())
		Expect(rendered).To(Equal(1), "the first render is the Persona's own news")
		var layer v1alpha1.PromptLayer
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shared"}, &layer)).To(Succeed())
		before := layer.ResourceVersion

		apply(ns, layerManifest("shared", "app", "append", "Shared v2"))
		for i := range n {
			name := fmt.Sprintf("p%02d", i)
			Eventually(prompt(ns, name)).Should(Equal(fmt.Sprintf("P%d\n\nShared v2\n", i)))
		}
		By("the statuses following the ConfigMaps")
		for i := range n {
			Eventually(statusCurrent(ns, fmt.Sprintf("p%02d", i)), 10*time.Second).Should(BeTrue())
		}
		By("the edit told once, naming every Persona")
		// Told of the layer as the edit left it, past the version it had
		// before. Its creation may have been told too, once: when the
		// manager heard of the layer after some of the Personas that list it
		// (their watches are apart), the creation re-rendered those.
		edit := []string{fmt.Sprintf("the change re-renders %d Personas", n)}
		Eventually(propagations(ns, "PromptLayer", "shared", before)).Should(Equal(edit))
		Consistently(propagations(ns, "PromptLayer", "shared", before), "2s").Should(Equal(edit))
		Expect(len(propagations(ns, "PromptLayer", "shared", "0")())).To(BeNumerically("<=", 2), "the creation told at most once")
		Consistently(eventsOf(ns, "Persona", "p00", "Rendered"), "2s").Should(HaveLen(rendered))
	})

	It("renders each dependent once: the status pass reports the render the fan-out delivered", func() {
		const n = 10
		names := make([]string, n)
		apply(ns, layerManifest("shared", "app", "append", "Shared v1"))
		for i := range n {
			names[i] = fmt.Sprintf("p%02d", i)
			apply(ns, barePersona(names[i], fmt.Sprintf("P%d", i), "layers: [{name: shared}]"))
		}
		for _, name := range names {
			Eventually(statusCurrent(ns, name), 10*time.Second).Should(BeTrue())
		}
		before := renders()
		apply(ns, layerManifest("shared", "app", "append", "Shared v2, which is longer"))
		for i, name := range names {
			Eventually(prompt(ns, name)).Should(Equal(fmt.Sprintf("P%d\n\nShared v2, which is longer\n", i)))
			Eventually(statusCurrent(ns, name), 10*time.Second).Should(BeTrue())
			// The status tells the size of the new render: every key and value of the ConfigMap's data
			// but revision.json, which is no part of the render.
			size := 0
			for k, v := range withoutRevision(configMap(ns, name).Data) {
				size += len(k) + len(v)
			}
			Expect(getPersona(ns, name).Status.RenderedBytes).To(BeEquivalentTo(size), name)
		}
		Eventually(renders).Should(BeNumerically(">=", before+n))
		// One more is tolerated: another spec's Persona may be retried meanwhile.
		Consistently(renders, "2s").Should(BeNumerically("<=", before+n+1))
	})

	It("tells an edited parent, which also gets its own Rendered Event", func() {
		apply(ns, barePersona("parent", "Parent", "prompt: v1"))
		apply(ns, barePersona("a", "A {{ .Persona.Prompt }}", "inherit: [parent]"))
		apply(ns, barePersona("b", "B {{ .Persona.Prompt }}", "inherit: [parent]"))
		for _, name := range []string{"parent", "a", "b"} {
			Eventually(ready(ns, name)).Should(Equal("Rendered"))
		}
		apply(ns, barePersona("parent", "Parent", "prompt: v2"))
		Eventually(prompt(ns, "a")).Should(Equal("A v2\n"))
		Eventually(prompt(ns, "b")).Should(Equal("B v2\n"))
		Eventually(eventsOf(ns, "Persona", "parent", "Propagated")).Should(ConsistOf(HaveField("Note", "the change re-renders 2 Personas")))
		Eventually(eventsOf(ns, "Persona", "parent", "Rendered")).Should(HaveLen(2))
		Consistently(eventsOf(ns, "Persona", "a", "Rendered"), "2s").Should(HaveLen(1))
	})

	It("tells the PromptLayer reading an edited templateFrom ConfigMap", func() {
		apply(ns, agentsLayer(`{AGENTS.md: "v1"}`))
		apply(ns, barePersona("p", "P", "layers: [{name: agents-md}]"))
		Eventually(prompt(ns, "p")).Should(Equal("P\n\nv1\n"))
		apply(ns, agentsLayer(`{AGENTS.md: "v2"}`))
		Eventually(prompt(ns, "p")).Should(Equal("P\n\nv2\n"))
		Eventually(eventsOf(ns, "PromptLayer", "agents-md", "Propagated")).Should(ContainElement(HaveField("Note", "the change re-renders 1 Persona")))
		Eventually(statusCurrent(ns, "p"), 10*time.Second).Should(BeTrue())
	})

	It("converges after the manager is killed in the middle of a fan-out", func() {
		const n = 100
		apply(ns, layerManifest("shared", "app", "append", "Shared v1"))
		for i := range n {
			apply(ns, barePersona(fmt.Sprintf("p%03d", i), "P", "layers: [{name: shared}]"))
		}
		for i := range n {
			Eventually(ready(ns, fmt.Sprintf("p%03d", i))).Should(Equal("Rendered"))
		}
		apply(ns, layerManifest("shared", "app", "append", "Shared v2"))
		Eventually(func() int {
			changed := 0
			for i := range n {
				if prompt(ns, fmt.Sprintf("p%03d", i))() == "P\n\nShared v2\n" {
					changed++
				}
			}
			return changed
		}).Should(BeNumerically(">", 0))
		Expect(manager.Kill()).To(Succeed())
		Expect(manager.Start(ctx)).To(Succeed())
		for i := range n {
			name := fmt.Sprintf("p%03d", i)
			Eventually(prompt(ns, name), 30*time.Second).Should(Equal("P\n\nShared v2\n"))
			Eventually(statusCurrent(ns, name), 30*time.Second).Should(BeTrue())
		}
	})
})
