package controllers

import (
	"fmt"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

var _ = Describe("Revisions through a crash mid-fan-out", Serial, func() {
	It("loses no revision: 150 Personas each get exactly revision 2, caused by the layer, with its snapshot", func() {
		const n = 150
		ns := newNamespace()
		apply(ns, layerManifest("shared", "app", "append", "Shared"))
		for i := range n {
			apply(ns, barePersona(fmt.Sprintf("p%03d", i), fmt.Sprintf("P %d", i), "layers: [{name: shared}]"))
		}
		for i := range n {
			Eventually(currentRevision(ns, fmt.Sprintf("p%03d", i))).Should(Equal(int64(1)))
		}

		By("editing the layer, and killing the manager once some, not all, ConfigMaps have the edit")
		DeferCleanup(func() {
			if manager.PID() == 0 {
				Expect(manager.Start(ctx)).To(Succeed())
			}
		})
		apply(ns, layerManifest("shared", "app", "append", "Shared, edited"))
		edited := func() int {
			var list corev1.ConfigMapList
			Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			count := 0
			for _, cm := range list.Items {
				if cm.Annotations["prompts.persona-operator.dev/revision"] == "2" && cm.Name == "persona-"+cm.Labels["prompts.persona-operator.dev/persona"] {
					count++
				}
			}
			return count
		}
		Eventually(edited, 30*time.Second, time.Millisecond).Should(BeNumerically(">", 0))
		Expect(manager.Kill()).To(Succeed())
		killedAt := edited()
		GinkgoWriter.Printf("killed with %d of %d live ConfigMaps at revision 2\n", killedAt, n)
		Expect(manager.Start(ctx)).To(Succeed())

		By("finding every Persona at revision 2, its history gapless, and every snapshot of it")
		for i := range n {
			name := fmt.Sprintf("p%03d", i)
			Eventually(prompt(ns, name)).Should(Equal(fmt.Sprintf("P %d\n\nShared, edited\n", i)))
			Eventually(currentRevision(ns, name)).Should(Equal(int64(2)))
			Eventually(func() []int64 {
				var numbers []int64
				for _, e := range getPersona(ns, name).Status.History {
					numbers = append(numbers, e.Revision)
				}
				return numbers
			}).Should(Equal([]int64{1, 2}), "the history of %s", name)
			Eventually(snapshotNames(ns, name)).Should(Equal([]string{"persona-" + name + ".r1", "persona-" + name + ".r2"}))
			live := configMap(ns, name)
			Expect(live.Annotations).To(HaveKeyWithValue("prompts.persona-operator.dev/revision", strconv.Itoa(2)))
			Expect(snapshotOf(ns, name, 2).Data).To(Equal(live.Data))
			Expect(revisionOf(live).Cause).To(Equal(v1alpha1.RevisionInput{Kind: "PromptLayer", Namespace: ns, Name: "shared", Generation: 2}))
			Expect(getPersona(ns, name).Status.History[1].Cause.Kind).To(Equal("PromptLayer"))
		}
	})
})
