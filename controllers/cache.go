package controllers

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/render"
)

// observedHashAnnotation exists only in the manager's cache: it holds the
// content hash of a managed ConfigMap's data, which the cache does not keep.
const observedHashAnnotation = "prompts.persona-operator.dev/cached-data-hash"

// TrimConfigMaps is the cache transform of ConfigMaps. The ConfigMaps the
// operator writes are most of what it caches, and it only needs to know
// whether their data is what it rendered: it keeps their data's hash in
// place of the data. Every ConfigMap loses its managedFields.
func TrimConfigMaps(obj any) (any, error) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return obj, nil
	}
	cm.ManagedFields = nil
	if cm.Labels[delivery.ManagedByLabel] != delivery.ManagedBy || cm.Data == nil {
		return cm, nil
	}
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[observedHashAnnotation] = render.ContentHash(cm.Data)
	cm.Data = nil
	return cm, nil
}

// dataHash is the hash of a ConfigMap's data, from the cache's annotation
// when the cache trimmed it.
func dataHash(cm *corev1.ConfigMap) string {
	if h, ok := cm.Annotations[observedHashAnnotation]; ok {
		return h
	}
	return render.ContentHash(cm.Data)
}

// untrimmed is what the controllers read objects through: the cache, and
// for a ConfigMap the cache trimmed (a template may read another persona's
// rendered prompt through templateFrom), the API server.
type untrimmed struct {
	cached client.Reader
	live   client.Reader
}

func (u untrimmed) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := u.cached.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	if cm, ok := obj.(*corev1.ConfigMap); ok && u.live != nil {
		if _, trimmed := cm.Annotations[observedHashAnnotation]; trimmed {
			return u.live.Get(ctx, key, obj, opts...)
		}
	}
	return nil
}
