package revisions

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/controller/kube"
	"github.com/persona-operator/persona-operator/internal/delivery"
)

// Pruning deletes a Persona's snapshots past spec.revisionHistoryLimit,
// oldest first, besides those keptRevisions keeps. It runs only once the
// status names the current revision: a reconcile begins it after its
// status patch (BeginPrune), from the caches, and finishes it (FinishPrune)
// with the Persona's pods listed afresh, which the Persona controller does
// in the background.

// Pruning is a prune begun: the snapshots past the limit.
type Pruning struct {
	older []Snapshot
	over  int
}

// BeginPrune finds the snapshots past p's limit from p's status as patched
// and the caches; nil when nothing is past the limit.
func (s *Store) BeginPrune(ctx context.Context, p *v1alpha1.Persona) (*Pruning, error) {
	// p's snapshots are of revisions 1 to the latest at most: while those
	// are within the limit, there is nothing to list.
	if max(p.Status.CurrentRevision, p.Status.LatestRevision) <= int64(p.Spec.HistoryLimit())+1 {
		return nil, nil
	}
	kept, err := s.keptRevisions(ctx, p)
	if err != nil {
		return nil, err
	}
	snapshots, err := s.Snapshots(ctx, p)
	if err != nil {
		return nil, err
	}
	older := slices.DeleteFunc(snapshots, func(snap Snapshot) bool { return kept[snap.Number] })
	over := len(older) - p.Spec.HistoryLimit()
	if over <= 0 {
		return nil, nil
	}
	return &Pruning{older: older, over: over}, nil
}

// FinishPrune deletes what pr found past the limit, less the snapshots
// p's pods name, listed afresh from the API server with the pods of the
// namespace's other prunes waiting (freshPodLists; NamedByPods reads the
// cache, which may not hold a pod admitted an instant ago), and the one a
// pin set meanwhile names.
func (s *Store) FinishPrune(ctx context.Context, p *v1alpha1.Persona, pr *Pruning, patched *metav1.PartialObjectMetadata) error {
	if pr == nil {
		return nil
	}
	inUse, err := s.freshPods.revisionsInUse(ctx, p.Namespace, p.Name)
	if err != nil {
		return err
	}
	// p was read at the start of the reconcile: a pin set since may name one of these.
	pinned, err := s.pinsNow(ctx, p, patched)
	if err != nil {
		return err
	}
	older := slices.DeleteFunc(pr.older, func(snap Snapshot) bool {
		return inUse[snap.Number] || slices.Contains(pinned, snap.Number)
	})
	over := len(older) - p.Spec.HistoryLimit()
	for _, snap := range older[:max(over, 0)] {
		if err := s.deleteSnapshot(ctx, snap.Meta); err != nil {
			return err
		}
	}
	return nil
}

// pinsNow are the revisions p's pin annotation names now (0 when none, or
// p is gone). When this reconcile patched nothing, they are read from the
// API server, after the pods' list. Otherwise they are the status patch's
// answer, from before the list (a prune waits for up to two, about 100 ms
// each), and the manager's cache after it, which holds a pin set while
// the list waited but one set in the last moments; such a pin finds its
// snapshot gone (RevisionNotFound).
func (s *Store) pinsNow(ctx context.Context, p *v1alpha1.Persona, patched *metav1.PartialObjectMetadata) ([]int64, error) {
	key := client.ObjectKeyFromObject(p)
	if patched == nil {
		now, err := kube.LiveMetadata(ctx, s.apiReader, v1alpha1.GroupVersion.WithKind(v1alpha1.PersonaKind), key)
		switch {
		case apierrors.IsNotFound(err):
			return nil, nil
		case err != nil:
			return nil, fmt.Errorf("read the pin of persona %s: %w", p.Name, err)
		}
		n, _, _ := v1alpha1.PinnedRevisionOf(now.Annotations)
		return []int64{n}, nil
	}
	answered, _, _ := v1alpha1.PinnedRevisionOf(patched.Annotations)
	var cached v1alpha1.Persona
	switch err := s.client.Get(ctx, key, &cached, client.UnsafeDisableDeepCopy); {
	case apierrors.IsNotFound(err):
		return []int64{answered}, nil
	case err != nil:
		return nil, fmt.Errorf("read the pin of persona %s from the cache: %w", p.Name, err)
	}
	n, _, _ := v1alpha1.PinnedRevisionOf(cached.Annotations)
	return []int64{answered, n}, nil
}

// deleteSnapshot deletes the snapshot m, noting that the controller did:
// its deletion's event needs no reconcile, and its bytes are freed before
// the cache sees it go. One gone already frees nothing here: whoever
// deleted it, the cache's event counts its bytes off.
func (s *Store) deleteSnapshot(ctx context.Context, m *delivery.SnapshotMeta) error {
	key := m.Key()
	s.pruned.add(key)
	target := kube.ConfigMapMetadata() // m may be the cache's own
	target.Namespace, target.Name = m.Namespace, m.Name
	err := s.client.Delete(ctx, target, client.Preconditions{UID: &m.UID})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		s.pruned.remove(key) // deleted before (or another of its name): its event came or comes as anyone's
		return nil
	case err != nil:
		s.pruned.remove(key)
		return fmt.Errorf("delete snapshot %s: %w", m.Name, err)
	}
	s.bytes.deletedHere(m)
	return nil
}
