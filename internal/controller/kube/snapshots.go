package kube

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/persona-operator/persona-operator/internal/delivery"
)

// SnapshotReader reads what the manager knows of the snapshots
// (delivery.SnapshotMeta): those of one Persona, of a namespace, or one by
// name. What it returns may be shared with a cache: never to be changed.
type SnapshotReader interface {
	// SnapshotsOf are the snapshots whose names are for the Persona
	// persona of namespace, in no order, whoever controls them.
	SnapshotsOf(ctx context.Context, namespace, persona string) ([]*delivery.SnapshotMeta, error)
	// SnapshotsIn are namespace's, in no order.
	SnapshotsIn(ctx context.Context, namespace string) ([]*delivery.SnapshotMeta, error)
	// Snapshot is namespace's of that name, nil when there is none.
	Snapshot(ctx context.Context, namespace, name string) (*delivery.SnapshotMeta, error)
}

// SnapshotSelector selects the ConfigMaps that carry a snapshot's labels:
// the operator's, with a revision label. The cache of the operator's other
// ConfigMaps selects the rest (NotSnapshotSelector).
var SnapshotSelector, NotSnapshotSelector = func() (labels.Selector, labels.Selector) {
	managed, err := labels.NewRequirement(delivery.ManagedByLabel, selection.Equals, []string{delivery.ManagedBy})
	if err != nil {
		panic(err)
	}
	revision, err := labels.NewRequirement(delivery.RevisionLabel, selection.Exists, nil)
	if err != nil {
		panic(err)
	}
	noRevision, err := labels.NewRequirement(delivery.RevisionLabel, selection.DoesNotExist, nil)
	if err != nil {
		panic(err)
	}
	return labels.NewSelector().Add(*managed, *revision), labels.NewSelector().Add(*managed, *noRevision)
}()

// SnapshotCache keeps a delivery.SnapshotMeta of each ConfigMap
// SnapshotSelector selects, from a watch of their metadata: three a Persona
// at the default revisionHistoryLimit, which, held whole in the cache of
// the operator's ConfigMaps, were three quarters of what it held. It is a
// controller-runtime cache of its own (Cache), run with the manager's
// caches on every replica, as they are, and synced with them (the pod
// webhook reads it too), whose informers keep the compact records, read
// here through their indexes.
type SnapshotCache struct {
	cache cache.Cache
	// informers are the cache's informers of ConfigMaps, one for all
	// namespaces or one a namespace watched; fixed once made.
	informers []toolscache.SharedIndexInformer
	// made is set once NewSnapshotCache has its informers: an informer
	// made after (of a kind asked through Cache by mistake) is not one.
	made atomic.Bool
}

var _ SnapshotReader = &SnapshotCache{}

// snapshotsByPersona indexes the snapshots by namespace/persona; they are
// indexed by namespace too (toolscache.NamespaceIndex).
const snapshotsByPersona = "persona"

// ErrSnapshotsNotSynced is what a SnapshotCache answers when ctx ends
// before its first list has arrived: it cannot yet tell a snapshot that is
// missing.
var ErrSnapshotsNotSynced = errors.New("the cache of the snapshots has not synced yet")

// NewSnapshotCache makes the cache of the snapshots with newCache (the
// manager's cache constructor) and opts (its scheme, mapper and namespaces;
// its selector, transform and informers are the snapshots'), and asks for
// its informer, so that it lists as soon as the cache starts.
func NewSnapshotCache(ctx context.Context, newCache func(*rest.Config, cache.Options) (cache.Cache, error), cfg *rest.Config, opts cache.Options) (*SnapshotCache, error) {
	out := &SnapshotCache{}
	opts.DefaultLabelSelector, opts.DefaultTransform = SnapshotSelector, compactSnapshot
	// Called for each namespace's informer as the cache makes it, within
	// GetInformer below.
	opts.NewInformer = func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, _ toolscache.Indexers) toolscache.SharedIndexInformer {
		informer := toolscache.NewSharedIndexInformer(lw, obj, resync,
			toolscache.Indexers{toolscache.NamespaceIndex: indexSnapshotByNamespace, snapshotsByPersona: indexSnapshotByPersona})
		if !out.made.Load() {
			out.informers = append(out.informers, informer)
		}
		return informer
	}
	c, err := newCache(cfg, opts)
	if err != nil {
		return nil, err
	}
	out.cache = c
	if _, err := c.GetInformer(ctx, ConfigMapMetadata(), cache.BlockUntilSynced(false)); err != nil {
		return nil, fmt.Errorf("the informer of the snapshots: %w", err)
	}
	out.made.Store(true)
	if len(out.informers) == 0 {
		return nil, errors.New("the cache of the snapshots made no informer")
	}
	return out, nil
}

