package controllers

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/render"
)

// observedHashAnnotation exists only in the manager's cache: it holds the
// content hash of a managed ConfigMap's data, which the cache does not keep.
const observedHashAnnotation = "prompts.persona-operator.dev/cached-data-hash"

// trimConfigMaps is the cache transform of the operator's own ConfigMaps,
// the only ones the manager's cache holds: it only needs to know whether
// their data is what it rendered, so it keeps their data's hash in place of
// the data. Every ConfigMap loses its managedFields, and shares its repeated
// strings (internMeta).
func trimConfigMaps(obj any) (any, error) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return obj, nil
	}
	internMeta(cm)
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
