package kube

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// ConfigMapMetadata is an empty ConfigMap's metadata, for a metadata
// cache or reader to fill.
func ConfigMapMetadata() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	return m
}

// PodMetadata is an empty pod's metadata, for a metadata cache to fill.
func PodMetadata() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
	return m
}

// PodMetadataList is an empty list of pods' metadata.
func PodMetadataList() *metav1.PartialObjectMetadataList {
	l := &metav1.PartialObjectMetadataList{}
	l.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	return l
}

// NamespaceConfigs are a cache's namespaces (cache.Options.DefaultNamespaces):
// none, all.
func NamespaceConfigs(namespaces []string) map[string]cache.Config {
	if len(namespaces) == 0 {
		return nil
	}
	out := make(map[string]cache.Config, len(namespaces))
	for _, ns := range namespaces {
		out[ns] = cache.Config{}
	}
	return out
}

// WatchConfigMapMetadata is a source of the metadata cache's ConfigMap
// events for h.
func WatchConfigMapMetadata(c cache.Cache, h handler.TypedEventHandler[*metav1.PartialObjectMetadata, reconcile.Request]) source.Source {
	return source.Kind(c, ConfigMapMetadata(), h)
}

// StartedWithCaches runs a cache of its own with the manager's caches: the
// manager starts these together, before any controller, and waits until
// all have synced. A cache added as it is would run with the controllers,
// and its lists would start only once the manager's cache has synced.
type StartedWithCaches struct{ cache.Cache }

// GetCache makes the manager count c among its caches.
func (c StartedWithCaches) GetCache() cache.Cache { return c.Cache }
