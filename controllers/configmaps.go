package controllers

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// A cluster can hold hundreds of MiB of ConfigMaps that are none of the
// operator's business, so the manager holds no ConfigMap's data: it knows
// every ConfigMap by metadata only, the Personas' own with all of it (to
// write them back whole), every other reduced to what the watches read.
// The data of a Persona's ConfigMap it knows by its content hash at the
// versions it wrote or read (ownWrites); the data of a ConfigMap a
// templateFrom names it reads by name (templateSources).

// CacheOptions are the manager's cache options: the watched namespaces
// (none: all).
func CacheOptions(namespaces []string) cache.Options {
	return cache.Options{
		DefaultNamespaces: namespaceConfigs(namespaces),
		DefaultTransform:  internObjects,
	}
}

// ClientOptions are the manager's client options: ConfigMaps are read from
// the API server, never through a cache of them all with their data.
func ClientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.ConfigMap{}}}}
}

func namespaceConfigs(namespaces []string) map[string]cache.Config {
	if len(namespaces) == 0 {
		return nil
	}
	out := make(map[string]cache.Config, len(namespaces))
	for _, ns := range namespaces {
		out[ns] = cache.Config{}
	}
	return out
}

// newConfigMapMetadataCache is a cache of every ConfigMap's metadata in
// namespaces: a Persona's own ConfigMap with all of it but managedFields,
// any other reduced to what the watches read: name, version and owners.
func newConfigMapMetadataCache(mgr ctrl.Manager, namespaces []string) (cache.Cache, error) {
	return cache.New(mgr.GetConfig(), cache.Options{
		Scheme:            mgr.GetScheme(),
		Mapper:            mgr.GetRESTMapper(),
		DefaultNamespaces: namespaceConfigs(namespaces),
		DefaultTransform:  trimConfigMapMetadata,
	})
}

func trimConfigMapMetadata(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	if !personasOwn(m) {
		m.ObjectMeta = metav1.ObjectMeta{
			Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
			OwnerReferences: m.OwnerReferences, DeletionTimestamp: m.DeletionTimestamp,
		}
	}
	internMeta(m)
	return m, nil
}

func configMapMetadata() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	return m
}

// watchConfigMapMetadata is a source of the metadata cache's ConfigMap
// events for h.
func watchConfigMapMetadata(c cache.Cache, h handler.TypedEventHandler[*metav1.PartialObjectMetadata, reconcile.Request]) source.Source {
	return source.Kind(c, configMapMetadata(), h)
}

// templateSources reads the ConfigMaps that templateFrom names: whether one
// exists from the metadata cache, its data from the API server, kept per
// resourceVersion so that the Personas of a fan-out read it once.
type templateSources struct {
	metadata client.Reader
	live     client.Reader
	mu       sync.Mutex
	data     map[types.NamespacedName]versionedData
}

type versionedData struct {
	resourceVersion string
	data            map[string]string
}

func newTemplateSources(metadata, live client.Reader) *templateSources {
	return &templateSources{metadata: metadata, live: live, data: map[types.NamespacedName]versionedData{}}
}

// get reads the ConfigMap key into cm; its data is shared, not to be modified.
func (s *templateSources) get(ctx context.Context, key types.NamespacedName, cm *corev1.ConfigMap) error {
	m := configMapMetadata()
	if err := s.metadata.Get(ctx, key, m); err != nil {
		if apierrors.IsNotFound(err) {
			s.forget(key)
		}
		return err
	}
	s.mu.Lock()
	held, ok := s.data[key]
	s.mu.Unlock()
	if ok && held.resourceVersion == m.ResourceVersion {
		cm.ObjectMeta = metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace, ResourceVersion: held.resourceVersion}
		cm.Data = held.data
		return nil
	}
	if err := s.live.Get(ctx, key, cm); err != nil {
		return err
	}
	s.mu.Lock()
	s.data[key] = versionedData{resourceVersion: cm.ResourceVersion, data: cm.Data}
	s.mu.Unlock()
	return nil
}

// forget drops the data held for a ConfigMap that is gone.
func (s *templateSources) forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.data, key)
}

// lookup is what the controllers resolve through: the manager's cache, and
// for ConfigMaps the template sources. With reads set, it logs what it read.
type lookup struct {
	cached     client.Reader
	configMaps *templateSources
	reads      *readLog
}

func (l lookup) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := l.get(ctx, key, obj, opts...)
	if l.reads != nil {
		switch {
		case err == nil:
			l.reads.read(obj)
		case apierrors.IsNotFound(err):
			l.reads.missing(obj, key)
		}
	}
	return err
}

func (l lookup) get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if cm, ok := obj.(*corev1.ConfigMap); ok {
		return l.configMaps.get(ctx, key, cm)
	}
	return l.cached.Get(ctx, key, obj, opts...)
}

// List reads the cache without copying its objects: the resolver only
// reads them, and it lists the ClusterPromptLayers on every render.
func (l lookup) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := l.cached.List(ctx, list, append(opts, client.UnsafeDisableDeepCopy)...); err != nil {
		return err
	}
	if l.reads != nil {
		return l.reads.readList(list)
	}
	return nil
}
