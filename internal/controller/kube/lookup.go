package kube

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/internal/resolve"
)

// Lookup is what the controllers resolve through (resolve.Lookup): the
// manager's cache, and for ConfigMaps the template sources. With Reads set,
// it tells Reads what it read.
type Lookup struct {
	Cached  client.Reader
	Sources *SourceReader
	Reads   ReadLog
}

// ReadLog is told what a Lookup reads: the Persona controller logs the
// inputs of a resolve so.
type ReadLog interface {
	// Read is told of an object read by name.
	Read(obj client.Object)
	// Missing is told that the object of obj's kind named key was not found.
	Missing(obj client.Object, key client.ObjectKey)
	// ReadList is told of the objects of a list read.
	ReadList(list client.ObjectList) error
}

// ReadsUnlabelledSources tells resolve whether unlabelled templateFrom
// ConfigMaps are read (--template-source-label=warn).
func (l Lookup) ReadsUnlabelledSources() bool { return l.Sources.unlabelled }

func (l Lookup) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := l.get(ctx, key, obj, opts...)
	if l.Reads != nil {
		switch {
		case err == nil:
			l.Reads.Read(obj)
		case apierrors.IsNotFound(err):
			l.Reads.Missing(obj, key)
		}
	}
	return err
}

func (l Lookup) get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if cm, ok := obj.(*corev1.ConfigMap); ok {
		dataKey, hasKey := configMapKey(opts)
		return l.Sources.Get(ctx, key, cm, dataKey, hasKey)
	}
	return l.Cached.Get(ctx, key, obj, opts...)
}

// List reads the cache without copying its objects: the resolver only
// reads them, and it lists the ClusterPromptLayers on every render.
func (l Lookup) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := l.Cached.List(ctx, list, append(opts, client.UnsafeDisableDeepCopy)...); err != nil {
		return err
	}
	if l.Reads != nil {
		return l.Reads.ReadList(list)
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
