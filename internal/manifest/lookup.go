package manifest

import (
	"context"
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/admission"
)

// Get implements resolve.Lookup: it decodes the object of obj's kind under
// key into obj. A missing object is a NotFound error.
func (s *Set) Get(_ context.Context, k client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	var kind string
	var gr schema.GroupResource
	switch obj.(type) {
	case *v1alpha1.Persona:
		kind, gr = v1alpha1.PersonaKind, v1alpha1.GroupVersion.WithResource("personas").GroupResource()
	case *v1alpha1.PromptLayer:
		kind, gr = v1alpha1.PromptLayerKind, v1alpha1.GroupVersion.WithResource("promptlayers").GroupResource()
	case *v1alpha1.ClusterPromptLayer:
		kind, gr = v1alpha1.ClusterPromptLayerKind, v1alpha1.GroupVersion.WithResource("clusterpromptlayers").GroupResource()
	case *v1alpha1.PromptPlatform:
		kind, gr = v1alpha1.PromptPlatformKind, v1alpha1.GroupVersion.WithResource("promptplatforms").GroupResource()
	case *corev1.ConfigMap:
		kind, gr = v1alpha1.ConfigMapKind, corev1.Resource("configmaps")
	case *corev1.Namespace:
		kind, gr = v1alpha1.NamespaceKind, corev1.Resource("namespaces")
	default:
		return fmt.Errorf("manifest: lookup of %T is not supported", obj)
	}
	o := s.Find(kind, k.Namespace, k.Name)
	if o == nil {
		return apierrors.NewNotFound(gr, k.Name)
	}
	return o.Decode(obj)
}

// List implements resolve.Lookup for the ClusterPromptLayers among the
// manifests, in name order.
func (s *Set) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	l, ok := list.(*v1alpha1.ClusterPromptLayerList)
	if !ok {
		return fmt.Errorf("manifest: list of %T is not supported", list)
	}
	l.Items = nil
	for _, o := range s.Sorted(v1alpha1.ClusterPromptLayerKind) {
		var c v1alpha1.ClusterPromptLayer
		if err := o.Decode(&c); err != nil {
			return err
		}
		l.Items = append(l.Items, c)
	}
	return nil
}

// Decode converts the raw object into a typed one (such as
// *v1alpha1.Persona) and sets its namespace when the manifest has none.
func (o *Object) Decode(obj client.Object) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.decoded != nil && reflect.TypeOf(o.decoded) == reflect.TypeOf(obj) {
		reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(o.decoded.DeepCopyObject()).Elem())
		return nil
	}
	if err := o.decode(obj); err != nil {
		return err
	}
	o.decoded = obj.DeepCopyObject().(client.Object)
	return nil
}

func (o *Object) decode(obj client.Object) error {
	if errs := admission.Decode(nil, o.Raw, obj, false); len(errs) > 0 {
		return &InvalidError{Object: o, Errs: errs}
	}
	obj.SetNamespace(o.Namespace)
	return nil
}
