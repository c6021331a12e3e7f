package persona

import (
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/render"
)

// The next number is 1 past the highest of the live ConfigMap's
// annotation, the status and the Persona's own snapshots; a snapshot of
// another owner does not count.
func TestNextRevisionNumber(t *testing.T) {
	for _, tc := range []struct {
		name        string
		annotation  string
		status      v1alpha1.PersonaStatus
		snapshots   []int64
		foreignSnap int64
		want        int64
	}{
		{name: "a first revision", want: 1},
		{name: "after the live ConfigMap's", annotation: "4", want: 5},
		{name: "after the status's latest", annotation: "4", status: v1alpha1.PersonaStatus{CurrentRevision: 4, LatestRevision: 6}, want: 7},
		{name: "after the highest snapshot", annotation: "4", snapshots: []int64{3, 9}, want: 10},
		{name: "not after another owner's snapshot", annotation: "2", foreignSnap: 8, want: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := barePersona("p", "New")
			p.Status = tc.status
			objs := []client.Object{p}
			if tc.annotation != "" {
				cm := ownedBy(p, delivery.ConfigMap(p.Name, p.Namespace, &render.Output{Data: map[string]string{render.SystemPromptKey: "Old\n"}, Hash: "sha256:old"}))
				cm.Annotations[delivery.RevisionAnnotation] = tc.annotation
				objs = append(objs, cm)
			}
			for _, n := range tc.snapshots {
				objs = append(objs, snapshotObject(p, n, true))
			}
			if tc.foreignSnap > 0 {
				objs = append(objs, snapshotObject(p, tc.foreignSnap, false))
			}
			s := newSteps(t, objs...)
			attempt, err := s.tryRender(t.Context(), p)
			if err != nil {
				t.Fatal(err)
			}
			o, err := s.deliver(t.Context(), p, attempt, false)
			if err != nil {
				t.Fatal(err)
			}
			if o.revision == nil || o.revision.Revision != tc.want {
				t.Fatalf("revision = %+v, want number %d", o.revision, tc.want)
			}
			cm := configMapOf(t, s, p)
			if got := cm.Annotations[delivery.RevisionAnnotation]; got != fmt.Sprint(tc.want) {
				t.Errorf("annotation = %q, want %d", got, tc.want)
			}
			rec, ok := decodeRecord(cm.Data[render.RevisionKey])
			if !ok || rec.Revision != tc.want || rec.ContentHash != attempt.output.Hash || rec.Persona != "p" || rec.Namespace != ns {
				t.Errorf("revision.json = %q", cm.Data[render.RevisionKey])
			}
		})
	}
}

// snapshotObject is snapshot n of p, controlled by p or, when not ours, by
// an older Persona of the same name.
func snapshotObject(p *v1alpha1.Persona, n int64, ours bool) *corev1.ConfigMap {
	owner := p
	if !ours {
		owner = p.DeepCopy()
		owner.UID = "uid-an-older-persona"
	}
	return ownedBy(owner, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: delivery.SnapshotName(p.Name, n), Labels: delivery.SnapshotLabels(p.Name, n)},
		Data:       map[string]string{render.SystemPromptKey: "Old\n"},
		Immutable:  new(true),
	})
}

