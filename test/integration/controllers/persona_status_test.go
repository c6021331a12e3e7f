package controllers

import (
	"fmt"
	"regexp"
	"strconv"
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

var _ = Describe("Persona status", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("renders into persona-<name> with every status field (Rendered)", func() {
		apply(ns, layerManifest("run-note", "run", "append", "Run: {{ .Harness }}"))
		apply(ns, barePersona("base", "Base", "prompt: Base body."))
		apply(ns, barePersona("child", "Child", "inherit: [base]", "prompt: Child body.", "layers: [{name: run-note}]"))
		Eventually(ready(ns, "child")).Should(Equal("Rendered"))

		p := getPersona(ns, "child")
		cm := configMap(ns, "child")
		Expect(cm).NotTo(BeNil())
		Expect(cm.Data).To(HaveKeyWithValue("system-prompt.md", "Child\n\nRun: claude\n"))
		Expect(cm.Data).To(HaveKeyWithValue("persona.md", "Base body.\n\nChild body.\n"))
		Expect(cm.Data).To(HaveKey("bundle.json"))
		Expect(cm.Labels).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "persona-operator"))
		Expect(cm.Labels).To(HaveKeyWithValue("prompts.persona-operator.dev/persona", "child"))
		Expect(metav1.IsControlledBy(cm, p)).To(BeTrue())

		st := p.Status
		Expect(st.ObservedGeneration).To(Equal(p.Generation))
		Expect(st.ConfigMapName).To(Equal("persona-child"))
		Expect(st.ContentHash).To(HavePrefix("sha256:"))
		Expect(cm.Annotations).To(HaveKeyWithValue("prompts.persona-operator.dev/content-hash", st.ContentHash))
		size := 0
		for k, v := range cm.Data {
			if k != "revision.json" { // the revision is no part of the render
				size += len(k) + len(v)
			}
		}
		Expect(st.RenderedBytes).To(BeEquivalentTo(size))
		Expect(st.Sections).To(Equal([]v1alpha1.RenderedSection{
			{Name: "extension.text", Origin: "persona/child", Bytes: 5},
			{Name: "layer.run-note", Origin: "layer/run-note", Bytes: int64(len("Run: claude"))},
		}))
		Expect(st.Dependencies).To(Equal([]v1alpha1.Dependency{{Kind: "Persona", Name: "base"}, {Kind: "PromptLayer", Name: "run-note"}}))
		c := meta.FindStatusCondition(st.Conditions, "Ready")
		Expect(c.Status).To(Equal(metav1.ConditionTrue))
		Expect(c.ObservedGeneration).To(Equal(p.Generation))
		Expect(meta.FindStatusCondition(st.Conditions, "Stalled")).To(BeNil())

		By("emitting a Normal Rendered event with the hash and size")
		Eventually(events(ns, "child")).Should(ContainElement(And(
			HaveField("Type", "Normal"), HaveField("Reason", "Rendered"),
			HaveField("Note", ContainSubstring(st.ContentHash)), HaveField("Note", ContainSubstring(fmt.Sprintf("%d bytes", size))))))
	})

	It("reports a missing reference, then renders once it exists (ReferenceNotFound)", func() {
		apply(ns, barePersona("p", "P", "layers: [{name: later}]", "inherit: [parent-later]"))
		Eventually(ready(ns, "p")).Should(Equal("ReferenceNotFound"))
		msg := readyMessage(ns, "p")
		Expect(msg).To(ContainSubstring(`PromptLayer "later"`))
		Expect(msg).To(ContainSubstring(`Persona "parent-later"`))
		Expect(configMap(ns, "p")).To(BeNil())
		Eventually(events(ns, "p")).Should(ContainElement(And(HaveField("Type", "Warning"), HaveField("Reason", "ReferenceNotFound"))))
		By("awaiting the references for the grace period, then stalling")
		Expect(condition(ns, "p", "Reconciling")).To(Equal(metav1.ConditionTrue))
		Expect(condition(ns, "p", "Stalled")).To(BeEmpty())
		Eventually(func() metav1.ConditionStatus { return condition(ns, "p", "Stalled") }).Should(Equal(metav1.ConditionTrue))
		Expect(condition(ns, "p", "Reconciling")).To(BeEmpty())
		Expect(events(ns, "p")()).To(HaveLen(1), "a change from Reconciling to Stalled is not a new failure")

		apply(ns, layerManifest("later", "app", "append", "Later"))
		apply(ns, barePersona("parent-later", "Parent"))
		Eventually(ready(ns, "p")).Should(Equal("Rendered"))
		// The parent's extension "text" is replaced by the child's, in place.
		Expect(prompt(ns, "p")()).To(Equal("P\n\nLater\n"))
		Expect(condition(ns, "p", "Stalled")).To(BeEmpty())
		Expect(condition(ns, "p", "Reconciling")).To(BeEmpty())
	})

	It("reports a missing templateFrom key (ReferenceNotFound)", func() {
		apply(ns, agentsLayer(`{OTHER.md: "x"}`))
		apply(ns, barePersona("p", "P", "layers: [{name: agents-md}]"))
		Eventually(ready(ns, "p")).Should(Equal("ReferenceNotFound"))
		// Until the layer reaches the manager's cache, the Persona awaits
		// the layer itself: then the key.
		Eventually(func() string { return readyMessage(ns, "p") }).Should(ContainSubstring(`key "AGENTS.md" of ConfigMap "agents"`))
	})

	It("names the cycle (InheritanceCycle)", func() {
		apply(ns, barePersona("a", "A", "inherit: [b]"))
		apply(ns, barePersona("b", "B", "inherit: [a]"))
		Eventually(ready(ns, "a")).Should(Equal("InheritanceCycle"))
		Expect(readyMessage(ns, "a")).To(ContainSubstring("a -> b -> a"))
		Eventually(ready(ns, "b")).Should(Equal("InheritanceCycle"))
		Expect(readyMessage(ns, "b")).To(ContainSubstring("b -> a -> b"))
	})

	It("stops a chain of more than 64 Personas (InheritanceTooDeep)", func() {
		// c0 inherits c1, ... c64: 65 Personas in c0's chain, 64 in c1's.
		for i := 64; i >= 0; i-- {
			inherit := "inherit: []"
			if i < 64 {
				inherit = fmt.Sprintf("inherit: [c%d]", i+1)
			}
			apply(ns, barePersona(fmt.Sprintf("c%d", i), fmt.Sprintf("C%d", i), inherit))
		}
		Eventually(ready(ns, "c0")).Should(Equal("InheritanceTooDeep"))
		Expect(readyMessage(ns, "c0")).To(Equal(`inheritance chain holds more than the limit of 64 personas (persona "c64" is the 65th)`))
		Expect(condition(ns, "c0", "Stalled")).To(Equal(metav1.ConditionTrue))
		Eventually(ready(ns, "c1")).Should(Equal("Rendered"))
	})

	It("names the persona and section that do not render (RenderFailed)", func() {
		apply(ns, barePersona("broken", "{{ (index .Repos 3).Name }}"))
		Eventually(ready(ns, "broken")).Should(Equal("RenderFailed"))
		Expect(readyMessage(ns, "broken")).To(HavePrefix(`the system prompt of persona "broken" does not render: render system prompt section extension.text: `))

		apply(ns, barePersona("variant", `{{ if eq .Harness "codex" }}{{ (index .Repos 3).Name }}{{ end }}ok`,
			"variants: [{name: fast, harness: codex}]"))
		Eventually(ready(ns, "variant")).Should(Equal("RenderFailed"))
		Expect(readyMessage(ns, "variant")).To(HavePrefix(`the system prompt of persona "variant" does not render: variant fast: render system prompt section extension.text: `))
	})

	It("fails a hostile template fast while other personas keep rendering", func() {
		start := time.Now()
		apply(ns, barePersona("hostile", `{{ range 2000000000 }}x{{ end }}`))
		apply(ns, barePersona("calm", "Calm"))
		Eventually(ready(ns, "hostile"), 2*time.Second).Should(Equal("RenderFailed"))
		Expect(readyMessage(ns, "hostile")).To(ContainSubstring("limit of 100000 loop iterations"))
		Eventually(ready(ns, "calm"), 2*time.Second).Should(Equal("Rendered"))
		GinkgoWriter.Printf("hostile and calm settled in %s\n", time.Since(start))
	})

	It("cuts a long failure message to 4 KiB, and its Event to 1 KiB, so that a health check sees Stalled", func() {
		// fail's text is 40,000 bytes: over the 32 KiB a condition message
		// may hold, so uncut it would make every status patch fail.
		apply(ns, barePersona("loud", `{{ fail (repeat 4000 "0123456789") }}`))
		Eventually(ready(ns, "loud")).Should(Equal("RenderFailed"))
		Expect(condition(ns, "loud", "Stalled")).To(Equal(metav1.ConditionTrue))
		msg := readyMessage(ns, "loud")
		Expect(len(msg)).To(BeNumerically("<=", 4<<10))
		Expect(msg).To(HavePrefix(`the system prompt of persona "loud" does not render: render system prompt section extension.text: `))
		cut := regexp.MustCompile(`[0-9]… \(cut: (\d+) more bytes\)$`).FindStringSubmatch(msg)
		Expect(cut).NotTo(BeNil(), "message %q", msg)
		// What is kept and what is cut make up at least the fail text.
		left, err := strconv.Atoi(cut[1])
		Expect(err).NotTo(HaveOccurred())
		Expect(len(msg) + left).To(BeNumerically(">", 40000))

		warning := func() *eventsv1.Event {
			for _, e := range events(ns, "loud")() {
				if e.Reason == "RenderFailed" {
					return &e
				}
			}
			return nil
		}
		Eventually(warning).ShouldNot(BeNil())
		note := warning().Note
		Expect(len(note)).To(BeNumerically("<=", 1<<10))
		Expect(note).To(HavePrefix(`the system prompt of persona "loud" does not render: `))
		Expect(note).To(MatchRegexp(`… \(cut: \d+ more bytes\)$`))
	})

	It("gives the size (TooLarge)", func() {
		big := `{{ repeat 40000 "0123456789" }}`
		apply(ns, barePersona("huge", big, "variants: [{name: a, model: m1}, {name: b, model: m2}]"))
		Eventually(ready(ns, "huge")).Should(Equal("TooLarge"))
		Expect(readyMessage(ns, "huge")).To(MatchRegexp(`the rendered ConfigMap data is \d+ bytes, over the limit of 921600 bytes`))
	})

	It("never touches a ConfigMap it does not control (ConfigMapConflict)", func() {
		foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "persona-taken", Namespace: ns}, Data: map[string]string{"mine": "yes"}}
		Expect(k8s.Create(ctx, foreign)).To(Succeed())
		apply(ns, barePersona("taken", "T"))
		Eventually(ready(ns, "taken")).Should(Equal("ConfigMapConflict"))
		Expect(readyMessage(ns, "taken")).To(ContainSubstring("persona-taken"))
		Consistently(func() string { return resourceVersion(ns, "taken") }).Should(Equal(foreign.ResourceVersion))
		Expect(configMap(ns, "taken").Data).To(Equal(map[string]string{"mine": "yes"}))

		By("taking the name over once the foreign ConfigMap is gone")
		Expect(k8s.Delete(ctx, foreign)).To(Succeed())
		Eventually(ready(ns, "taken")).Should(Equal("Rendered"))
		Expect(prompt(ns, "taken")()).To(Equal("T\n"))
	})

	It("reads another persona's rendered prompt through templateFrom", func() {
		apply(ns, barePersona("source", "Source v1"))
		apply(ns, `
apiVersion: prompts.persona-operator.dev/v1alpha1
kind: PromptLayer
metadata: {name: from-source}
spec:
  source: app
  templateFrom: {configMapKeyRef: {name: persona-source, key: system-prompt.md}}
`)
		apply(ns, barePersona("reader", "Reader", "layers: [{name: from-source}]"))
		Eventually(prompt(ns, "reader")).Should(Equal("Reader\n\nSource v1\n"))
		apply(ns, barePersona("source", "Source v2"))
		Eventually(prompt(ns, "reader")).Should(Equal("Reader\n\nSource v2\n"))
	})

	It("reports a PromptLayer's Ready", func() {
		apply(ns, layerManifest("fine", "app", "append", "{{ .Harness }}"))
		apply(ns, `
apiVersion: prompts.persona-operator.dev/v1alpha1
kind: PromptLayer
metadata: {name: from-missing}
spec:
  templateFrom: {configMapKeyRef: {name: nowhere, key: k}}
`)
		layerReady := func(name string) func() string {
			return func() string {
				var l v1alpha1.PromptLayer
				if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &l); err != nil {
					return err.Error()
				}
				c := meta.FindStatusCondition(l.Status.Conditions, "Ready")
				if c == nil {
					return ""
				}
				return string(c.Status) + "/" + c.Reason
			}
		}
		Eventually(layerReady("fine")).Should(Equal("True/Valid"))
		Eventually(layerReady("from-missing")).Should(Equal("False/ReferenceNotFound"))
		apply(ns, `
apiVersion: v1
kind: ConfigMap
metadata:
  name: nowhere
  labels: {prompts.persona-operator.dev/template-source: "true"}
data: {k: "{{ .Slug }}"}
`)
		Eventually(layerReady("from-missing")).Should(Equal("True/Valid"))
	})
})

// events lists the events.k8s.io Events about a Persona.
func events(ns, name string) func() []eventsv1.Event {
	return func() []eventsv1.Event {
		var list eventsv1.EventList
		Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		var out []eventsv1.Event
		for _, e := range list.Items {
			if e.Regarding.Kind == "Persona" && e.Regarding.Name == name {
				out = append(out, e)
			}
		}
		return out
	}
}
