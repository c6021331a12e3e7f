package revisions

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
)

// Eviction in a namespace of several Personas deletes only the snapshots
// none of them keeps: another Persona's delivered, latest and pinned
// revisions stay, and so does the one its pin annotation names before its
// status does.
func TestEvictionKeepsEveryPersonasRevisions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		limit   int
		evicted []string
		failed  bool
	}{
		// 600 bytes held, 100 more wanted: b.r1 alone is no Persona's to keep.
		{name: "room made", limit: 600, evicted: []string{"persona-b.r1"}},
		// 200 bytes to free, 100 evictable: none is lost for nothing.
		{name: "no room", limit: 500, failed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := barePersona("a")
			b := barePersona("b")
			b.Annotations = map[string]string{v1alpha1.PinRevisionAnnotation: "2"}
			b.Status.CurrentRevision, b.Status.LatestRevision, b.Status.PinnedRevision = 3, 4, 2
			c := barePersona("c")
			c.Annotations = map[string]string{v1alpha1.PinRevisionAnnotation: "1"} // not yet honoured
			c.Status.CurrentRevision, c.Status.LatestRevision = 2, 2
			objs := []client.Object{a, b, c}
			// c's snapshots are the oldest: they would go first were they not kept.
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			var snapshots []string
			for i, s := range []struct {
				p *v1alpha1.Persona
				n int64
			}{{c, 1}, {c, 2}, {b, 1}, {b, 2}, {b, 3}, {b, 4}} {
				cm := snapshotOfBytes(s.p.Name, s.p.UID, s.n, 100)
				cm.CreationTimestamp = metav1.NewTime(start.Add(time.Duration(i) * time.Minute))
				objs = append(objs, cm)
				snapshots = append(snapshots, cm.Name)
			}
			st := newStore(t, objs...)
			st.bytesPerNamespace = tc.limit
			failure, err := st.Keep(t.Context(), a, v1alpha1.RevisionHistoryEntry{Revision: 1}, Content{Data: snapshotOfBytes("a", a.UID, 1, 100).Data})
			if err != nil {
				t.Fatal(err)
			}
			if (failure != nil) != tc.failed || (failure != nil && failure.Reason != v1alpha1.SnapshotBytesExceededReason) {
				t.Errorf("failure %+v, want SnapshotBytesExceeded: %v", failure, tc.failed)
			}
			for _, name := range snapshots {
				want := true
				for _, e := range tc.evicted {
					want = want && e != name
				}
				persona, n, _ := delivery.SnapshotOf(name)
				if got := snapshotExists(t, st.cluster, persona, n); got != want {
					t.Errorf("snapshot %s exists: %v, want %v", name, got, want)
				}
			}
			if got := snapshotExists(t, st.cluster, "a", 1); got == tc.failed {
				t.Errorf("a's snapshot written: %v, want %v", got, !tc.failed)
			}
		})
	}
}

// A namespace over the cap with nothing to evict is scanned once: the next
// snapshot refused within evictRescan, no bytes freed, reads no snapshot's
// Persona again. Each scan reads every snapshot's Persona, so a tenant with
// thousands of Personas over the cap would otherwise cost that at each one.
func TestEvictionThatFreedTooLittleStands(t *testing.T) {
	objs := []client.Object{}
	var personas []*v1alpha1.Persona
	for i := range 20 {
		p := barePersona(fmt.Sprintf("p%d", i))
		p.Status.CurrentRevision, p.Status.LatestRevision = 1, 1
		personas = append(personas, p)
		objs = append(objs, p, snapshotOfBytes(p.Name, p.UID, 1, 100))
	}
	st := newStore(t, objs...)
	st.bytesPerNamespace = 2000 // all 20 held, every one a delivered revision
	read := &gets[*v1alpha1.Persona]{Client: st.client}
	st.client = read
	for i, want := range []bool{true, false} {
		before := read.n
		failure, err := st.Keep(t.Context(), personas[i], v1alpha1.RevisionHistoryEntry{Revision: 2}, Content{Data: snapshotOfBytes(personas[i].Name, personas[i].UID, 2, 100).Data})
		if err != nil || failure == nil || failure.Reason != v1alpha1.SnapshotBytesExceededReason {
			t.Fatalf("snapshot %d: failure %+v, %v; want SnapshotBytesExceeded", i, failure, err)
		}
		if scanned := read.n > before; scanned != want {
			t.Errorf("snapshot %d: the snapshots' Personas read %v, want %v", i, scanned, want)
		}
	}
}
