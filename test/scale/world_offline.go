package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/render"
	"github.com/persona-operator/persona-operator/internal/resolve"
	"github.com/persona-operator/persona-operator/internal/status"
)

// offline resolves and renders personas without a cluster, from the objects
// it holds, exactly as the controller does from its cache.
type offline struct {
	objs map[string]client.Object
}

func newOffline(objs ...client.Object) *offline {
	o := &offline{objs: map[string]client.Object{}}
	for _, obj := range objs {
		o.objs[offlineKey(obj, client.ObjectKeyFromObject(obj))] = obj
	}
	return o
}

func offlineKey(obj client.Object, k client.ObjectKey) string {
	return fmt.Sprintf("%T/%s", obj, k)
}

// List implements resolve.Lookup: the ClusterPromptLayers it holds, in
// name order, each a copy.
func (o *offline) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	l, ok := list.(*v1alpha1.ClusterPromptLayerList)
	if !ok {
		return fmt.Errorf("list of %T is not supported offline", list)
	}
	l.Items = nil
	for _, obj := range o.objs {
		if cpl, ok := obj.(*v1alpha1.ClusterPromptLayer); ok {
			l.Items = append(l.Items, *cpl.DeepCopy())
		}
	}
	slices.SortFunc(l.Items, func(a, b v1alpha1.ClusterPromptLayer) int { return cmp.Compare(a.Name, b.Name) })
	return nil
}

// Get implements resolve.Lookup.
func (o *offline) Get(_ context.Context, k client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	src, ok := o.objs[offlineKey(obj, k)]
	if !ok {
		return apierrors.NewNotFound(corev1.Resource("object"), k.Name)
	}
	raw, err := json.Marshal(src)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, obj)
}

// rendered is what the controller would write for one persona.
type rendered struct {
	configMap *corev1.ConfigMap
	status    v1alpha1.PersonaStatus
	// note is the Rendered Event's.
	note string
}

// render renders p as the controller would: its ConfigMap (without owner)
// and its status.
func (o *offline) render(p *v1alpha1.Persona) (*rendered, error) {
	res, err := resolve.Resolve(context.Background(), o, p)
	if err != nil {
		return nil, fmt.Errorf("resolve %s offline: %w", p.Name, err)
	}
	out, err := render.Default().ConfigMap(res.Bundle)
	if err != nil {
		return nil, fmt.Errorf("render %s offline: %w", p.Name, err)
	}
	// The status and Event the controller writes, for generation 1.
	q := p.DeepCopy()
	q.Generation = 1
	q.Status = v1alpha1.PersonaStatus{ObservedGeneration: 1, Dependencies: res.Dependencies}
	status.SetRendered(q, status.RenderOf(out))
	return &rendered{configMap: delivery.ConfigMap(p.Name, p.Namespace, out), status: q.Status, note: status.RenderedNote(q, out)}, nil
}
