package v1alpha1

import "testing"

func TestHistoryEntries(t *testing.T) {
	st := &PersonaStatus{LatestRevision: 4, History: []RevisionHistoryEntry{{Revision: 3, ContentHash: "sha256:3"}, {Revision: 4, ContentHash: "sha256:4"}}}
	if e, ok := st.HistoryEntry(3); !ok || e.ContentHash != "sha256:3" {
		t.Errorf("revision 3: %+v %v", e, ok)
	}
	if _, ok := st.HistoryEntry(2); ok {
		t.Error("revision 2, past the history, found")
	}
	if e, ok := st.LatestEntry(); !ok || e.Revision != 4 {
		t.Errorf("latest: %+v %v", e, ok)
	}
	if _, ok := (&PersonaStatus{History: st.History}).LatestEntry(); ok {
		t.Error("a latest entry without a latest revision")
	}
}
