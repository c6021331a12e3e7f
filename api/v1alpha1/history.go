package v1alpha1

// HistoryEntry is revision n's entry in status.history, which holds the
// last MaxStatusHistory revisions.
func (st *PersonaStatus) HistoryEntry(n int64) (RevisionHistoryEntry, bool) {
	for _, e := range st.History {
		if e.Revision == n {
			return e, true
		}
	}
	return RevisionHistoryEntry{}, false
}

// LatestEntry is the entry of the latest revision, when status.history
// still holds it.
func (st *PersonaStatus) LatestEntry() (RevisionHistoryEntry, bool) {
	if st.LatestRevision == 0 {
		return RevisionHistoryEntry{}, false
	}
	return st.HistoryEntry(st.LatestRevision)
}
