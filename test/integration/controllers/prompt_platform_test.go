package controllers

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/render"
)

// platformManifest is the PromptPlatform default replacing the sections
// given as key, template pairs.
func platformManifest(replaced ...string) string {
	var b strings.Builder
	b.WriteString("apiVersion: prompts.persona-operator.dev/v1alpha1\nkind: PromptPlatform\nmetadata:\n  name: default\nspec:\n  sections:\n")
	for i := 0; i < len(replaced); i += 2 {
		fmt.Fprintf(&b, "    %s: {replace: %q}\n", replaced[i], replaced[i+1])
	}
	return b.String()
}

// applyPlatform creates or updates the PromptPlatform, and deletes it when
// the spec ends.
func applyPlatform(manifest string) {
	for _, u := range objects("", manifest) {
		Expect(createOrUpdate(u)).To(Succeed())
	}
	DeferCleanup(deletePlatform)
}

func deletePlatform() {
	pp := &v1alpha1.PromptPlatform{}
	pp.Name = v1alpha1.PromptPlatformName
	Expect(client.IgnoreNotFound(k8s.Delete(ctx, pp))).To(Succeed())
	Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(pp), &v1alpha1.PromptPlatform{}))
	}).Should(BeTrue())
}

// keeping is a Persona that removes every platform section but keep, and
// has the extension text.
func keeping(name, keep, text string, more ...string) string {
	return strings.Replace(barePersona(name, text, more...), "\n      "+keep+": {remove: true}", "", 1)
}

// owning is keeping whose kept section key is replaced by template.
func owning(name, key, template, text string) string {
	return strings.Replace(keeping(name, key, text), "  systemPrompt:\n    platform:", "  systemPrompt:\n    platform:\n      "+key+": {replace: "+template+"}", 1)
}

// deleteOtherPersonas deletes the Personas other specs left behind: the
// PromptPlatform is read by every Persona of the cluster, and a fan-out's
// count must be one these specs know.
func deleteOtherPersonas(ns string) {
	var list v1alpha1.PersonaList
	Expect(k8s.List(ctx, &list)).To(Succeed())
	namespaces := map[string]bool{}
	for _, p := range list.Items {
		if p.Namespace != ns {
			namespaces[p.Namespace] = true
		}
	}
	for n := range namespaces {
		Expect(k8s.DeleteAllOf(ctx, &v1alpha1.Persona{}, client.InNamespace(n))).To(Succeed())
	}
	Eventually(func() int {
		Expect(k8s.List(ctx, &list)).To(Succeed())
		return len(list.Items)
	}).Should(BeZero())
}

// propagatedNotes are the notes of the Propagated Events on the
// PromptPlatform that exists now, not on one of an earlier spec.
func propagatedNotes() []string {
	var pp v1alpha1.PromptPlatform
	Expect(k8s.Get(ctx, client.ObjectKey{Name: v1alpha1.PromptPlatformName}, &pp)).To(Succeed())
	var out []string
	for _, e := range eventsOf("default", "PromptPlatform", pp.Name, "Propagated")() {
		if e.Regarding.UID == pp.UID {
			out = append(out, e.Note)
		}
	}
	return out
}

