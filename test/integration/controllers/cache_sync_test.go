package controllers

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	personacontroller "github.com/persona-operator/persona-operator/internal/controller"
)

// The manager's caches say they have synced once their informers have
// listed and every handler added to them has been handed the list: a
// controller's workers start as soon as that is so.
var _ = Describe("A cache's sync", func() {
	const n = 100
	var (
		ns       string
		selector labels.Selector
	)
	BeforeEach(func() {
		ns = newNamespace()
		selector = labels.SelectorFromSet(labels.Set{"sync-test": ns})
		for i := range n {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("cm-%03d", i), Labels: map[string]string{"sync-test": ns}}}
			Expect(k8s.Create(ctx, cm)).To(Succeed())
		}
	})

	started := func(ctx context.Context) (cache.Cache, cache.Informer) {
		c, err := personacontroller.NewCache(plane.Config, cache.Options{Scheme: k8s.Scheme(), Mapper: k8s.RESTMapper(),
			DefaultNamespaces: map[string]cache.Config{ns: {}}, DefaultLabelSelector: selector})
		Expect(err).NotTo(HaveOccurred())
		informer, err := c.GetInformer(ctx, &corev1.ConfigMap{}, cache.BlockUntilSynced(false))
		Expect(err).NotTo(HaveOccurred())
		go func() { _ = c.Start(ctx) }()
		Expect(c.WaitForCacheSync(ctx)).To(BeTrue())
		return c, informer
	}

	It("waits until a handler added after the lists has been handed every object", func(sctx SpecContext) {
		c, informer := started(sctx)
		// A slow handler: 2 ms an object, far longer than the list took.
		var handed atomic.Int32
		_, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(any) {
			time.Sleep(2 * time.Millisecond)
			handed.Add(1)
		}})
		Expect(err).NotTo(HaveOccurred())
		Expect(c.WaitForCacheSync(sctx)).To(BeTrue())
		Expect(handed.Load()).To(BeEquivalentTo(n), "handed when the cache said it had synced")
	})

	It("is not held by a handler removed before it was handed the list", func(sctx SpecContext) {
		c, informer := started(sctx)
		block := make(chan struct{})
		DeferCleanup(func() { close(block) })
		reg, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(any) { <-block }})
		Expect(err).NotTo(HaveOccurred())
		Expect(informer.RemoveEventHandler(reg)).To(Succeed())
		waitCtx, cancel := context.WithTimeout(sctx, 10*time.Second)
		defer cancel()
		Expect(c.WaitForCacheSync(waitCtx)).To(BeTrue())
	})
})
