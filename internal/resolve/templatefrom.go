package resolve

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// TemplateFrom reads the template text that layer's templateFrom names,
// from the ConfigMap of that name in namespace. A missing ConfigMap or key
// is not an error but the reference that is missing; err is a failure to
// read. layer.Spec.TemplateFrom must be set.
func TemplateFrom(ctx context.Context, lookup Lookup, namespace string, layer *v1alpha1.PromptLayer) (text string, missing *Reference, err error) {
	ref := layer.Spec.TemplateFrom.ConfigMapKeyRef
	by := Referrer{ByLayer, layer.Name}
	var cm corev1.ConfigMap
	err = lookup.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, &cm)
	switch {
	case apierrors.IsNotFound(err):
		return "", &Reference{Kind: v1alpha1.ConfigMapKind, Name: ref.Name, By: by}, nil
	case err != nil:
		return "", nil, fmt.Errorf("get %s %s/%s: %w", v1alpha1.ConfigMapKind, namespace, ref.Name, err)
	}
	text, ok := cm.Data[ref.Key]
	if !ok {
		return "", &Reference{Kind: v1alpha1.ConfigMapKind, Name: ref.Name, Key: ref.Key, By: by}, nil
	}
	return text, nil, nil
}
