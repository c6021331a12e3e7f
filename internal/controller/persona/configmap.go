package persona

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/controller/kube"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/render"
)

// configMapHolds reports whether p's ConfigMap is controlled by p and
// holds the render of content hash hash.
func (r *reconciler) configMapHolds(ctx context.Context, p *v1alpha1.Persona, hash string) bool {
	current, currentHash, err := r.currentConfigMap(ctx, client.ObjectKey{Namespace: p.Namespace, Name: delivery.ConfigMapName(p.Name)})
	if err != nil {
		return false
	}
	return delivery.Controls(p, current) && isCurrent(current, currentHash, delivery.ConfigMap(p.Name, p.Namespace, &render.Output{Hash: hash}))
}

// currentConfigMap is the ConfigMap key as the metadata cache has it, and
// the content hash of its data: known when the controller wrote or read
// that version, read from the API server otherwise (then with its data).
// A ConfigMap with binaryData has no hash, nor has one that no Persona
// controls: its data is none of the controller's business.
func (r *reconciler) currentConfigMap(ctx context.Context, key client.ObjectKey) (*corev1.ConfigMap, string, error) {
	// The cache's Get returns a copy of its own.
	m := kube.ConfigMapMetadata()
	if err := r.configMapMetadata.Get(ctx, key, m); err != nil {
		return nil, "", err
	}
	if !delivery.IsLiveConfigMap(m) {
		return &corev1.ConfigMap{ObjectMeta: m.ObjectMeta}, "", nil
	}
	if hash, ok := r.writes.hashAt(key, m.ResourceVersion); ok {
		return &corev1.ConfigMap{ObjectMeta: m.ObjectMeta}, hash, nil
	}
	return r.readConfigMap(ctx, key)
}

// readConfigMap reads the ConfigMap key from the API server, and notes the
// content hash of its data at its version.
func (r *reconciler) readConfigMap(ctx context.Context, key client.ObjectKey) (*corev1.ConfigMap, string, error) {
	var cm corev1.ConfigMap
	if err := r.APIReader.Get(ctx, key, &cm); err != nil {
		return nil, "", err
	}
	hash := ""
	if len(cm.BinaryData) == 0 {
		hash = render.ContentHash(cm.Data)
	}
	// Only a Persona's own ConfigMap's revision.json is worth keeping.
	var own map[string]string
	if delivery.IsLiveConfigMap(&cm) {
		own = cm.Data
	}
	r.writes.read(key, cm.ResourceVersion, hash, own)
	return &cm, hash, nil
}

// configMapData is the data of the ConfigMap current, read from the API
// server unless current holds it: the metadata cache holds no data.
func (r *reconciler) configMapData(ctx context.Context, current *corev1.ConfigMap) (map[string]string, error) {
	if current.Data != nil {
		return current.Data, nil
	}
	cm, _, err := r.readConfigMap(ctx, client.ObjectKeyFromObject(current))
	if err != nil {
		return nil, err
	}
	// Kept for the next read of this reconcile.
	current.Data = cm.Data
	return cm.Data, nil
}
