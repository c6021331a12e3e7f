// Package resolve turns a Persona and the objects it references into the
// render input (a render.Bundle): the inheritance chain, the layers, the
// included layers and templateFrom ConfigMaps. It reads objects only through
// Lookup, which both the controller's cache and the CLI's manifest set
// implement, so the operator and kubectl-persona resolve alike.
package resolve

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Lookup reads one object by key (a missing object is a NotFound error,
// apierrors.IsNotFound) and lists the ClusterPromptLayers.
// controller-runtime's client.Reader satisfies it.
type Lookup interface {
	Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error
	List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error
}
