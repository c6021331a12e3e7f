package controller_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	internal "github.com/persona-operator/persona-operator/internal/controller"
)

// The Persona controller computes its status from its cache, which may not
// have seen the restarts' RolloutHalted yet. These specs make that race
// happen on purpose, against the real API server.
var _ = Describe("Persona status shared with the restarts", func() {
	It("is never patched from a copy older than the restarts' condition", func() {
		ns := newNamespace()
		apply(ns, barePersona("agent", "Agent"))
		Eventually(ready(ns, "agent")).Should(Equal(v1alpha1.RenderedReason))
		key := types.NamespacedName{Namespace: ns, Name: "agent"}
		stale := getPersona(ns, "agent")
		halt := func(status metav1.ConditionStatus, reason string) {
			Expect(internal.SetHaltedCondition(ctx, k8s, key, status, reason, "a rollout failed")).To(Succeed())
		}
		// A status from the copy read before the halt, with a new Ready message.
		renders := 0
		staleChange := func() (*v1alpha1.Persona, *v1alpha1.PersonaStatus) {
			p := stale.DeepCopy()
			before := p.Status.DeepCopy()
			renders++
			meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionTrue,
				Reason: v1alpha1.RenderedReason, Message: fmt.Sprintf("rendered again (%d)", renders), ObservedGeneration: p.Generation})
			return p, before
		}

		By("a plain merge patch of the conditions from the stale copy drops the condition: the race")
		halt(metav1.ConditionTrue, v1alpha1.RolloutFailedReason)
		Expect(haltedCondition(ns, "agent")).To(Equal("True"))
		var err error
		p, before := staleChange()
		internal.PatchStatus(ctx, k8s, p, before, &err)
		Expect(err).NotTo(HaveOccurred())
		Expect(haltedCondition(ns, "agent")).To(Equal(""))

		By("the Persona controller's patch from the stale copy is refused, and the condition kept")
		stale = getPersona(ns, "agent")
		halt(metav1.ConditionTrue, v1alpha1.RolloutFailedReason)
		err = nil
		p, before = staleChange()
		internal.PatchPersonaStatus(ctx, k8s, p, before, &err)
		Expect(apierrors.IsConflict(err)).To(BeTrue(), "%v", err)
		Expect(haltedCondition(ns, "agent")).To(Equal("True"))

		By("nor is a resumed halt reverted to True")
		stale = getPersona(ns, "agent")
		halt(metav1.ConditionFalse, v1alpha1.RolloutsResumedReason)
		err = nil
		p, before = staleChange()
		Expect(meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.RolloutHaltedCondition)).To(BeTrue())
		internal.PatchPersonaStatus(ctx, k8s, p, before, &err)
		Expect(apierrors.IsConflict(err)).To(BeTrue(), "%v", err)
		Expect(haltedCondition(ns, "agent")).To(Equal("False"))

		By("from a fresh copy, the patch goes through and keeps the condition it does not own")
		stale = getPersona(ns, "agent")
		err = nil
		p, before = staleChange()
		internal.PatchPersonaStatus(ctx, k8s, p, before, &err)
		Expect(err).NotTo(HaveOccurred())
		got := getPersona(ns, "agent").Status.Conditions
		Expect(meta.FindStatusCondition(got, v1alpha1.ReadyCondition).Message).To(Equal("rendered again (4)"))
		Expect(haltedCondition(ns, "agent")).To(Equal("False"))

		By("a patch that leaves the conditions alone needs no fresh copy")
		stale = getPersona(ns, "agent")
		halt(metav1.ConditionTrue, v1alpha1.RolloutFailedReason)
		err = nil
		p = stale.DeepCopy()
		before = p.Status.DeepCopy()
		p.Status.RenderedBytes++
		internal.PatchPersonaStatus(ctx, k8s, p, before, &err)
		Expect(err).NotTo(HaveOccurred())
		Expect(getPersona(ns, "agent").Status.RenderedBytes).To(Equal(p.Status.RenderedBytes))
		Expect(haltedCondition(ns, "agent")).To(Equal("True"))
	})
})
