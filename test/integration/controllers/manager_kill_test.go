package controllers

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

var _ = Describe("A hard restart", Serial, func() {
	It("loses nothing: 200 Personas created across a SIGKILL all become Ready", func() {
		ns := newNamespace()
		const n = 200
		apply(ns, layerManifest("shared", "app", "append", "Shared"))
		apply(ns, barePersona("parent", "Parent"))

		var created atomic.Int32
		var wg sync.WaitGroup
		errs := make(chan error, n)
		work := make(chan int)
		for range 4 {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				for i := range work {
					// The webhook is down while the manager is: retry like a GitOps agent would.
					var err error
					for range 100 {
						if err = tryApply(ns, barePersona(fmt.Sprintf("p-%03d", i), fmt.Sprintf("P %d", i), "inherit: [parent]", "layers: [{name: shared}]")); err == nil {
							break
						}
						time.Sleep(100 * time.Millisecond)
					}
					if err != nil {
						errs <- err
					}
					created.Add(1)
				}
			}()
		}
		go func() {
			for i := range n {
				work <- i
			}
			close(work)
		}()

		Eventually(created.Load).Should(BeNumerically(">=", n/2))
		By("killing the manager in the middle of the creations")
		Expect(manager.Kill()).To(Succeed())
		time.Sleep(500 * time.Millisecond)
		By("starting it again")
		Expect(manager.Start(ctx)).To(Succeed())
		wg.Wait()
		close(errs)
		for err := range errs {
			Expect(err).NotTo(HaveOccurred())
		}

		Eventually(func() int {
			var list v1alpha1.PersonaList
			Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			ready := 0
			for _, p := range list.Items {
				if meta.IsStatusConditionTrue(p.Status.Conditions, "Ready") && p.Status.ObservedGeneration == p.Generation {
					ready++
				}
			}
			return ready
		}, 60*time.Second).Should(Equal(n + 1))
		for i := range n {
			Expect(prompt(ns, fmt.Sprintf("p-%03d", i))()).To(Equal(fmt.Sprintf("P %d\n\nShared\n", i)))
		}
	})

	It("undoes hand edits made while it was down, the hash annotation left in place", func() {
		ns := newNamespace()
		apply(ns, barePersona("p", "First"))
		apply(ns, barePersona("q", "Other"))
		Eventually(ready(ns, "p")).Should(Equal("Rendered"))
		Eventually(ready(ns, "q")).Should(Equal("Rendered"))
		Expect(manager.Kill()).To(Succeed())
		cm := configMap(ns, "p")
		cm.Data["system-prompt.md"] = "edited by hand\n"
		Expect(k8s.Update(ctx, cm)).To(Succeed())
		untouched := resourceVersion(ns, "q")
		Expect(manager.Start(ctx)).To(Succeed())
		Eventually(prompt(ns, "p"), 10*time.Second).Should(Equal("First\n"))
		Consistently(func() string { return resourceVersion(ns, "q") }, 2*time.Second).Should(Equal(untouched))
	})
})
