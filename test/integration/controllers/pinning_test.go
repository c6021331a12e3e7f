package controllers

import (
	"encoding/json"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

const pinAnnotation = "prompts.persona-operator.dev/pin-revision"

// setPin sets the Persona's pin-revision annotation to value, or removes
// it when value is "", by a merge patch, as kubectl annotate does.
func setPin(ns, name, value string) error { return patchAnnotation(ns, name, pinAnnotation, value) }

// patchAnnotation sets (or, with value "", removes) the Persona's
// annotation key by a merge patch, as kubectl annotate does.
func patchAnnotation(ns, name, key, value string) error {
	v := any(value)
	if value == "" {
		v = nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: v}}})
	Expect(err).NotTo(HaveOccurred())
	p := &v1alpha1.Persona{}
	p.Namespace, p.Name = ns, name
	return k8s.Patch(ctx, p, client.RawPatch(types.MergePatchType, patch))
}

// pinned is a manifest of one Persona with the pin-revision annotation n,
// for an edit that keeps the pin (an update replaces the annotations).
func pinned(manifest string, n int) string {
	return strings.Replace(manifest, "metadata:\n", fmt.Sprintf("metadata:\n  annotations: {%s: %q}\n", pinAnnotation, fmt.Sprint(n)), 1)
}

// pinnedRevision is the Persona's status.pinnedRevision.
func pinnedRevision(ns, name string) func() int64 {
	return func() int64 { return getPersona(ns, name).Status.PinnedRevision }
}

// pinCondition is the Persona's Pinned condition as "<status> <reason>", "" without one.
func pinCondition(ns, name string) func() string {
	return func() string {
		c := meta.FindStatusCondition(getPersona(ns, name).Status.Conditions, "Pinned")
		if c == nil {
			return ""
		}
		return string(c.Status) + " " + c.Reason
	}
}

// revisions are the numbers of the Persona's status.history.
func revisions(ns, name string) []int64 {
	var out []int64
	for _, e := range getPersona(ns, name).Status.History {
		out = append(out, e.Revision)
	}
	return out
}

// eventReasons are the reasons of the Events of the Persona.
func eventReasons(ns, name string) func() []string {
	return func() []string {
		var out []string
		for _, e := range events(ns, name)() {
			out = append(out, e.Reason)
		}
		return out
	}
}

