package revisions

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/persona-operator/persona-operator/internal/controller/kube"
	"github.com/persona-operator/persona-operator/internal/delivery"
)

// snapshotBytes keeps, per namespace, what its snapshots hold
// (--snapshot-bytes-per-namespace), so that a snapshot's write costs the
// same however many the namespace has: the snapshots the events of the
// cache of the snapshots tell, plus those this manager created that the cache has not seen
// yet, less those it deleted that the cache still holds. Only a snapshot
// its Persona controls counts (delivery.IsSnapshot), and its size is that of its
// data, never what an annotation says: whoever may write the ConfigMap may
// write its annotations. The cache holds no data, so a size is
// the one this manager wrote (a snapshot is immutable), or, for one written
// before it started, read once from the API server under the namespace's
// lock. A
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
	// list lists a namespace's snapshots from the cache of them.
	list func(ctx context.Context, namespace string) ([]*delivery.SnapshotMeta, error)
	// read reads from the API server the snapshots of a namespace named,
	// their data included, and calls each with every one it reads (others
	// too, perhaps).
	read    func(ctx context.Context, namespace string, names []string, each func(*corev1.ConfigMap)) error
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
	// cached is each snapshot the cache holds, by name; total the sizes
	// known of them.
	cached map[string]cachedSnapshot
	total  int
	// sizes are the data sizes known, by UID; written those of the
	// snapshots this manager created, by name, at the version it created.
	sizes   map[types.UID]knownSize
	written map[string]knownSize
	// unknown are the cached snapshots whose sizes are not known yet, by
	// name: a lock reads those alone, not every snapshot again.
	unknown map[string]bool
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
	uid             types.UID
	resourceVersion string
	size            int
	// known is unset until the size of its data is known (then counted).
	known bool
}

// knownSize is the size of a snapshot's data at resourceVersion, and at
// every version when it is immutable.
type knownSize struct {
	resourceVersion string
	size            int
	immutable       bool
}

func newSnapshotBytes(list func(ctx context.Context, namespace string) ([]*delivery.SnapshotMeta, error),
	read func(ctx context.Context, namespace string, names []string, each func(*corev1.ConfigMap)) error) *snapshotBytes {
	return &snapshotBytes{namespaces: map[string]*namespaceSnapshotBytes{}, list: list, read: read}
}

func (b *snapshotBytes) namespace(ns string) *namespaceSnapshotBytes {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, ok := b.namespaces[ns]
	if !ok {
		n = &namespaceSnapshotBytes{cached: map[string]cachedSnapshot{}, created: map[string]int{}, deleted: map[types.UID]string{},
			sizes: map[types.UID]knownSize{}, written: map[string]knownSize{}, unknown: map[string]bool{}}
		b.namespaces[ns] = n
	}
	return n
}

// existing is namespace ns's ledger, nil when it has none.
func (b *snapshotBytes) existing(ns string) *namespaceSnapshotBytes {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.namespaces[ns]
}

// lock locks namespace ns and returns its ledger, primed, every size
// known; the caller unlocks it (unlock).
func (b *snapshotBytes) lock(ctx context.Context, ns string) (*namespaceSnapshotBytes, error) {
	n := b.namespace(ns)
	n.lock.Lock()
	err := b.prime(ctx, n, ns)
	if err == nil {
		err = b.readSizes(ctx, n, ns)
	}
	if err != nil {
		n.lock.Unlock()
		return nil, err
	}
	return n, nil
}

// prime lists ns's snapshots into n unless the cache's events keep it.
func (b *snapshotBytes) prime(ctx context.Context, n *namespaceSnapshotBytes, ns string) error {
	// The list runs under mu: an event the list does not reflect waits, and
	// is applied after it; one it does is applied again, to the same end.
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.primed && b.watched {
		return nil
	}
	all, err := b.list(ctx, ns)
	if err != nil {
		return err
	}
	clear(n.cached)
	clear(n.unknown)
	n.total = 0
	for _, m := range all {
		n.seen(m)
	}
	if !b.watched { // the list is all there is to know
		clear(n.created)
		clear(n.deleted)
	}
	n.primed = true
	return nil
}

// readSizes reads from the API server the data of each snapshot of n whose
// size is not known (written before this manager started), n.lock held.
// The reads run without mu, so that the cache's events do not wait on them.
func (b *snapshotBytes) readSizes(ctx context.Context, n *namespaceSnapshotBytes, ns string) error {
	n.mu.Lock()
	unknown := slices.Collect(maps.Keys(n.unknown))
	n.mu.Unlock()
	if len(unknown) == 0 {
		return nil
	}
	err := b.read(ctx, ns, unknown, func(cm *corev1.ConfigMap) {
		n.mu.Lock()
		defer n.mu.Unlock()
		if c, ok := n.cached[cm.Name]; ok && c.uid == cm.UID && !c.known {
			n.sizes[cm.UID] = knownSize{resourceVersion: cm.ResourceVersion, size: configMapSize(cm), immutable: ptr.Deref(cm.Immutable, false)}
			n.count(cm.Name, c)
		}
	})
	if err != nil {
		return fmt.Errorf("read the snapshots of namespace %s for their sizes: %w", ns, err)
	}
	return nil
}