// The cause is the input that changed since the previous revision, the
// Persona first; an input the previous revision read and this one did not
// next; the operator when none changed.
func TestRevisionCause(t *testing.T) {
	persona := func(gen int64) v1alpha1.RevisionInput {
		return v1alpha1.RevisionInput{Kind: "Persona", Namespace: ns, Name: "p", Generation: gen}
	}
	layer := func(gen int64) v1alpha1.RevisionInput {
		return v1alpha1.RevisionInput{Kind: "PromptLayer", Namespace: ns, Name: "l", Generation: gen}
	}
	guardrail := v1alpha1.RevisionInput{Kind: "ClusterPromptLayer", Name: "g", Generation: 1}
	namespace := func(rv string) v1alpha1.RevisionInput {
		return v1alpha1.RevisionInput{Kind: "Namespace", Name: ns, ResourceVersion: rv}
	}
	for _, tc := range []struct {
		name     string
		previous []v1alpha1.RevisionInput // nil: no revision.json
		read     []v1alpha1.RevisionInput
		want     v1alpha1.RevisionInput
	}{
		{name: "the Persona's edit", previous: []v1alpha1.RevisionInput{layer(1), namespace("5"), persona(1)},
			read: []v1alpha1.RevisionInput{layer(1), namespace("6"), persona(2)}, want: persona(2)},
		{name: "a layer's edit", previous: []v1alpha1.RevisionInput{layer(1), persona(2)},
			read: []v1alpha1.RevisionInput{layer(2), persona(2)}, want: layer(2)},
		{name: "a guardrail newly selected", previous: []v1alpha1.RevisionInput{persona(2)},
			read: []v1alpha1.RevisionInput{guardrail, persona(2)}, want: guardrail},
		{name: "a guardrail no longer selected", previous: []v1alpha1.RevisionInput{guardrail, persona(2)},
			read: []v1alpha1.RevisionInput{persona(2)}, want: guardrail},
		{name: "nothing read changed", previous: []v1alpha1.RevisionInput{persona(2)},
			read: []v1alpha1.RevisionInput{persona(2)}, want: v1alpha1.RevisionInput{Kind: "operator"}},
		{name: "a ConfigMap from before revisions", read: []v1alpha1.RevisionInput{persona(2)}, want: v1alpha1.RevisionInput{Kind: "operator"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := barePersona("p", "P")
			p.Generation = 2
			for _, in := range tc.read {
				if in.Kind == "Persona" {
					p.Generation = in.Generation
				}
			}
			current := ownedBy(p, delivery.ConfigMap(p.Name, p.Namespace, &render.Output{Data: map[string]string{}, Hash: "sha256:old"}))
			if tc.previous != nil {
				current.Data[render.RevisionKey] = string(encodeRecord(p, v1alpha1.RevisionHistoryEntry{Revision: 1, ContentHash: "sha256:old"}, tc.previous, 0))
			}
			s := newSteps(t, p)
			got, err := s.cause(t.Context(), p, tc.read, current)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("cause = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// status.history keeps the last MaxStatusHistory revisions, each once.
func TestSetRevisionKeepsTheLastTen(t *testing.T) {
	var st v1alpha1.PersonaStatus
	for n := int64(1); n <= 12; n++ {
		setRevision(&st, v1alpha1.RevisionHistoryEntry{Revision: n, ContentHash: fmt.Sprint("sha256:", n)})
		setRevision(&st, v1alpha1.RevisionHistoryEntry{Revision: n, ContentHash: fmt.Sprint("sha256:", n)})
	}
	if st.CurrentRevision != 12 || st.LatestRevision != 12 {
		t.Errorf("current, latest = %d, %d; want 12, 12", st.CurrentRevision, st.LatestRevision)
	}
	if len(st.History) != 10 || st.History[0].Revision != 3 || st.History[9].Revision != 12 {
		t.Errorf("history = %+v, want revisions 3 to 12", st.History)
	}
}

// What ownWrites keeps of a write is the inputs its revision.json names,
// whether taken from the inputs a new record was encoded from or read
// back from a record copied whole (a pin's); none past maxKeptRecordBytes.
func TestKeptInputsAreTheRecordsInputs(t *testing.T) {
	p := &v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "reviewer"}}
	read := []v1alpha1.RevisionInput{
		{Kind: "Persona", Namespace: "ns", Name: "reviewer", Generation: 3},
		{Kind: "PromptLayer", Namespace: "ns", Name: "shared", Generation: 7},
		{Kind: "ConfigMap", Namespace: "ns", Name: "templates", ResourceVersion: "912"},
	}
	e := v1alpha1.RevisionHistoryEntry{Revision: 4, ContentHash: "sha256:4"}
	encoded := newRecord(p, e, read, 0)
	data := map[string]string{render.RevisionKey: string(encoded.record)}
	copied := &revision{entry: e, record: encoded.record}
	for name, rev := range map[string]*revision{"encoded": encoded, "copied": copied} {
		kept := rev.kept(data)
		if kept == nil || !kept.readable {
			t.Fatalf("%s: kept %+v, want the record's inputs", name, kept)
		}
		if got := kept.values(); fmt.Sprint(got) != fmt.Sprint(read) {
			t.Errorf("%s: kept inputs %v, want %v", name, got, read)
		}
		if back := keptRecord(data); !reflect.DeepEqual(kept, back) {
			t.Errorf("%s: kept %+v, where the data written reads back as %+v", name, kept, back)
		}
	}
	// A revision numbered 0 (a status edited by hand) writes a record that
	// does not read back: it is kept as it reads, not as encoded.
	zero := newRecord(p, v1alpha1.RevisionHistoryEntry{ContentHash: "sha256:0"}, read, 0)
	zeroData := map[string]string{render.RevisionKey: string(zero.record)}
	if kept, back := zero.kept(zeroData), keptRecord(zeroData); kept.readable || !reflect.DeepEqual(kept, back) {
		t.Errorf("a record of revision 0: kept %+v, where the data written reads back as %+v", kept, back)
	}
	huge := make([]v1alpha1.RevisionInput, 0, 400)
	for i := range 400 {
		huge = append(huge, v1alpha1.RevisionInput{Kind: "PromptLayer", Namespace: "ns", Name: fmt.Sprintf("layer-%03d", i), Generation: 1})
	}
	big := newRecord(p, e, huge, 0)
	if len(big.record) <= maxKeptRecordBytes {
		t.Fatalf("a record of %d inputs is %d bytes, within %d", len(huge), len(big.record), maxKeptRecordBytes)
	}
	if kept := big.kept(map[string]string{render.RevisionKey: string(big.record)}); kept != nil {
		t.Errorf("a revision.json of %d bytes was kept", len(big.record))
	}
}
