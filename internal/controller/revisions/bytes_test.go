package revisions

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/render"
	"github.com/persona-operator/persona-operator/test/fixtures"
)

// staleCache is the metadata cache of a manager whose watch lags: it holds
// the snapshots that were there at the start, and counts its lists.
type staleCache struct {
	client.Reader
	lists atomic.Int64
}

func (c *staleCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.lists.Add(1)
	return c.Reader.List(ctx, list, opts...)
}

// snapshotOfBytes is the snapshot of revision n of the Persona named
// persona (uid its UID), holding size bytes.
func snapshotOfBytes(persona string, uid types.UID, n int64, size int) *corev1.ConfigMap {
	data := map[string]string{render.SystemPromptKey: strings.Repeat("x", size-len(render.SystemPromptKey))}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: delivery.SnapshotName(persona, n),
		UID: types.UID(fmt.Sprintf("uid-%s-r%d", persona, n)), Labels: delivery.SnapshotLabels(persona, n),
		Annotations: map[string]string{delivery.SnapshotBytesAnnotation: strconv.Itoa(size)},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.PersonaKind, Name: persona,
			UID: uid, Controller: ptr.To(true)}}}, Data: data}
}

// stalePersonas is a store over a cluster of the Personas p0..p<n-1>
// and objs, whose metadata cache holds objs alone and hears of nothing
// since (its events lag), capped at limit bytes a namespace.
func stalePersonas(t testing.TB, n, limit int, objs ...client.Object) (*Store, client.Client, *staleCache, []*v1alpha1.Persona) {
	t.Helper()
	var personas []*v1alpha1.Persona
	all := append([]client.Object(nil), objs...)
	for i := range n {
		p := barePersona(fmt.Sprintf("p%d", i))
		personas = append(personas, p)
		all = append(all, p)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(all...).WithStatusSubresource(&v1alpha1.Persona{}).
		WithIndex(&v1alpha1.Persona{}, "metadata.name", fixtures.IndexName).Build()
	cached := &staleCache{Reader: fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()}
	s := New(Config{Client: c, APIReader: fixtures.ManagersAPIServer{Client: c}, Snapshots: fixtures.ListedSnapshots{Reader: cached}, Writer: fakeWriter{c}, Scheme: scheme, BytesPerNamespace: limit})
	s.bytes.watched = true // as if watching: what it reserves counts until the (lagging) cache sees it
	return s, c, cached, personas
}

// writtenBytes is what the snapshots in the cluster hold.
func writtenBytes(t testing.TB, c client.Client) int {
	t.Helper()
	var list corev1.ConfigMapList
	if err := c.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	total := 0
	for i := range list.Items {
		if _, _, ok := delivery.LabelledSnapshot(&list.Items[i]); ok {
			total += delivery.DataSize(list.Items[i].Data)
		}
	}
	return total
}

// Workers that write snapshots of one namespace at once, their cache
// stale, hold the namespace at the cap at most: each sees what the others
// reserved and evicted, and a victim another deleted frees nothing twice.
func TestSnapshotBytesCapHoldsUnderConcurrentWrites(t *testing.T) {
	const size, limit, workers = 600, 2000, 8
	// Two snapshots of a Persona gone, evictable: 1200 bytes.
	gone := []client.Object{snapshotOfBytes("gone", "uid-gone", 1, size), snapshotOfBytes("gone", "uid-gone", 2, size)}
	r, c, _, personas := stalePersonas(t, workers, limit, gone...)
	var wg sync.WaitGroup
	failures := make([]*Failure, workers)
	errs := make([]error, workers)
	for i, p := range personas {
		wg.Go(func() {
			rev := v1alpha1.RevisionHistoryEntry{Revision: 1, ContentHash: "sha256:x"}
			data := snapshotOfBytes(p.Name, p.UID, 1, size).Data
			failures[i], errs[i] = r.Keep(t.Context(), p, rev, Content{Data: data})
		})
	}
	wg.Wait()
	written := 0
	for i := range workers {
		if errs[i] != nil {
			t.Fatalf("worker %d: %v", i, errs[i])
		}
		if failures[i] == nil {
			written++
		} else if failures[i].Reason != v1alpha1.SnapshotBytesExceededReason {
			t.Errorf("worker %d: %s, want SnapshotBytesExceeded", i, failures[i].Reason)
		}
	}
	// 2000 bytes hold 3 snapshots of 600 once both of the gone Persona's are evicted.
	if got := writtenBytes(t, c); got > limit || written != 3 {
		t.Errorf("%d snapshots written, the namespace's snapshots hold %d bytes; want 3, at most the cap %d", written, got, limit)
	}
}

// A snapshot's write lists the namespace's snapshots once, when it first
// counts them, and not again while under the cap: its cost does not grow
// with the number of snapshots there.
func TestSnapshotBytesListsOnce(t *testing.T) {
	var objs []client.Object
	for n := range int64(500) {
		objs = append(objs, snapshotOfBytes("old", "uid-old", n+1, 100))
	}
	r, _, cached, personas := stalePersonas(t, 20, DefaultBytesPerNamespace, objs...)
	for _, p := range personas {
		if f, err := r.Keep(t.Context(), p, v1alpha1.RevisionHistoryEntry{Revision: 1}, Content{Data: map[string]string{"k": "v"}}); err != nil || f != nil {
			t.Fatalf("%s: %v %v", p.Name, f, err)
		}
	}
	if got := cached.lists.Load(); got != 1 {
		t.Errorf("%d lists of the namespace's snapshots for 20 writes, want 1", got)
	}
	ledger, err := r.bytes.lock(t.Context(), ns)
	if err != nil {
		t.Fatal(err)
	}
	defer ledger.unlock()
	if got, want := ledger.used(), 500*100+20*2; got != want {
		t.Errorf("the namespace's snapshots hold %d bytes, want %d", got, want)
	}
}

// What the check of the cap costs a snapshot's write, with 100 and 8,000
// snapshots in the namespace: the same (go test ./internal/controller/revisions
// -run '^$' -bench SnapshotBytesReserve -benchmem).
func BenchmarkSnapshotBytesReserve(b *testing.B) {
	for _, existing := range []int{100, 8000} {
		b.Run(strconv.Itoa(existing), func(b *testing.B) {
			var objs []client.Object
			for n := range int64(existing) {
				objs = append(objs, snapshotOfBytes("old", "uid-old", n+1, 100))
			}
			r, _, _, personas := stalePersonas(b, 1, DefaultBytesPerNamespace, objs...)
			p := personas[0]
			ctx := context.Background()
			ledger, err := r.bytes.lock(ctx, ns) // the one list, when the namespace is first counted
			if err != nil {
				b.Fatal(err)
			}
			ledger.unlock()
			for b.Loop() {
				if f, err := r.reserveBytes(ctx, p, "persona-p0.r1", 100); err != nil || f != nil {
					b.Fatal(f, err)
				}
				r.bytes.namespace(ns).release("persona-p0.r1")
			}
		})
	}
}

// The cap counts what the snapshots' data hold, read from the API server,
// never what their size annotation says, which whoever may write the
// ConfigMap may write; and only the snapshots a Persona of the name theirs
// says controls.
func TestSnapshotBytesCountsDataOfControlledSnapshots(t *testing.T) {
	const size = 600
	lying := func(cm *corev1.ConfigMap) *corev1.ConfigMap {
		cm.Annotations[delivery.SnapshotBytesAnnotation] = "-9000000000000"
		return cm
	}
	orphan := func(cm *corev1.ConfigMap) *corev1.ConfigMap { cm.OwnerReferences = nil; return cm }
	ownedByAnother := func(cm *corev1.ConfigMap) *corev1.ConfigMap { cm.OwnerReferences[0].Name = "p9"; return cm }
	// p0's revision 5 is not evictable: p0's status names no revision yet.
	for _, tc := range []struct {
		name     string
		limit    int
		existing []client.Object
		// written is whether each of p1, p2 writes its 600 bytes.
		written []bool
	}{{
		name: "a snapshot's annotation lies: its 1500 bytes of data count",
		// 1500 + 600 > 2000.
		limit: 2000, existing: []client.Object{lying(snapshotOfBytes("p0", "uid-persona-p0", 5, 1500))},
		written: []bool{false, false},
	}, {
		name: "an orphan's annotation lies: neither it nor its data count",
		// 1500 + 600 fits 2200; 1500 + 600 + 600 does not.
		limit: 2200, existing: []client.Object{snapshotOfBytes("p0", "uid-persona-p0", 5, 1500),
			orphan(lying(snapshotOfBytes("gone", "uid-gone", 1, size)))},
		written: []bool{true, false},
	}, {
		name: "a snapshot controlled by a Persona of another name does not count",
		// 600 + 600 fits 1300, and would not with the other's 1500.
		limit: 1300, existing: []client.Object{ownedByAnother(snapshotOfBytes("p0", "uid-persona-p9", 5, 1500))},
		written: []bool{true, true},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r, _, _, personas := stalePersonas(t, 3, tc.limit, tc.existing...)
			for i, p := range personas[1:] {
				rev := v1alpha1.RevisionHistoryEntry{Revision: 1, ContentHash: "sha256:x"}
				f, err := r.Keep(t.Context(), p, rev, Content{Data: snapshotOfBytes(p.Name, p.UID, 1, size).Data})
				if err != nil {
					t.Fatal(err)
				}
				if got := f == nil; got != tc.written[i] {
					t.Errorf("%s's snapshot written: %v, want %v (%v)", p.Name, got, tc.written[i], f)
				}
			}
		})
	}
}

// A snapshot orphaned (its Persona deleted with --cascade=orphan) is no
// longer counted once the cache's event tells it.
func TestSnapshotBytesForgetsAnOrphan(t *testing.T) {
	snap := snapshotOfBytes("p0", "uid-persona-p0", 5, 1500)
	r, _, _, _ := stalePersonas(t, 1, DefaultBytesPerNamespace, snap)
	used := func() int {
		ledger, err := r.bytes.lock(t.Context(), ns)
		if err != nil {
			t.Fatal(err)
		}
		defer ledger.unlock()
		return ledger.used()
	}
	if got := used(); got != 1500 {
		t.Fatalf("the namespace's snapshots hold %d bytes, want 1500", got)
	}
	orphaned := &metav1.PartialObjectMetadata{ObjectMeta: *snap.ObjectMeta.DeepCopy()}
	orphaned.OwnerReferences = nil
	orphaned.Annotations[delivery.SnapshotBytesAnnotation] = "-9000000000000"
	r.bytes.event(delivery.NewSnapshotMeta(orphaned), false) // as the cache of the snapshots keeps it
	if got := used(); got != 0 {
		t.Errorf("the namespace's snapshots hold %d bytes once the only one is orphaned, want 0", got)
	}
}