// configMapSize is the size of cm's data: every key and value, binary too.
func configMapSize(cm *corev1.ConfigMap) int {
	size := delivery.DataSize(cm.Data)
	for k, v := range cm.BinaryData {
		size += len(k) + len(v)
	}
	return size
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

// size is the size of the data of m, as counted (0 when not counted).
func (n *namespaceSnapshotBytes) size(m *delivery.SnapshotMeta) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if c, ok := n.cached[m.Name]; ok && c.uid == m.UID && c.known {
		return c.size
	}
	return 0
}

// isDeleted reports whether m was deleted here, its deletion not yet seen.
func (n *namespaceSnapshotBytes) isDeleted(m *delivery.SnapshotMeta) bool {
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

// wrote notes that this manager created the snapshot name, holding size
// bytes, at resourceVersion.
func (n *namespaceSnapshotBytes) wrote(name, resourceVersion string, size int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.written[name] = knownSize{resourceVersion: resourceVersion, size: size, immutable: true}
	if c, ok := n.cached[name]; ok && !c.known { // the cache saw it first
		n.count(name, c)
	}
}

// seen counts m as the cache holds it, when its Persona controls it, and
// forgets it otherwise (n.mu held).
func (n *namespaceSnapshotBytes) seen(m *delivery.SnapshotMeta) {
	if !m.IsSnapshot() {
		n.forget(m)
		return
	}
	if old, ok := n.cached[m.Name]; ok {
		if old.known {
			n.total -= old.size
		}
		if old.uid != m.UID {
			delete(n.sizes, old.uid)
		}
	}
	n.count(m.Name, cachedSnapshot{uid: m.UID, resourceVersion: m.ResourceVersion})
	delete(n.created, m.Name)
}

// count sets the cached snapshot name to c, counting its size if known
// (n.mu held; c not counted yet).
func (n *namespaceSnapshotBytes) count(name string, c cachedSnapshot) {
	c.size, c.known = n.knownSize(name, c.uid, c.resourceVersion)
	if c.known {
		n.total += c.size
		delete(n.unknown, name)
	} else {
		n.unknown[name] = true
	}
	n.cached[name] = c
}

// knownSize is the size of the data of snapshot name, of UID uid at
// resourceVersion, when known (n.mu held).
func (n *namespaceSnapshotBytes) knownSize(name string, uid types.UID, resourceVersion string) (int, bool) {
	if k, ok := n.sizes[uid]; ok && (k.immutable || k.resourceVersion == resourceVersion) {
		return k.size, true
	}
	if w, ok := n.written[name]; ok && w.resourceVersion == resourceVersion {
		delete(n.written, name)
		n.sizes[uid] = w
		return w.size, true
	}
	return 0, false
}

// forget stops counting m, if counted (n.mu held).
func (n *namespaceSnapshotBytes) forget(m *delivery.SnapshotMeta) {
	if old, ok := n.cached[m.Name]; ok && old.uid == m.UID {
		if old.known {
			n.total -= old.size
		}
		delete(n.cached, m.Name)
		delete(n.unknown, m.Name)
	}
	delete(n.sizes, m.UID)
}

// gone forgets m, deleted from the cache (n.mu held).
func (n *namespaceSnapshotBytes) gone(m *delivery.SnapshotMeta) {
	n.forget(m)
	delete(n.deleted, m.UID)
}

// deletedHere notes that the snapshot m was deleted by this manager.
func (b *snapshotBytes) deletedHere(m *delivery.SnapshotMeta) {
	n := b.namespace(m.Namespace)
	n.mu.Lock()
	defer n.mu.Unlock()
	if c, ok := n.cached[m.Name]; ok && c.uid == m.UID { // else its deletion was seen already
		n.deleted[m.UID] = m.Name
	}
}

// event applies one of the events of the cache of the snapshots to its
// namespace's ledger, once primed (the priming list holds what came
// before).
func (b *snapshotBytes) event(obj any, deleted bool) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj, deleted = tomb.Obj, true
	}
	m, ok := obj.(*delivery.SnapshotMeta)
	if !ok {
		return
	}
	if deleted || !m.IsSnapshot() { // gone, or orphaned: no longer counted
		if n := b.existing(m.Namespace); n != nil {
			n.mu.Lock()
			defer n.mu.Unlock()
			if deleted {
				n.gone(m)
			} else {
				n.forget(m)
			}
		}
		return
	}
	n := b.namespace(m.Namespace)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.primed {
		n.seen(m)
	}
}

// watch keeps the ledger from the events of the cache of the snapshots.
func (b *snapshotBytes) watch(snapshots *kube.SnapshotCache) error {
	err := snapshots.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { b.event(obj, false) },
		UpdateFunc: func(_, obj any) { b.event(obj, false) },
		DeleteFunc: func(obj any) { b.event(obj, true) },
	})
	if err == nil {
		b.watched = true
	}
	return err
}
