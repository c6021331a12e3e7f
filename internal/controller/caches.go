package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/controller/kube"
	"github.com/persona-operator/persona-operator/internal/delivery"
)

// A cluster can hold hundreds of MiB of ConfigMaps that are none of the
// operator's business, so the manager holds no ConfigMap's data, and knows
// by metadata only the ConfigMaps of three label-selected watches: its own
// but the snapshots (delivery.ManagedByLabel, no delivery.RevisionLabel),
// the Personas' with all of it (to write them back whole); the snapshots,
// a few fields each (kube.SnapshotCache); and the template sources
// (v1alpha1.TemplateSourceLabel), reduced to what the watches read. A
// ConfigMap that is in none, such as a foreign persona-<name>, it reads by
// name when it needs to. The data of
// a Persona's ConfigMap it knows by its content hash at the versions it
// wrote or read (the Persona controller's own writes); of a template
// source, only the keys that templateFrom names (kube.SourceReader).

// controllerCaches are the caches the controllers make besides the
// manager's, each run with it: the metadata of the operator's ConfigMaps
// but the snapshots, of the template sources, and of the agent pods; and
// the snapshots.
type controllerCaches struct {
	own, sourceMetadata, pods cache.Cache
	snapshots                 *kube.SnapshotCache
}

// setupCaches registers the field indexes and makes the controllers'
// caches, every informer asked for before the manager starts.
func setupCaches(ctx context.Context, mgr ctrl.Manager, namespaces []string, readUnlabelledSources bool) (controllerCaches, error) {
	if err := kube.SetupIndexes(ctx, mgr); err != nil {
		return controllerCaches{}, fmt.Errorf("register field indexes: %w", err)
	}
	own, err := newConfigMapMetadataCache(mgr, namespaces, kube.NotSnapshotSelector, trimConfigMapMetadata)
	if err != nil {
		return controllerCaches{}, fmt.Errorf("create the cache of the operator's ConfigMaps: %w", err)
	}
	snapshots, err := kube.NewSnapshotCache(ctx, NewCache, mgr.GetConfig(), cache.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), DefaultNamespaces: kube.NamespaceConfigs(namespaces)})
	if err != nil {
		return controllerCaches{}, fmt.Errorf("create the cache of the snapshots: %w", err)
	}
	// With unlabelled sources read, every ConfigMap may be one: all are watched.
	sourceSelector := templateSourceSelector
	if readUnlabelledSources {
		sourceSelector = nil
	}
	sourceMetadata, err := newConfigMapMetadataCache(mgr, namespaces, sourceSelector, trimSourceMetadata)
	if err != nil {
		return controllerCaches{}, fmt.Errorf("create the cache of the template sources: %w", err)
	}
	if err := registerInformers(ctx, mgr.GetCache(), own, sourceMetadata); err != nil {
		return controllerCaches{}, err
	}
	for _, c := range []cache.Cache{own, sourceMetadata, snapshots.Cache()} {
		if err := mgr.Add(kube.StartedWithCaches{Cache: c}); err != nil {
			return controllerCaches{}, fmt.Errorf("run a ConfigMap metadata cache: %w", err)
		}
	}
	pods, err := newAgentPodsCache(ctx, mgr, namespaces)
	if err != nil {
		return controllerCaches{}, err
	}
	return controllerCaches{own: own, sourceMetadata: sourceMetadata, pods: pods, snapshots: snapshots}, nil
}

// newAgentPodsCache is the cache of the agent pods' metadata, run with the
// manager's caches: status.agents and the snapshots' retention read it.
func newAgentPodsCache(ctx context.Context, mgr ctrl.Manager, namespaces []string) (cache.Cache, error) {
	pods, err := newPodMetadataCache(mgr, namespaces)
	if err != nil {
		return nil, fmt.Errorf("create the cache of the agent pods: %w", err)
	}
	if _, err := pods.GetInformer(ctx, kube.PodMetadata(), cache.BlockUntilSynced(false)); err != nil {
		return nil, fmt.Errorf("register the informer of the agent pods: %w", err)
	}
	if err := mgr.Add(kube.StartedWithCaches{Cache: pods}); err != nil {
		return nil, fmt.Errorf("run the cache of the agent pods: %w", err)
	}
	return pods, nil
}

