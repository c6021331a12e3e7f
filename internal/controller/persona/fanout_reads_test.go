package persona

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"maps"
	"runtime"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/render"
	"github.com/persona-operator/persona-operator/internal/status"
	"github.com/persona-operator/persona-operator/test/fixtures"
)

// A fan-out's delivery finds its revision's cause in what the controller
// wrote last, and its status pass writes the revision's snapshot from the
// data the delivery wrote: neither reads the ConfigMap back from the API
// server.
func TestFanOutReadsNoConfigMapBack(t *testing.T) {
	p := barePersona("p", "Hello", "style")
	layer := appendLayer("style", "Be brief.")
	s := newSteps(t, p, layer)
	reads := &gets[*corev1.ConfigMap]{Client: s.cluster}
	s.live.Client = fixtures.ManagersAPIServer{Client: reads}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(p)}
	if _, err := s.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	s.get(t, layer)
	layer.Spec.Template = new("Be terse.")
	layer.Generation = 2
	if err := s.cluster.Update(t.Context(), layer); err != nil {
		t.Fatal(err)
	}
	reads.n = 0

	// The delivery, then the status pass it deferred.
	for pass := range 2 {
		if _, err := s.Reconcile(t.Context(), req); err != nil {
			t.Fatalf("pass %d: %v", pass, err)
		}
	}
	if reads.n != 0 {
		t.Errorf("the fan-out read %d ConfigMaps from the API server, want 0", reads.n)
	}
	live := configMapOf(t, s, p)
	rec, ok := decodeRecord(live.Data[render.RevisionKey])
	wantCause := v1alpha1.RevisionInput{Kind: v1alpha1.PromptLayerKind, Namespace: ns, Name: "style", Generation: 2}
	if !ok || rec.Revision != 2 || rec.Cause != wantCause {
		t.Fatalf("revision.json = %s, want revision 2 caused by %+v", live.Data[render.RevisionKey], wantCause)
	}
	snap := &corev1.ConfigMap{}
	snap.Namespace, snap.Name = ns, delivery.SnapshotName(p.Name, 2)
	s.get(t, snap)
	if !maps.Equal(snap.Data, live.Data) {
		t.Errorf("snapshot 2 holds %v, want the live ConfigMap's %v", snap.Data, live.Data)
	}
}

// The data the deferred statuses hold is bounded: past deferredDataBytes an
// entry holds none, and taking an entry frees what it held. Random bytes do
// not compress, so each entry packs to a little over half the bound.
func TestDeferredStatusesBoundTheirData(t *testing.T) {
	d := newDeferredStatuses()
	big := map[string]string{"system-prompt.md": string(randomBytes(t, deferredDataBytes/2-4096))}
	a, b, c := types.NamespacedName{Name: "a"}, types.NamespacedName{Name: "b"}, types.NamespacedName{Name: "c"}
	put := func(key types.NamespacedName) {
		d.put(t.Context(), key, inputs{}, status.Render{}, v1alpha1.RevisionHistoryEntry{}, big, "g")
	}
	put(a)
	put(b)
	put(a) // replaces a's entry, and its bytes
	put(c)
	for _, tc := range []struct {
		key  types.NamespacedName
		held bool
	}{{a, true}, {b, true}, {c, false}} {
		s, ok := d.take(tc.key)
		if !ok || (s.written != nil) != tc.held || (s.guardrails != "") != tc.held {
			t.Errorf("%s: entry %v, data held %v, want %v", tc.key.Name, ok, s.written != nil, tc.held)
		}
		if got := s.data(t.Context()); tc.held && !maps.Equal(got, big) {
			t.Errorf("%s: the data held unpacks to %d keys, not the %d written", tc.key.Name, len(got), len(big))
		}
	}
	if d.dataBytes != 0 {
		t.Errorf("%d bytes counted once every entry was taken, want 0", d.dataBytes)
	}
	put(c)
	if s, _ := d.take(c); s.written == nil {
		t.Error("no data held once the others were taken")
	}
}

// Packed data unpacks to every key and every byte written, invalid UTF-8
// and empty values included; a prompt that repeats itself is held in less
// than a fifth of its bytes.
func TestPackedDataKeepsEveryByte(t *testing.T) {
	sentence := "You are a careful coding agent. Read the code before changing it, and keep changes small.\n"
	for name, data := range map[string]map[string]string{
		"none":   {},
		"empty":  {"persona.md": ""},
		"binary": {"a": string(randomBytes(t, 1000)), "b": "\xff\xfe not UTF-8", "c": "ünïcödé"},
		"prompt": {"system-prompt.md": strings.Repeat(sentence, 100), "persona.md": strings.Repeat(sentence, 20)},
	} {
		packed, err := packData(data)
		if err != nil {
			t.Fatalf("%s: pack: %v", name, err)
		}
		got, err := packed.unpack()
		if err != nil {
			t.Fatalf("%s: unpack: %v", name, err)
		}
		if !maps.Equal(got, data) || got == nil {
			t.Errorf("%s: unpacked %q, want %q", name, got, data)
		}
		if raw := delivery.DataSize(data); name == "prompt" && len(packed)*5 > raw {
			t.Errorf("a prompt of %d bytes that repeats one sentence packed to %d", raw, len(packed))
		}
	}
}

// Packed data whose header claims more than any ConfigMap's data, or that
// is cut short, is refused with an error.
func TestPackedDataRefusesCorruptPacks(t *testing.T) {
	packed, err := packData(map[string]string{"persona.md": strings.Repeat("You are careful. ", 200)})
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]packedData{
		"a claim past the room of all the data held": binary.AppendUvarint(nil, maxUnpackedBytes+1),
		"cut short": packed[:len(packed)/2],
		"empty":     {},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		data, err := p.unpack()
		runtime.ReadMemStats(&after)
		if err == nil {
			t.Errorf("%s: unpacked %d keys, want an error", name, len(data))
		}
		// Refused before the room it claims is allocated.
		if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 1<<20 {
			t.Errorf("%s: %d bytes allocated to refuse it", name, allocated)
		}
	}
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// A revision.json larger than a render writes, as someone else may write,
// is not held: it is read again when needed.
func TestOwnWritesHoldNoOversizedRecord(t *testing.T) {
	record := func(size int) map[string]string {
		rec := delivery.Record{Revision: 1, ContentHash: "sha256:a", Inputs: []v1alpha1.RevisionInput{{Kind: v1alpha1.PromptLayerKind, Namespace: ns, Name: "x"}}}
		b, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		// The layer's name fills the record to size bytes.
		rec.Inputs[0].Name = strings.Repeat("x", 1+size-len(b))
		if b, err = json.Marshal(rec); err != nil || len(b) != size {
			t.Fatalf("record of %d bytes, want %d: %v", len(b), size, err)
		}
		return map[string]string{render.RevisionKey: string(b)}
	}
	w := newOwnWrites()
	key := client.ObjectKey{Namespace: ns, Name: "persona-p"}
	for _, tc := range []struct {
		size int
		held bool
	}{{maxKeptRecordBytes, true}, {maxKeptRecordBytes + 1, false}} {
		w.read(key, "7", "sha256:a", record(tc.size))
		if _, ok := w.recordAt(key, "7"); ok != tc.held {
			t.Errorf("a record of %d bytes: held %v, want %v", tc.size, ok, tc.held)
		}
	}
}
