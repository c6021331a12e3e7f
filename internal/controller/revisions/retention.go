package revisions

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/controller/kube"
	"github.com/persona-operator/persona-operator/internal/delivery"
)

// Retention (personas.md#revisions): which snapshots stay whatever
// spec.revisionHistoryLimit and the namespace's byte cap say. Pruning and
// eviction both ask keptRevisions, so a new reason to keep a snapshot is
// one Keeper more.

// Keeper gives the revisions of p that must keep their snapshots, for
// a reason of its own (the revisions injected pods still name, for
// example). It may read, and fails with an error only.
type Keeper func(ctx context.Context, p *v1alpha1.Persona) ([]int64, error)

// keptRevisions are the revisions of p whose snapshots are kept beyond the
// limit and the cap: the current one, the latest, the one pinned (by the
// status, and by the annotation before the status names it), and those
// each of s.keepers names.
func (s *Store) keptRevisions(ctx context.Context, p *v1alpha1.Persona) (map[int64]bool, error) {
	kept := map[int64]bool{}
	for _, n := range []int64{p.Status.CurrentRevision, p.Status.LatestRevision, p.Status.PinnedRevision} {
		if n > 0 {
			kept[n] = true
		}
	}
	if n, _, err := v1alpha1.PinnedRevisionOf(p.Annotations); err == nil && n > 0 {
		kept[n] = true
	}
	for _, keep := range s.keepers {
		more, err := keep(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("the revisions of persona %s to keep: %w", p.Name, err)
		}
		for _, n := range more {
			kept[n] = true
		}
	}
	return kept, nil
}

// evict deletes the oldest snapshots of p's namespace that no Persona
// keeps until need bytes are freed, each deletion counted in ledger (whose
// lock the caller holds). When those snapshots together free less than
// need, it deletes none: they would be lost for nothing. One deleted
// meanwhile by anyone else frees nothing here: the cache's event counts it.
func (s *Store) evict(ctx context.Context, p *v1alpha1.Persona, ledger *namespaceSnapshotBytes, need int) error {
	all, err := s.namespaceSnapshots(ctx, p.Namespace)
	if err != nil {
		return err
	}
	all = slices.DeleteFunc(all, ledger.isDeleted)
	slices.SortFunc(all, func(a, b *delivery.SnapshotMeta) int {
		if c := a.Created.Compare(b.Created.Time); c != 0 {
			return c
		}
		return cmp.Or(strings.Compare(a.Persona, b.Persona), cmp.Compare(a.Revision, b.Revision))
	})
	personas := map[string]*v1alpha1.Persona{p.Name: p}
	keptOf := map[string]map[int64]bool{}
	var victims []*delivery.SnapshotMeta
	freed := 0
	for _, m := range all {
		if freed >= need {
			break
		}
		evictable, err := s.evictable(ctx, m, personas, keptOf)
		if err != nil {
			return err
		}
		if evictable {
			victims = append(victims, m)
			freed += ledger.size(m)
		}
	}
	if freed < need {
		return nil
	}
	for _, m := range victims {
		if err := s.deleteSnapshot(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

// evictable reports whether snapshot m, one of namespaceSnapshots (a
// Persona's snapshot, not another owner's ConfigMap), may go to make room:
// its Persona keeps no such revision, nor one its status does not name
// yet (written by a reconcile whose status is still to come). The snapshot
// of a Persona gone, or of an older Persona of that name, is evictable.
// personas and keptOf remember what was read for each Persona.
func (s *Store) evictable(ctx context.Context, m *delivery.SnapshotMeta, personas map[string]*v1alpha1.Persona, keptOf map[string]map[int64]bool) (bool, error) {
	name, n := m.Persona, m.Revision
	owner, ok := personas[name]
	if !ok {
		owner = &v1alpha1.Persona{}
		switch err := s.client.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: name}, owner); {
		case apierrors.IsNotFound(err):
			owner = nil
		case err != nil:
			return false, fmt.Errorf("get persona %s: %w", name, err)
		}
		personas[name] = owner
	}
	if owner == nil || m.Controller != owner.UID {
		return true, nil
	}
	if n > max(owner.Status.CurrentRevision, owner.Status.LatestRevision) {
		return false, nil
	}
	kept, ok := keptOf[name]
	if !ok {
		var err error
		if kept, err = s.keptRevisions(ctx, owner); err != nil {
			return false, err
		}
		keptOf[name] = kept
	}
	return !kept[n], nil
}

// NamedByPods is the Keeper of the injected pods: the
// revisions p's pods name, as the cache of the agent pods has them.
// Pruning asks the API server as well (FinishPrune), for a pod admitted an
// instant ago.
func NamedByPods(pods client.Reader) Keeper {
	return func(ctx context.Context, p *v1alpha1.Persona) ([]int64, error) {
		inUse, err := listRevisionsInUse(ctx, pods, p.Namespace, []string{p.Name})
		if err != nil {
			return nil, err
		}
		out := make([]int64, 0, len(inUse[p.Name]))
		for n := range inUse[p.Name] {
			out = append(out, n)
		}
		return out, nil
	}
}

// listRevisionsInUse are the revisions the pods of each of personas
// name, as a read of namespace's pods has them: the cache of the agent
// pods, or the API server for a fresh list.
func listRevisionsInUse(ctx context.Context, pods client.Reader, namespace string, personas []string) (map[string]map[int64]bool, error) {
	out := make(map[string]map[int64]bool, len(personas))
	for _, persona := range personas {
		out[persona] = map[int64]bool{}
	}
	selector, err := PodsOf(personas)
	switch {
	case err != nil:
		return nil, err
	case selector == nil:
		return out, nil
	}
	list := kube.PodMetadataList()
	if err := pods.List(ctx, list, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return nil, fmt.Errorf("list the pods of %d personas: %w", len(personas), err)
	}
	for _, pod := range list.Items {
		if n, ok := delivery.PodRevision(pod.Labels); ok {
			if inUse := out[pod.Labels[delivery.PersonaLabel]]; inUse != nil {
				inUse[n] = true
			}
		}
	}
	return out, nil
}

// PodsOf selects the pods of personas; nil when no pod can be of any. A
// name that is no label value labels no pod: it is left out, so that it
// cannot fail a list shared with others.
func PodsOf(personas []string) (labels.Selector, error) {
	labelled := slices.DeleteFunc(slices.Clone(personas), func(name string) bool {
		return len(validation.IsValidLabelValue(name)) > 0
	})
	if len(labelled) == 0 {
		return nil, nil
	}
	of, err := labels.NewRequirement(delivery.PersonaLabel, selection.In, labelled)
	if err != nil {
		return nil, fmt.Errorf("select the pods of %d personas: %w", len(labelled), err)
	}
	return labels.NewSelector().Add(*of), nil
}
