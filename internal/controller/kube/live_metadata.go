package kube

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// LiveMetadata reads the metadata of the object of kind gvk named key from
// live (the API server) by listing it by name: the manager's rights on
// this API's kinds are list and watch, never get. An object the API server
// does not hold is a NotFound error, as a get's would be.
func LiveMetadata(ctx context.Context, live client.Reader, gvk schema.GroupVersionKind, key client.ObjectKey) (*metav1.PartialObjectMetadata, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	opts := []client.ListOption{client.MatchingFields{"metadata.name": key.Name}}
	name := key.Name // as errors name it
	if key.Namespace != "" {
		opts = append(opts, client.InNamespace(key.Namespace))
		name = key.String()
	}
	if err := live.List(ctx, list, opts...); err != nil {
		return nil, fmt.Errorf("list %s %s by name: %w", gvk.Kind, name, err)
	}
	for i := range list.Items {
		if m := &list.Items[i]; m.Name == key.Name && m.Namespace == key.Namespace {
			return m, nil
		}
	}
	resource, _ := meta.UnsafeGuessKindToResource(gvk)
	return nil, apierrors.NewNotFound(resource.GroupResource(), key.Name)
}
