package resolve

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// IsTemplateSource reports whether a ConfigMap with these labels may be
// read through templateFrom: it carries v1alpha1.TemplateSourceLabel "true".
func IsTemplateSource(labels map[string]string) bool {
	return labels[v1alpha1.TemplateSourceLabel] == "true"
}

// ConfigMapKey is the GetOption with which TemplateFrom reads a ConfigMap:
// the key it needs, so that a Lookup may hold that key alone. Other
// readers ignore it.
type ConfigMapKey string

// ApplyToGet sets nothing: the key is for the Lookup that looks for it.
func (ConfigMapKey) ApplyToGet(*client.GetOptions) {}

// UnlabelledSources is implemented by a Lookup that reads templateFrom
// ConfigMaps without TemplateSourceLabel all the same, when it returns
// true: the manager's --template-source-label=warn, for a migration. Any
// other Lookup requires the label.
type UnlabelledSources interface {
	ReadsUnlabelledSources() bool
}

// TemplateFrom reads the template text that layer's templateFrom names,
// from the ConfigMap of that name in namespace. A missing ConfigMap or key,
// or a ConfigMap without TemplateSourceLabel, is not an error but the
// reference that is missing (Reference.Problem says which); err is a
// failure to read. layer.Spec.TemplateFrom must be set.
func TemplateFrom(ctx context.Context, lookup Lookup, namespace string, layer *v1alpha1.PromptLayer) (text string, missing *Reference, err error) {
	ref := layer.Spec.TemplateFrom.ConfigMapKeyRef
	by := Referrer{ByLayer, layer.Name}
	var cm corev1.ConfigMap
	err = lookup.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, &cm, ConfigMapKey(ref.Key))
	switch {
	case apierrors.IsNotFound(err):
		return "", &Reference{Kind: v1alpha1.ConfigMapKind, Name: ref.Name, By: by}, nil
	case err != nil:
		return "", nil, fmt.Errorf("get %s %s/%s: %w", v1alpha1.ConfigMapKind, namespace, ref.Name, err)
	}
	if !IsTemplateSource(cm.Labels) && !readsUnlabelled(lookup) {
		return "", &Reference{Kind: v1alpha1.ConfigMapKind, Name: ref.Name, By: by, Unlabelled: true}, nil
	}
	text, ok := cm.Data[ref.Key]
	if !ok {
		return "", &Reference{Kind: v1alpha1.ConfigMapKind, Name: ref.Name, Key: ref.Key, By: by}, nil
	}
	return text, nil, nil
}

func readsUnlabelled(lookup Lookup) bool {
	u, ok := lookup.(UnlabelledSources)
	return ok && u.ReadsUnlabelledSources()
}
