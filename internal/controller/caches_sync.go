package controller

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A starting manager waits twice for its caches: once for their lists
// (the manager, before it starts a controller), then in each of a
// controller's watches for its event handler to have been handed every
// object of the lists. controller-runtime checks both every 100 ms, so a
// restart's first render starts up to 200 ms after the lists are in
// (docs/performance.md#restarts). client-go signals both on channels: a
// promptSync cache waits on those instead, and a watch's own check then
// finds its handler synced at once.

// NewCache is the manager's cache constructor (ctrl.Options.NewCache):
// controller-runtime's cache, its informers' first lists in pages
// (pagedFirstLists), synced without polling.
func NewCache(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
	opts.NewInformer = pagedFirstLists(opts.NewInformer)
	c, err := cache.New(cfg, opts)
	if err != nil {
		return nil, err
	}
	return promptSync(c), nil
}

// promptSync is c, whose WaitForCacheSync returns once every informer
// asked of it has listed and every event handler added to those informers
// has been handed the list, as soon as each says so. Each wait waits for
// all of them, not only for the handler its caller added: the handlers'
// replays of the lists run at once, and take milliseconds.
func promptSync(c cache.Cache) cache.Cache {
	return &promptSyncCache{Cache: c}
}

type promptSyncCache struct {
	cache.Cache
	mu sync.Mutex
	// pending is what has not said it synced yet: the informers asked for
	// and the handlers added to them; what has is dropped as it is found.
	pending []*syncPending
}

// syncPending is one informer or handler registration still to sync.
type syncPending struct {
	done toolscache.DoneChecker
	// informer is the informer it is of, or is.
	informer cache.Informer
	// removed is closed when it is removed (its handler, or its informer):
	// it never syncs then.
	removed chan struct{}
	once    sync.Once
}

func (p *syncPending) remove() { p.once.Do(func() { close(p.removed) }) }

func (p *syncPending) settled() bool {
	select {
	case <-p.done.Done():
		return true
	case <-p.removed:
		return true
	default:
		return false
	}
}

func (c *promptSyncCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	i, err := c.Cache.GetInformer(ctx, obj, opts...)
	if err != nil {
		return nil, err
	}
	return c.tracked(i), nil
}

func (c *promptSyncCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	i, err := c.Cache.GetInformerForKind(ctx, gvk, opts...)
	if err != nil {
		return nil, err
	}
	return c.tracked(i), nil
}

// RemoveInformer removes obj's informer, which stops it: what is pending
// of a stopped informer never syncs.
func (c *promptSyncCache) RemoveInformer(ctx context.Context, obj client.Object) error {
	err := c.Cache.RemoveInformer(ctx, obj)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.pending {
		if p.informer.IsStopped() {
			p.remove()
		}
	}
	return err
}

// WaitForCacheSync waits for what is pending, then for the cache itself,
// which by then has synced: its own check passes at once, and covers any
// informer the cache made without being asked (a read of an uncached kind).
func (c *promptSyncCache) WaitForCacheSync(ctx context.Context) bool {
	for _, p := range c.stillPending() {
		select {
		case <-p.done.Done():
		case <-p.removed:
		case <-ctx.Done():
			return false
		}
	}
	return c.Cache.WaitForCacheSync(ctx)
}

func (c *promptSyncCache) track(done toolscache.DoneChecker, informer cache.Informer) *syncPending {
	p := &syncPending{done: done, informer: informer, removed: make(chan struct{})}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending = append(c.pending, p)
	return p
}

// stillPending drops what has settled and returns the rest.
func (c *promptSyncCache) stillPending() []*syncPending {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending = slices.DeleteFunc(c.pending, (*syncPending).settled)
	return slices.Clone(c.pending)
}

func (c *promptSyncCache) tracked(i cache.Informer) cache.Informer {
	c.track(i.HasSyncedChecker(), i)
	return &promptSyncInformer{Informer: i, cache: c}
}

// promptSyncInformer is an informer of a promptSyncCache: the handlers
// added to it are waited for.
type promptSyncInformer struct {
	cache.Informer
	cache *promptSyncCache
}

func (i *promptSyncInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.registered(i.Informer.AddEventHandler(h))
}

func (i *promptSyncInformer) AddEventHandlerWithResyncPeriod(h toolscache.ResourceEventHandler, resync time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.registered(i.Informer.AddEventHandlerWithResyncPeriod(h, resync))
}

func (i *promptSyncInformer) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, opts toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.registered(i.Informer.AddEventHandlerWithOptions(h, opts))
}

func (i *promptSyncInformer) RemoveEventHandler(handle toolscache.ResourceEventHandlerRegistration) error {
	r, ok := handle.(*promptSyncRegistration)
	if !ok {
		return i.Informer.RemoveEventHandler(handle)
	}
	r.pending.remove()
	return i.Informer.RemoveEventHandler(r.ResourceEventHandlerRegistration)
}

func (i *promptSyncInformer) registered(r toolscache.ResourceEventHandlerRegistration, err error) (toolscache.ResourceEventHandlerRegistration, error) {
	if err != nil {
		return nil, fmt.Errorf("add an event handler: %w", err)
	}
	return &promptSyncRegistration{ResourceEventHandlerRegistration: r, pending: i.cache.track(r.HasSyncedChecker(), i.Informer)}, nil
}

// promptSyncRegistration is a handler's registration, known again when it
// is removed.
type promptSyncRegistration struct {
	toolscache.ResourceEventHandlerRegistration
	pending *syncPending
}