// Cache is the controller-runtime cache that runs the watches, to be run
// with the manager's caches (StartedWithCaches); it holds records of its
// own kind, never to be read through it.
func (c *SnapshotCache) Cache() cache.Cache { return c.cache }

// compactSnapshot is what the cache keeps of a snapshot's metadata. A
// tombstone's object has been made one before.
func compactSnapshot(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	s := delivery.NewSnapshotMeta(m)
	s.Namespace, s.Guardrails = Intern(s.Namespace), Intern(s.Guardrails)
	return s, nil
}

func indexSnapshotByNamespace(obj any) ([]string, error) {
	if s, ok := obj.(*delivery.SnapshotMeta); ok {
		return []string{s.Namespace}, nil
	}
	return nil, nil
}

func indexSnapshotByPersona(obj any) ([]string, error) {
	if s, ok := obj.(*delivery.SnapshotMeta); ok && s.Persona != "" {
		return []string{s.Namespace + "/" + s.Persona}, nil
	}
	return nil, nil
}

// WaitForSync waits until every watch has listed, or ctx is done.
func (c *SnapshotCache) WaitForSync(ctx context.Context) error {
	for _, informer := range c.informers {
		select {
		case <-informer.HasSyncedChecker().Done():
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ErrSnapshotsNotSynced, ctx.Err())
		}
	}
	return nil
}

// AddEventHandler has h told of every snapshot's arrival, change and
// departure; its objects are *delivery.SnapshotMeta, or a
// toolscache.DeletedFinalStateUnknown of one. Nothing waits for h to have
// been handed the first list (as the manager's caches wait for their
// handlers): whoever reads what came before reads the cache.
func (c *SnapshotCache) AddEventHandler(h toolscache.ResourceEventHandler) error {
	for _, informer := range c.informers {
		if _, err := informer.AddEventHandler(h); err != nil {
			return fmt.Errorf("watch the snapshots: %w", err)
		}
	}
	return nil
}

// SnapshotsOf implements SnapshotReader; before the first list it waits
// for it, as long as ctx lasts.
func (c *SnapshotCache) SnapshotsOf(ctx context.Context, namespace, persona string) ([]*delivery.SnapshotMeta, error) {
	return c.byIndex(ctx, snapshotsByPersona, namespace+"/"+persona)
}

// SnapshotsIn implements SnapshotReader, waiting as SnapshotsOf.
func (c *SnapshotCache) SnapshotsIn(ctx context.Context, namespace string) ([]*delivery.SnapshotMeta, error) {
	return c.byIndex(ctx, toolscache.NamespaceIndex, namespace)
}

// Snapshot implements SnapshotReader, waiting as SnapshotsOf.
func (c *SnapshotCache) Snapshot(ctx context.Context, namespace, name string) (*delivery.SnapshotMeta, error) {
	if err := c.WaitForSync(ctx); err != nil {
		return nil, err
	}
	for _, informer := range c.informers {
		obj, ok, err := informer.GetIndexer().GetByKey(namespace + "/" + name)
		if err != nil {
			return nil, err
		}
		if m, isSnapshot := obj.(*delivery.SnapshotMeta); ok && isSnapshot {
			return m, nil
		}
	}
	return nil, nil
}

// byIndex are the records whose index holds value, from every informer:
// each holds its namespace's alone.
func (c *SnapshotCache) byIndex(ctx context.Context, index, value string) ([]*delivery.SnapshotMeta, error) {
	if err := c.WaitForSync(ctx); err != nil {
		return nil, err
	}
	var out []*delivery.SnapshotMeta
	for _, informer := range c.informers {
		objs, err := informer.GetIndexer().ByIndex(index, value)
		if err != nil {
			return nil, err
		}
		for _, obj := range objs {
			if m, ok := obj.(*delivery.SnapshotMeta); ok {
				out = append(out, m)
			}
		}
	}
	return out, nil
}
