package controller

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/persona-operator/persona-operator/internal/delivery"
)

// snapshotBytes keeps, per namespace, what its snapshots hold
// (--snapshot-bytes-per-namespace), so that a snapshot's write costs the
// same however many the namespace has: the sizes the metadata cache's
// events tell, plus the snapshots this manager created that the cache has
// not seen yet, less those it deleted that the cache still holds. A
// namespace's lock is held from the check of the cap to the reservation of
// the new snapshot's bytes (evictions included), so that concurrent workers
// never together pass the cap.
//
// Without the cache's events (watch never called: a reader without an
// informer, as in the unit tests), each lock lists the namespace's
// snapshots again.
type snapshotBytes struct {
	mu         sync.Mutex
	namespaces map[string]*namespaceSnapshotBytes
	// list lists a namespace's snapshots from the metadata cache.
	list    func(ctx context.Context, namespace string) ([]*metav1.PartialObjectMetadata, error)
	watched bool
}

// namespaceSnapshotBytes is one namespace's: its lock, held from the
// check to the reservation, and what it counts, which mu guards (the
// cache's events take mu alone, never waiting on an eviction's deletes).
type namespaceSnapshotBytes struct {
	lock sync.Mutex
	mu   sync.Mutex
	// primed is set once cached holds what the cache held at a list; the
	// events keep it since.
	primed bool
	// cached is each snapshot the cache holds, by name; total their sizes.
	cached map[string]cachedSnapshot
	total  int
	// created are the snapshots created (or being created) whose creation
	// the cache has not seen, by name; deleted those deleted whose deletion
	// it has not seen, by UID.
	created map[string]int
	deleted map[types.UID]string
	// exhaustedAt is when an eviction last could not free enough, with the
	// bytes used then (under lock): see evictionExhausted.
	exhaustedAt   time.Time
	exhaustedUsed int
}

// evictRescan is how long an eviction that could not free enough stands for
// its namespace while no bytes were freed: each eviction reads every
// snapshot of the namespace and each of their Personas, so a namespace over
// the cap with nothing to evict (every snapshot some Persona's delivered
// revision) would otherwise cost that at every snapshot it refuses.
const evictRescan = 10 * time.Second

// evictionExhausted reports whether an eviction would find no more than the
// last one, which could not free enough evictRescan ago at most, with no
// bytes freed since (used is what is used now). The caller holds lock.
func (n *namespaceSnapshotBytes) evictionExhausted(now time.Time, used int) bool {
	return !n.exhaustedAt.IsZero() && now.Sub(n.exhaustedAt) < evictRescan && used >= n.exhaustedUsed
}

// exhausted records that an eviction could not free enough, at now, with
// used bytes used. The caller holds lock.
func (n *namespaceSnapshotBytes) exhausted(now time.Time, used int) {
	n.exhaustedAt, n.exhaustedUsed = now, used
}

type cachedSnapshot struct {
	uid  types.UID
	size int
}

func newSnapshotBytes(list func(ctx context.Context, namespace string) ([]*metav1.PartialObjectMetadata, error)) *snapshotBytes {
	return &snapshotBytes{namespaces: map[string]*namespaceSnapshotBytes{}, list: list}
}

func (b *snapshotBytes) namespace(ns string) *namespaceSnapshotBytes {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, ok := b.namespaces[ns]
	if !ok {
		n = &namespaceSnapshotBytes{cached: map[string]cachedSnapshot{}, created: map[string]int{}, deleted: map[types.UID]string{}}
		b.namespaces[ns] = n
	}
	return n
}

// lock locks namespace ns and returns its ledger, primed; the caller
// unlocks it (unlock).
func (b *snapshotBytes) lock(ctx context.Context, ns string) (*namespaceSnapshotBytes, error) {
	n := b.namespace(ns)
	n.lock.Lock()
	// The list runs under mu: an event the list does not reflect waits, and
	// is applied after it; one it does is applied again, to the same end.
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.primed && b.watched {
		return n, nil
	}
	all, err := b.list(ctx, ns)
	if err != nil {
		n.lock.Unlock()
		return nil, err
	}
	clear(n.cached)
	n.total = 0
	for _, m := range all {
		n.seen(m)
	}
	if !b.watched { // the list is all there is to know
		clear(n.created)
		clear(n.deleted)
	}
	n.primed = true
	return n, nil
}

func (n *namespaceSnapshotBytes) unlock() { n.lock.Unlock() }

// used is what the namespace's snapshots hold, those created and deleted
// here included.
func (n *namespaceSnapshotBytes) used() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	used := n.total
	for name, size := range n.created {
		if _, ok := n.cached[name]; !ok {
			used += size
		}
	}
	for uid, name := range n.deleted {
		if c, ok := n.cached[name]; ok && c.uid == uid {
			used -= c.size
		}
	}
	return used
}

// isDeleted reports whether m was deleted here, its deletion not yet seen.
func (n *namespaceSnapshotBytes) isDeleted(m *metav1.PartialObjectMetadata) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, ok := n.deleted[m.UID]
	return ok
}

// reserve counts a snapshot about to be created; release takes it back
// when its creation failed.
func (n *namespaceSnapshotBytes) reserve(name string, size int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.created[name] = size
}

func (n *namespaceSnapshotBytes) release(name string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.created, name)
}

// seen counts m as the cache holds it (n.mu held).
func (n *namespaceSnapshotBytes) seen(m *metav1.PartialObjectMetadata) {
	size := snapshotSize(m)
	if old, ok := n.cached[m.Name]; ok {
		n.total -= old.size
	}
	n.cached[m.Name] = cachedSnapshot{uid: m.UID, size: size}
	n.total += size
	delete(n.created, m.Name)
}

// gone forgets m, deleted from the cache (n.mu held).
func (n *namespaceSnapshotBytes) gone(m metav1.Object) {
	if old, ok := n.cached[m.GetName()]; ok && old.uid == m.GetUID() {
		n.total -= old.size
		delete(n.cached, m.GetName())
	}
	delete(n.deleted, m.GetUID())
}

// deletedHere notes that the snapshot m was deleted by this manager.
func (b *snapshotBytes) deletedHere(m *metav1.PartialObjectMetadata) {
	n := b.namespace(m.Namespace)
	n.mu.Lock()
	defer n.mu.Unlock()
	if c, ok := n.cached[m.Name]; ok && c.uid == m.UID { // else its deletion was seen already
		n.deleted[m.UID] = m.Name
	}
}

// event applies one of the metadata cache's events to its namespace's
// ledger, once primed (the priming list holds what came before).
func (b *snapshotBytes) event(obj any, deleted bool) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj, deleted = tomb.Obj, true
	}
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return
	}
	if _, _, ok := delivery.LabelledSnapshot(m); !ok {
		return
	}
	n := b.namespace(m.Namespace)
	n.mu.Lock()
	defer n.mu.Unlock()
	if deleted {
		n.gone(m)
		return
	}
	if n.primed {
		n.seen(m)
	}
}

// watch keeps the ledger from informer's events.
func (b *snapshotBytes) watch(informer cache.Informer) error {
	_, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { b.event(obj, false) },
		UpdateFunc: func(_, obj any) { b.event(obj, false) },
		DeleteFunc: func(obj any) { b.event(obj, true) },
	})
	if err == nil {
		b.watched = true
	}
	return err
}
