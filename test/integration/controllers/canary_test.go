package controllers

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// annotate sets (or, with value "", removes) the Persona's annotation key
// by a merge patch, as kubectl annotate does.
func annotate(ns, name, key, value string) {
	GinkgoHelper()
	Expect(patchAnnotation(ns, name, key, value)).To(Succeed())
}

// canary is the Persona's status.canary as "<revision> <weight>% step <step> <phase>", "" without one.
func canary(ns, name string) func() string {
	return func() string {
		c := getPersona(ns, name).Status.Canary
		if c == nil {
			return ""
		}
		return fmtCanary(c)
	}
}

func fmtCanary(c *v1alpha1.CanaryStatus) string {
	return fmt.Sprintf("%d %d%% step %d %s", c.Revision, c.Weight, c.Step, c.Phase)
}

// releaseOf is what status.history says became of revision n as a canary.
func releaseOf(ns, name string, n int64) func() string {
	return func() string {
		e, ok := getPersona(ns, name).Status.HistoryEntry(n)
		if !ok || e.Release == nil {
			return ""
		}
		return e.Release.Outcome
	}
}

const twoSteps = "rollout: {steps: [{setWeight: 50}, {pause: {}}]}"

var _ = Describe("Prompt releases", func() {
	It("holds the stable revision while a canary pauses, and delivers it on promote", func() {
		ns := newNamespace()
		apply(ns, barePersona("p", "One", twoSteps))
		Eventually(currentRevision(ns, "p")).Should(Equal(int64(1)))
		Expect(canary(ns, "p")()).To(BeEmpty(), "a first revision is delivered at once")

		By("an edit: revision 2 is a canary at 50%, paused at step 1")
		apply(ns, barePersona("p", "Two", twoSteps))
		Eventually(canary(ns, "p")).Should(Equal("2 50% step 1 Paused"))
		p := getPersona(ns, "p")
		Expect(p.Status.CurrentRevision).To(Equal(int64(1)))
		Expect(p.Status.LatestRevision).To(Equal(int64(2)))
		Expect(prompt(ns, "p")()).To(Equal("One\n"), "the live ConfigMap keeps the stable revision")
		Expect(snapshotOf(ns, "p", 2).Data["system-prompt.md"]).To(Equal("Two\n"))
		Expect(ready(ns, "p")()).To(Equal("Rendered"))
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.CanaryCondition)
		Expect(c).NotTo(BeNil())
		Expect(string(c.Status) + " " + c.Reason).To(Equal("True Paused"))
		Expect(releaseOf(ns, "p", 2)()).To(Equal("Canary"))
		Eventually(eventReasons(ns, "p")).Should(ContainElement(v1alpha1.CanaryStartedReason))

		By("a promote of another step does nothing; of step 1, promotes")
		annotate(ns, "p", v1alpha1.PromoteAnnotation, "2:0")
		Consistently(canary(ns, "p"), "2s").Should(Equal("2 50% step 1 Paused"))
		annotate(ns, "p", v1alpha1.PromoteAnnotation, "2:1")
		Eventually(currentRevision(ns, "p")).Should(Equal(int64(2)))
		Eventually(prompt(ns, "p")).Should(Equal("Two\n"))
		Eventually(canary(ns, "p")).Should(BeEmpty())
		Expect(releaseOf(ns, "p", 2)()).To(Equal("Promoted"))
		Expect(meta.FindStatusCondition(getPersona(ns, "p").Status.Conditions, v1alpha1.CanaryCondition)).To(BeNil())
		Eventually(eventReasons(ns, "p")).Should(ContainElement(v1alpha1.RolloutPromotedReason))

		By("another edit, aborted: new pods get the stable revision, and the canary stays Aborted")
		apply(ns, barePersona("p", "Three", twoSteps))
		Eventually(canary(ns, "p")).Should(Equal("3 50% step 1 Paused"))
		annotate(ns, "p", v1alpha1.AbortAnnotation, "3")
		Eventually(canary(ns, "p")).Should(Equal("3 0% step 1 Aborted"))
		Expect(prompt(ns, "p")()).To(Equal("Two\n"))
		Expect(releaseOf(ns, "p", 3)()).To(Equal("Aborted"))
		c = meta.FindStatusCondition(getPersona(ns, "p").Status.Conditions, v1alpha1.CanaryCondition)
		Expect(string(c.Status) + " " + c.Reason).To(Equal("False Aborted"))
		Expect(ready(ns, "p")()).To(Equal("Rendered"))
		Eventually(eventReasons(ns, "p")).Should(ContainElement(v1alpha1.RolloutAbortedReason))
	})

	It("reaches both revisions with a guardrail at once, the canary keeping its step", func() {
		ns := newNamespace()
		apply(ns, barePersona("p", "One", twoSteps))
		Eventually(currentRevision(ns, "p")).Should(Equal(int64(1)))
		apply(ns, barePersona("p", "Two", twoSteps))
		Eventually(canary(ns, "p")).Should(Equal("2 50% step 1 Paused"))

		guardNamespace(ns, v1alpha1.ClusterLayerLast, "Guard.")
		Eventually(prompt(ns, "p")).Should(Equal("One\n\nGuard.\n"), "the stable revision, re-rendered with the guardrail")
		Eventually(func() string {
			p := getPersona(ns, "p")
			if p.Status.Canary == nil {
				return ""
			}
			return snapshotOf(ns, "p", p.Status.Canary.Revision).Data["system-prompt.md"]
		}).Should(Equal("Two\n\nGuard.\n"), "the canary, re-rendered with the guardrail")
		p := getPersona(ns, "p")
		Expect(p.Status.Canary.Step).To(Equal(int32(1)))
		Expect(p.Status.Canary.Weight).To(Equal(int32(50)))
		Expect(p.Status.Canary.Phase).To(Equal(v1alpha1.CanaryPaused))
	})

	It("delivers a guardrail change without a canary at once", func() {
		ns := newNamespace()
		apply(ns, barePersona("p", "One", twoSteps))
		Eventually(currentRevision(ns, "p")).Should(Equal(int64(1)))
		guardNamespace(ns, v1alpha1.ClusterLayerLast, "Guard.")
		Eventually(prompt(ns, "p")).Should(Equal("One\n\nGuard.\n"))
		Consistently(canary(ns, "p"), "2s").Should(BeEmpty())
	})

	It("reads as Current to Flux's wait throughout a canary, and as Argo CD's health script says of each phase", func() {
		ns := newNamespace()
		const steps = "rollout: {steps: [{setWeight: 50}, {pause: {duration: 5s}}, {pause: {}}]}"
		flux := fluxManager()
		applyFlux := func(text string) {
			GinkgoHelper()
			// A Kustomization's wait: it must not wait for the canary's pauses.
			Expect(applyAndWait(flux, objects(ns, barePersona("p", text, steps)), 4*time.Second)).To(Succeed())
		}
		applyFlux("One")
		Expect(currentRevision(ns, "p")()).To(Equal(int64(1)))
		Expect(liveHealth(ns, "Persona", "p")()).To(HavePrefix("Current Healthy: "))

		By("an edit: the wait succeeds while the canary pauses for a while, which Argo CD reads as Progressing")
		applyFlux("Two")
		Expect(canary(ns, "p")()).To(HavePrefix("2 50% step 1 "))
		Expect(liveHealth(ns, "Persona", "p")()).To(HavePrefix("Current Progressing: "))

		By("paused until a promote: Suspended")
		Eventually(canary(ns, "p"), "15s").Should(Equal("2 50% step 2 Paused"))
		Expect(liveHealth(ns, "Persona", "p")()).To(HavePrefix("Current Suspended: "))
		Expect(applyAndWait(flux, objects(ns, barePersona("p", "Two", steps)), 4*time.Second)).To(Succeed(), "a reconcile of the same source")

		By("aborted: Degraded, and still Current to Flux")
		annotate(ns, "p", v1alpha1.AbortAnnotation, "2")
		Eventually(canary(ns, "p")).Should(Equal("2 0% step 2 Aborted"))
		Expect(liveHealth(ns, "Persona", "p")()).To(HavePrefix("Current Degraded: "))

		By("a newer revision, promoted in full: Healthy")
		applyFlux("Three")
		annotate(ns, "p", v1alpha1.PromoteAnnotation, "3:full")
		Eventually(currentRevision(ns, "p")).Should(Equal(int64(3)))
		Eventually(liveHealth(ns, "Persona", "p")).Should(HavePrefix("Current Healthy: "))
	})

	It("ends a canary with a pin", func() {
		ns := newNamespace()
		apply(ns, barePersona("p", "One", twoSteps))
		Eventually(currentRevision(ns, "p")).Should(Equal(int64(1)))
		apply(ns, barePersona("p", "Two", twoSteps))
		Eventually(canary(ns, "p")).Should(Equal("2 50% step 1 Paused"))
		Expect(setPin(ns, "p", "1")).To(Succeed())
		Eventually(canary(ns, "p")).Should(BeEmpty())
		Expect(releaseOf(ns, "p", 2)()).To(Equal("Aborted"))
	})
})
