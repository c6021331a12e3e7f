package revisions

import (
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// prunedSnapshots are the snapshots the controller deleted itself whose
// deletion's watch event has not come yet: that event needs no reconcile,
// while a snapshot deleted by anyone else is written again (Keep).
type prunedSnapshots struct {
	mu   sync.Mutex
	keys map[client.ObjectKey]struct{}
}

func newPrunedSnapshots() *prunedSnapshots {
	return &prunedSnapshots{keys: map[client.ObjectKey]struct{}{}}
}

func (s *prunedSnapshots) add(key client.ObjectKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys[key] = struct{}{}
}

func (s *prunedSnapshots) remove(key client.ObjectKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.keys, key)
}

// take reports whether key was pruned, and forgets it.
func (s *prunedSnapshots) take(key client.ObjectKey) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.keys[key]
	delete(s.keys, key)
	return ok
}