// The PromptPlatform is one object for the whole cluster: its specs run
// alone (Serial), each on a cluster without other Personas.
var _ = Describe("PromptPlatform", Serial, func() {
	var ns string
	BeforeEach(func() {
		ns = newNamespace()
		deleteOtherPersonas(ns)
		deletePlatform()
	})

	It("replaces the shipped sections before inheritance, with provenance and the dependency", func() {
		apply(ns, keeping("keeps-waiver", "waiver", "K"))
		apply(ns, owning("own-waiver", "waiver", "Mine.", "O"))
		apply(ns, `
apiVersion: prompts.persona-operator.dev/v1alpha1
kind: Persona
metadata: {name: child}
spec: {inherit: [keeps-waiver]}
`)
		Eventually(prompt(ns, "own-waiver")).Should(Equal("Mine.\n\nO\n"))

		applyPlatform(platformManifest("waiver", "Platform waiver."))
		Eventually(prompt(ns, "keeps-waiver")).Should(Equal("Platform waiver.\n\nK\n"))
		Eventually(prompt(ns, "child")).Should(Equal("Platform waiver.\n\nK\n"))
		Eventually(ready(ns, "keeps-waiver")).Should(Equal("Rendered"))
		Eventually(func() []v1alpha1.RenderedSection { return getPersona(ns, "keeps-waiver").Status.Sections }).Should(ContainElement(
			v1alpha1.RenderedSection{Name: "platform.waiver", Origin: "platform/default", Bytes: int64(len("Platform waiver."))}))
		Expect(getPersona(ns, "keeps-waiver").Status.Dependencies).To(ContainElement(v1alpha1.Dependency{Kind: "PromptPlatform", Name: "default"}))
		Eventually(liveHealth("", "PromptPlatform", "default")).Should(Equal("Current Healthy: every section template parses"))
		// A Persona's replace still wins over the platform's.
		Consistently(prompt(ns, "own-waiver"), "500ms").Should(Equal("Mine.\n\nO\n"))

		By("deleting it, the shipped section comes back")
		shipped := ""
		for _, s := range render.DefaultSections() {
			if s.Key == "waiver" {
				shipped = s.Template
			}
		}
		deletePlatform()
		Eventually(prompt(ns, "keeps-waiver")).Should(Equal(shipped + "\n\nK\n"))
		Eventually(func() []v1alpha1.Dependency { return getPersona(ns, "keeps-waiver").Status.Dependencies }).ShouldNot(
			ContainElement(v1alpha1.Dependency{Kind: "PromptPlatform", Name: "default"}))
	})

	It("re-renders only the Personas whose output changes, with one Propagated Event naming the count", func() {
		apply(ns, keeping("keeps-waiver", "waiver", "W"))
		apply(ns, keeping("keeps-completion", "completion", "C"))
		apply(ns, owning("own-waiver", "waiver", "Mine.", "O"))
		apply(ns, barePersona("bare", "B"))
		apply(ns, `
apiVersion: prompts.persona-operator.dev/v1alpha1
kind: Persona
metadata: {name: child}
spec: {inherit: [keeps-waiver]}
`)
		all := []string{"keeps-waiver", "keeps-completion", "own-waiver", "bare", "child"}
		for _, n := range all {
			Eventually(ready(ns, n)).Should(Equal("Rendered"), n)
		}

		// Created: waiver and completion change; keeps-waiver, child and
		// keeps-completion render one of them from the platform.
		applyPlatform(platformManifest("waiver", "Waiver v1.", "completion", "Completion v1."))
		Eventually(prompt(ns, "child")).Should(Equal("Waiver v1.\n\nW\n"))
		Eventually(prompt(ns, "keeps-completion")).Should(Equal("Completion v1.\n\nC\n"))
		Eventually(propagatedNotes).Should(ConsistOf("the change re-renders 3 Personas"))

		By("an edit of one section")
		for _, n := range all {
			Eventually(ready(ns, n)).Should(Equal("Rendered"), n)
		}
		before := map[string]string{}
		for _, n := range all {
			before[n] = resourceVersion(ns, n)
		}
		applyPlatform(platformManifest("waiver", "Waiver v2.", "completion", "Completion v1."))
		Eventually(prompt(ns, "keeps-waiver")).Should(Equal("Waiver v2.\n\nW\n"))
		Eventually(prompt(ns, "child")).Should(Equal("Waiver v2.\n\nW\n"))
		Eventually(propagatedNotes).Should(ConsistOf("the change re-renders 3 Personas", "the change re-renders 2 Personas"))
		for _, n := range []string{"keeps-completion", "own-waiver", "bare"} {
			Consistently(func() string { return resourceVersion(ns, n) }, "500ms").Should(Equal(before[n]), n)
		}
		// No Event on the dependents: the news is the platform's.
		for _, n := range []string{"keeps-waiver", "child"} {
			Expect(eventsOf(ns, "Persona", n, "Rendered")()).To(HaveLen(1), n) // its first render only
		}

		By("a description edit changes no section and re-renders nothing")
		edited := strings.Replace(platformManifest("waiver", "Waiver v2.", "completion", "Completion v1."), "spec:\n", "spec:\n  description: reworded\n", 1)
		renders := map[string]string{}
		for _, n := range all {
			renders[n] = resourceVersion(ns, n)
		}
		applyPlatform(edited)
		for _, n := range all {
			Consistently(func() string { return resourceVersion(ns, n) }, "300ms").Should(Equal(renders[n]), n)
		}
		Expect(propagatedNotes()).To(HaveLen(2))
	})

	It("fails a Persona that asks for harnessPrompt: replace while the platform forbids it, and renders it once allowed", func() {
		apply(ns, barePersona("replacing", "R", "harnessPrompt: replace"))
		apply(ns, barePersona("keeping", "K"))
		apply(ns, `
apiVersion: prompts.persona-operator.dev/v1alpha1
kind: Persona
metadata: {name: child}
spec:
  inherit: [replacing]
  variants: [{name: kept, harnessPrompt: keep}]
`)
		for _, n := range []string{"replacing", "keeping", "child"} {
			Eventually(ready(ns, n)).Should(Equal("Rendered"), n)
		}
		Expect(configMap(ns, "child").Data["bundle.json"]).To(ContainSubstring(`"harnessPrompt":"replace"`))

		forbidding := platformManifest() + "  harnessPrompt: {allowReplace: false}\n"
		applyPlatform(forbidding)
		const rule = " is forbidden by PromptPlatform default (its spec.harnessPrompt.allowReplace is false); set keep, or leave it unset"
		Eventually(ready(ns, "replacing")).Should(Equal("HarnessPromptForbidden"))
		Expect(readyMessage(ns, "replacing")).To(Equal("spec.harnessPrompt: replace" + rule))
		Expect(condition(ns, "replacing", "Stalled")).To(Equal(metav1.ConditionTrue))
		Eventually(ready(ns, "child")).Should(Equal("HarnessPromptForbidden"))
		Expect(readyMessage(ns, "child")).To(Equal(`spec.harnessPrompt: replace, inherited from persona "replacing",` + rule))
		// Only the Personas whose chain sets replace are rendered again.
		Eventually(propagatedNotes).Should(ConsistOf("the change re-renders 2 Personas"))
		Expect(ready(ns, "keeping")()).To(Equal("Rendered"))
		// The ConfigMap keeps the last good render.
		Expect(configMap(ns, "replacing").Data["bundle.json"]).To(ContainSubstring(`"harnessPrompt":"replace"`))

		By("allowing replace again")
		applyPlatform(strings.Replace(forbidding, "allowReplace: false", "allowReplace: true", 1))
		for _, n := range []string{"replacing", "child"} {
			Eventually(ready(ns, n)).Should(Equal("Rendered"), n)
		}
	})

	It("refuses a broken template, naming the field, and any name but default", func() {
		err := tryApply("", platformManifest("workspace", "{{ .Nope }}"))
		Expect(err).To(MatchError(ContainSubstring("spec.sections.workspace.replace")))
		Expect(err).To(MatchError(ContainSubstring(".Nope")))

		// The CRD's CEL rule refuses the name before the webhook sees it.
		err = tryApply("", strings.Replace(platformManifest(), "name: default", "name: ours", 1))
		Expect(err).To(MatchError(ContainSubstring("metadata.name must be default: a cluster has at most one PromptPlatform")))
	})

	It("converges when the PromptPlatform is created last, concurrently and unthrottled with shuffled Personas", func() {
		seed := GinkgoRandomSeed()
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		const n = 24
		var objs []*unstructured.Unstructured
		var names []string
		for i := range n {
			name := fmt.Sprintf("p-%02d", i)
			names = append(names, name)
			objs = append(objs, objects(ns, keeping(name, "waiver", name))...)
		}
		objs = shuffled(rng, objs)
		platform := objects("", platformManifest("waiver", "Concurrent waiver."))
		objs = append(objs, platform...)
		DeferCleanup(deletePlatform)
		done, err := createAtOnce(unthrottledClient(), objs)
		Expect(err).NotTo(HaveOccurred(), "order %s", order(objs))
		_, stuck := awaitRendered(ns, names, done, 20*time.Second)
		Expect(stuck).To(BeEmpty(), "order %s", order(objs))
		for _, name := range names {
			Eventually(prompt(ns, name)).Should(Equal("Concurrent waiver.\n\n"+name+"\n"), name)
		}
	})
})
