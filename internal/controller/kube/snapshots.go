package kube

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"

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
// the operator's ConfigMaps, were three quarters of what it held. It runs
// with the manager on every replica (the pod webhook reads it), not only on
// the leader.
type SnapshotCache struct {
	// informers are the watches by namespace; NamespaceAll's when every
	// namespace is watched.
	informers map[string]toolscache.SharedIndexInformer
}

var _ SnapshotReader = &SnapshotCache{}

// The SnapshotCache's indexes: by namespace, and by Persona
// (namespace/persona).
const (
	snapshotsByNamespace = "namespace"
	snapshotsByPersona   = "persona"
)

// ErrSnapshotsNotSynced is what a SnapshotCache answers before its first
// list has arrived: it cannot yet tell a snapshot that is missing.
var ErrSnapshotsNotSynced = errors.New("the cache of the snapshots has not synced yet")

// NewSnapshotCache watches the snapshots of namespaces (none: all) through
// httpClient, with cfg's server and credentials.
func NewSnapshotCache(cfg *rest.Config, httpClient *http.Client, namespaces []string) (*SnapshotCache, error) {
	c, err := metadata.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("metadata client: %w", err)
	}
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	out := &SnapshotCache{informers: map[string]toolscache.SharedIndexInformer{}}
	for _, ns := range namespaces {
		informer := metadatainformer.NewFilteredMetadataInformer(c, corev1.SchemeGroupVersion.WithResource("configmaps"), ns, 0,
			toolscache.Indexers{snapshotsByNamespace: indexSnapshotByNamespace, snapshotsByPersona: indexSnapshotByPersona},
			func(o *metav1.ListOptions) { o.LabelSelector = SnapshotSelector.String() }).Informer()
		if err := informer.SetTransform(compactSnapshot); err != nil {
			return nil, fmt.Errorf("the snapshots' transform: %w", err)
		}
		out.informers[ns] = informer
	}
	return out, nil
}

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

// Start runs the watches until ctx is done.
func (c *SnapshotCache) Start(ctx context.Context) error {
	for _, informer := range c.informers {
		go informer.RunWithContext(ctx)
	}
	<-ctx.Done()
	return nil
}

// NeedLeaderElection is false: every replica's pod webhook reads it.
func (c *SnapshotCache) NeedLeaderElection() bool { return false }

// WaitForSync waits until every watch has listed, or ctx is done.
func (c *SnapshotCache) WaitForSync(ctx context.Context) error {
	synced := make([]toolscache.InformerSynced, 0, len(c.informers))
	for _, informer := range c.informers {
		synced = append(synced, informer.HasSynced)
	}
	if !toolscache.WaitForCacheSync(ctx.Done(), synced...) {
		return fmt.Errorf("wait for the cache of the snapshots: %w", ctx.Err())
	}
	return nil
}

// AddEventHandler has h told of every snapshot's arrival, change and
// departure; its objects are *delivery.SnapshotMeta, or a
// toolscache.DeletedFinalStateUnknown of one.
func (c *SnapshotCache) AddEventHandler(h toolscache.ResourceEventHandler) error {
	for ns, informer := range c.informers {
		if _, err := informer.AddEventHandler(h); err != nil {
			return fmt.Errorf("watch the snapshots of namespace %q: %w", ns, err)
		}
	}
	return nil
}

// SnapshotsOf implements SnapshotReader.
func (c *SnapshotCache) SnapshotsOf(_ context.Context, namespace, persona string) ([]*delivery.SnapshotMeta, error) {
	return c.byIndex(namespace, snapshotsByPersona, namespace+"/"+persona)
}

// SnapshotsIn implements SnapshotReader.
func (c *SnapshotCache) SnapshotsIn(_ context.Context, namespace string) ([]*delivery.SnapshotMeta, error) {
	return c.byIndex(namespace, snapshotsByNamespace, namespace)
}

// Snapshot implements SnapshotReader.
func (c *SnapshotCache) Snapshot(_ context.Context, namespace, name string) (*delivery.SnapshotMeta, error) {
	store, err := c.store(namespace)
	if err != nil {
		return nil, err
	}
	obj, ok, err := store.GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return nil, err
	}
	return obj.(*delivery.SnapshotMeta), nil
}

func (c *SnapshotCache) byIndex(namespace, index, value string) ([]*delivery.SnapshotMeta, error) {
	store, err := c.store(namespace)
	if err != nil {
		return nil, err
	}
	objs, err := store.ByIndex(index, value)
	if err != nil {
		return nil, err
	}
	out := make([]*delivery.SnapshotMeta, 0, len(objs))
	for _, obj := range objs {
		out = append(out, obj.(*delivery.SnapshotMeta))
	}
	return out, nil
}

// store is the synced store that holds namespace's snapshots.
func (c *SnapshotCache) store(namespace string) (toolscache.Indexer, error) {
	informer, ok := c.informers[namespace]
	if !ok {
		if informer, ok = c.informers[metav1.NamespaceAll]; !ok {
			return nil, fmt.Errorf("namespace %s is not watched", namespace)
		}
	}
	if !informer.HasSynced() {
		return nil, ErrSnapshotsNotSynced
	}
	return informer.GetIndexer(), nil
}