// CacheOptions are the manager's cache options: the watched namespaces
// (none: all).
func CacheOptions(namespaces []string) cache.Options {
	return cache.Options{
		DefaultNamespaces: kube.NamespaceConfigs(namespaces),
		DefaultTransform:  kube.InternObjects,
	}
}

// ClientOptions are the manager's client options: ConfigMaps are read from
// the API server, never through a cache of them all with their data.
func ClientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.ConfigMap{}}}}
}

// templateSourceSelector selects the template sources.
var templateSourceSelector = labels.SelectorFromSet(labels.Set{v1alpha1.TemplateSourceLabel: "true"})

// newConfigMapMetadataCache is a cache of the metadata of the ConfigMaps
// in namespaces that selector selects (nil: all), each reduced by trim.
func newConfigMapMetadataCache(mgr ctrl.Manager, namespaces []string, selector labels.Selector, trim toolscache.TransformFunc) (cache.Cache, error) {
	return NewCache(mgr.GetConfig(), cache.Options{
		Scheme:               mgr.GetScheme(),
		Mapper:               mgr.GetRESTMapper(),
		DefaultNamespaces:    kube.NamespaceConfigs(namespaces),
		DefaultLabelSelector: selector,
		DefaultTransform:     trim,
	})
}

// trimConfigMapMetadata keeps of a Persona's own ConfigMap all of its
// metadata but managedFields, and reduces any other as trimSourceMetadata.
func trimConfigMapMetadata(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok || !delivery.IsLiveConfigMap(m) {
		return trimSourceMetadata(obj)
	}
	kube.InternMeta(m)
	return m, nil
}

// trimSourceMetadata reduces a ConfigMap's metadata to what the watches
// read: name, version, its controller and the template-source label. Only
// the controller is kept of the owners: anyone who may write a ConfigMap may
// give it thousands of owner references, which the cache would otherwise
// hold for every ConfigMap it watches. The template
// sources' cache keeps no more even of a Persona's own ConfigMap, which the
// other cache holds whole.
func trimSourceMetadata(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	var kept map[string]string
	if v, ok := m.Labels[v1alpha1.TemplateSourceLabel]; ok {
		kept = map[string]string{v1alpha1.TemplateSourceLabel: v}
	}
	m.ObjectMeta = metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion, Labels: kept,
		OwnerReferences: controllerOnly(m), DeletionTimestamp: m.DeletionTimestamp,
	}
	kube.InternMeta(m)
	return m, nil
}

// controllerOnly is obj's controller owner reference alone, or none.
func controllerOnly(obj metav1.Object) []metav1.OwnerReference {
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		return []metav1.OwnerReference{*ref}
	}
	return nil
}

// The agent pods are watched by metadata: status.agents counts them, and
// the retention of snapshots keeps the revisions they name (pruning lists
// them afresh too).
// +kubebuilder:rbac:groups="",resources=pods,verbs=list;watch

// agentPodSelector selects the pods that name a Persona.
var agentPodSelector = func() labels.Selector {
	r, err := labels.NewRequirement(delivery.PersonaLabel, selection.Exists, nil)
	if err != nil {
		panic(err)
	}
	return labels.NewSelector().Add(*r)
}()

// newPodMetadataCache is a cache of the metadata of the pods that name a
// Persona, in namespaces (nil: all), reduced to what the count reads.
func newPodMetadataCache(mgr ctrl.Manager, namespaces []string) (cache.Cache, error) {
	return NewCache(mgr.GetConfig(), cache.Options{
		Scheme:               mgr.GetScheme(),
		Mapper:               mgr.GetRESTMapper(),
		DefaultNamespaces:    kube.NamespaceConfigs(namespaces),
		DefaultLabelSelector: agentPodSelector,
		DefaultTransform:     trimPodMetadata,
	})
}

// trimPodMetadata keeps of a pod's metadata its name, version, deletion and
// the two labels the count reads: a pod's labels and annotations are its
// owner's, of any size.
func trimPodMetadata(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	kept := map[string]string{}
	for _, k := range []string{delivery.PersonaLabel, delivery.RevisionLabel} {
		if v, ok := m.Labels[k]; ok {
			kept[k] = v
		}
	}
	m.ObjectMeta = metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		Labels: kept, DeletionTimestamp: m.DeletionTimestamp}
	kube.InternMeta(m)
	return m, nil
}