var _ = Describe("Pinning a revision", func() {
	It("delivers the pinned revision byte for byte while renders go on, and an unpin brings back the latest", func() {
		ns := newNamespace()
		apply(ns, barePersona("p", "One"))
		Eventually(currentRevision(ns, "p")).Should(Equal(int64(1)))
		apply(ns, barePersona("p", "Two"))
		Eventually(currentRevision(ns, "p")).Should(Equal(int64(2)))
		Eventually(snapshotNames(ns, "p")).Should(Equal([]string{"persona-p.r1", "persona-p.r2"}))
		r1 := snapshotOf(ns, "p", 1)

		By("pinning revision 1")
		Expect(setPin(ns, "p", "1")).To(Succeed())
		Eventually(pinnedRevision(ns, "p")).Should(Equal(int64(1)))
		live := configMap(ns, "p")
		Expect(live.Data).To(Equal(r1.Data), "the live ConfigMap holds revision 1's data, revision.json too")
		Expect(live.Annotations).To(HaveKeyWithValue("prompts.persona-operator.dev/revision", "1"))
		p := getPersona(ns, "p")
		Expect(p.Status.CurrentRevision).To(Equal(int64(1)))
		Expect(p.Status.LatestRevision).To(Equal(int64(2)))
		Expect(p.Status.ContentHash).To(Equal(r1.Annotations["prompts.persona-operator.dev/content-hash"]))
		Expect(ready(ns, "p")()).To(Equal("Pinned"))
		Expect(readyMessage(ns, "p")).To(Equal("pinned to revision 1: ConfigMap persona-p holds revision 1; the latest revision is 2, which renders"))
		Expect(pinCondition(ns, "p")()).To(Equal("True Pinned"))
		Expect(revisions(ns, "p")).To(Equal([]int64{1, 2}), "a pin makes no revision")
		Eventually(eventReasons(ns, "p")).Should(ContainElement("Pinned"))
		Eventually(liveHealth(ns, "Persona", "p")).Should(Equal("Current Suspended: " + readyMessage(ns, "p")))

		By("rendering an edit as the latest revision 3, snapshotted, not delivered")
		version := live.ResourceVersion
		apply(ns, pinned(barePersona("p", "Three"), 1))
		Eventually(func() int64 { return getPersona(ns, "p").Status.LatestRevision }).Should(Equal(int64(3)))
		Eventually(snapshotNames(ns, "p")).Should(Equal([]string{"persona-p.r1", "persona-p.r2", "persona-p.r3"}))
		Expect(snapshotOf(ns, "p", 3).Data["system-prompt.md"]).To(Equal("Three\n"))
		Consistently(func() string { return resourceVersion(ns, "p") }).Should(Equal(version))
		Expect(getPersona(ns, "p").Status.CurrentRevision).To(Equal(int64(1)))
		Expect(readyMessage(ns, "p")).To(HaveSuffix("the latest revision is 3, which renders"))

		By("unpinning: the latest revision is delivered, and no revision is made")
		Expect(setPin(ns, "p", "")).To(Succeed())
		Eventually(prompt(ns, "p")).Should(Equal("Three\n"))
		Eventually(currentRevision(ns, "p")).Should(Equal(int64(3)))
		Eventually(pinCondition(ns, "p")).Should(BeEmpty())
		Expect(configMap(ns, "p").Annotations).To(HaveKeyWithValue("prompts.persona-operator.dev/revision", "3"))
		Expect(withoutRevision(configMap(ns, "p").Data)).To(Equal(withoutRevision(snapshotOf(ns, "p", 3).Data)))
		p = getPersona(ns, "p")
		Expect(p.Status.PinnedRevision).To(BeZero())
		Expect(p.Status.LatestRevision).To(Equal(int64(3)))
		Expect(revisions(ns, "p")).To(Equal([]int64{1, 2, 3}))
		Eventually(ready(ns, "p")).Should(Equal("Rendered"))
		Eventually(eventReasons(ns, "p")).Should(ContainElement("Unpinned"))
	})

	It("delivers the pinned revision's inputs with a guardrail added since, as a new revision based on it", func() {
		ns := newNamespace()
		apply(ns, barePersona("p", "One"))
		Eventually(currentRevision(ns, "p")).Should(Equal(int64(1)))
		apply(ns, barePersona("p", "Two"))
		Eventually(currentRevision(ns, "p")).Should(Equal(int64(2)))
		g := guardNamespace(ns, v1alpha1.ClusterLayerLast, "Guard.")
		Eventually(prompt(ns, "p")).Should(Equal("Two\n\nGuard.\n"))
		Eventually(currentRevision(ns, "p")).Should(Equal(int64(3)))

		Expect(setPin(ns, "p", "1")).To(Succeed())
		Eventually(pinnedRevision(ns, "p")).Should(Equal(int64(1)))
		Eventually(prompt(ns, "p")).Should(Equal("One\n\nGuard.\n"))
		p := getPersona(ns, "p")
		Expect(p.Status.CurrentRevision).To(Equal(int64(4)))
		Expect(p.Status.LatestRevision).To(Equal(int64(3)))
		live := configMap(ns, "p")
		Expect(live.Annotations).To(HaveKeyWithValue("prompts.persona-operator.dev/revision", "4"))
		var rec struct {
			Revision, Base int64
			Cause          v1alpha1.RevisionInput
		}
		Expect(json.Unmarshal([]byte(live.Data["revision.json"]), &rec)).To(Succeed())
		Expect(rec.Revision).To(Equal(int64(4)))
		Expect(rec.Base).To(Equal(int64(1)))
		Expect(rec.Cause).To(Equal(v1alpha1.RevisionInput{Kind: "ClusterPromptLayer", Name: g.Name, Generation: 1}))
		Expect(readyMessage(ns, "p")).To(Equal("pinned to revision 1: ConfigMap persona-p holds revision 4 (revision 1 re-rendered with the current ClusterPromptLayers); the latest revision is 3, which renders"))
		Eventually(snapshotNames(ns, "p")).Should(ContainElement("persona-p.r4"))
		Expect(revisions(ns, "p")).To(Equal([]int64{1, 2, 3, 4}))
	})

	It("keeps the pinned snapshot beyond revisionHistoryLimit", func() {
		ns := newNamespace()
		apply(ns, barePersona("p", "One", "revisionHistoryLimit: 1"))
		Eventually(currentRevision(ns, "p")).Should(Equal(int64(1)))
		Expect(setPin(ns, "p", "1")).To(Succeed())
		Eventually(pinnedRevision(ns, "p")).Should(Equal(int64(1)))
		for i, text := range []string{"Two", "Three", "Four"} {
			apply(ns, pinned(barePersona("p", text, "revisionHistoryLimit: 1"), 1))
			Eventually(func() int64 { return getPersona(ns, "p").Status.LatestRevision }).Should(Equal(int64(i + 2)))
		}
		// Kept: 1 (pinned and delivered), 4 (latest), and one more, the newest of the rest: 3.
		Eventually(snapshotNames(ns, "p")).Should(Equal([]string{"persona-p.r1", "persona-p.r3", "persona-p.r4"}))
		Consistently(snapshotNames(ns, "p")).Should(Equal([]string{"persona-p.r1", "persona-p.r3", "persona-p.r4"}))
		Expect(prompt(ns, "p")()).To(Equal("One\n"))
	})

	It("keeps the pinned revision delivered and Ready while the latest render fails", func() {
		ns := newNamespace()
		apply(ns, barePersona("p", "One", "layers: [{name: l}]"))
		apply(ns, layerManifest("l", "app", "append", "Layer"))
		Eventually(currentRevision(ns, "p")).Should(Equal(int64(1)))
		Expect(setPin(ns, "p", "1")).To(Succeed())
		Eventually(pinnedRevision(ns, "p")).Should(Equal(int64(1)))
		version := resourceVersion(ns, "p")

		By("breaking the Persona: a layer it names is missing")
		apply(ns, pinned(barePersona("p", "Two", "layers: [{name: l}, {name: missing}]"), 1))
		Eventually(func() string { return readyMessage(ns, "p") }).Should(HavePrefix("pinned to revision 1: ConfigMap persona-p holds revision 1; the latest revision is 1; the latest render fails (ReferenceNotFound: "))
		Expect(ready(ns, "p")()).To(Equal("Pinned"))
		Expect(condition(ns, "p", "Reconciling")).To(BeEmpty())
		Expect(resourceVersion(ns, "p")).To(Equal(version))
		Expect(prompt(ns, "p")()).To(Equal("One\n\nLayer\n"))
		Expect(liveHealth(ns, "Persona", "p")()).To(HavePrefix("Current Suspended: pinned to revision 1"))
	})

	It("refuses at admission a pin that is not a positive integer, naming the field", func() {
		ns := newNamespace()
		apply(ns, barePersona("p", "One"))
		for _, bad := range []string{"0", "-1", "two", "1.5"} {
			err := setPin(ns, "p", bad)
			Expect(err).To(HaveOccurred(), "pin %q", bad)
			Expect(err.Error()).To(ContainSubstring("metadata.annotations[prompts.persona-operator.dev/pin-revision]"))
		}
	})

	It("delivers the latest render with Pinned=False RevisionNotFound for a revision never kept", func() {
		ns := newNamespace()
		apply(ns, barePersona("p", "One"))
		Eventually(currentRevision(ns, "p")).Should(Equal(int64(1)))
		Expect(setPin(ns, "p", "9")).To(Succeed())
		Eventually(pinCondition(ns, "p")).Should(Equal("False RevisionNotFound"))
		Expect(prompt(ns, "p")()).To(Equal("One\n"))
		Expect(ready(ns, "p")()).To(Equal("Rendered"))
		Expect(getPersona(ns, "p").Status.PinnedRevision).To(BeZero())
		Eventually(eventReasons(ns, "p")).Should(ContainElement("RevisionNotFound"))
		Expect(liveHealth(ns, "Persona", "p")()).To(HavePrefix("Current Healthy: "))
	})

	It("writes a pinned snapshot deleted by hand again from the live ConfigMap", func() {
		ns := newNamespace()
		apply(ns, barePersona("p", "One"))
		Eventually(currentRevision(ns, "p")).Should(Equal(int64(1)))
		apply(ns, barePersona("p", "Two"))
		Eventually(currentRevision(ns, "p")).Should(Equal(int64(2)))
		Expect(setPin(ns, "p", "1")).To(Succeed())
		Eventually(pinnedRevision(ns, "p")).Should(Equal(int64(1)))
		live := configMap(ns, "p")
		Expect(k8s.Delete(ctx, snapshotOf(ns, "p", 1))).To(Succeed())
		Eventually(snapshotData(ns, "p", 1)).Should(Equal(live.Data))
		Expect(pinCondition(ns, "p")()).To(Equal("True Pinned"))
	})
})
