package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/internal/resolve"
)

// lookup is what the controllers resolve through: the manager's cache, and
// for ConfigMaps the template sources. With reads set, it logs what it read.
type lookup struct {
	cached     client.Reader
	configMaps *sourceReader
	reads      *readLog
}

// ReadsUnlabelledSources tells resolve whether unlabelled templateFrom
// ConfigMaps are read (--template-source-label=warn).
func (l lookup) ReadsUnlabelledSources() bool { return l.configMaps.unlabelled }

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
		dataKey, hasKey := configMapKey(opts)
		return l.configMaps.get(ctx, key, cm, dataKey, hasKey)
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

// configMapKey is the key a ConfigMap is read for (resolve.ConfigMapKey).
func configMapKey(opts []client.GetOption) (string, bool) {
	for _, o := range opts {
		if k, ok := o.(resolve.ConfigMapKey); ok {
			return string(k), true
		}
	}
	return "", false
}
