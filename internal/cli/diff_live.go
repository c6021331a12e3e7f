package cli

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/promptdiff"
	"github.com/persona-operator/persona-operator/internal/render"
)

// liveSide reads the ConfigMap of each persona of the new side from the
// cluster, one GET each: the operator's render of it. A persona whose
// ConfigMap does not exist is left out, so it shows as added. Only the
// core API is used, so the binary carries no other group's client.
func (o *diffOptions) liveSide(ctx context.Context, personas map[promptdiff.Ref]map[string]string) (map[promptdiff.Ref]map[string]string, error) {
	cfg, err := o.kube.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("--live: the kubeconfig: %w", err)
	}
	core, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("--live: %w", err)
	}
	refs := slices.SortedFunc(maps.Keys(personas), func(a, b promptdiff.Ref) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	live := map[promptdiff.Ref]map[string]string{}
	for _, r := range refs {
		name := delivery.ConfigMapName(r.Name)
		cm, err := core.ConfigMaps(r.Namespace).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("--live: get ConfigMap %s/%s: %w", r.Namespace, name, err)
		}
		// revision.json is the operator's record of the revision, which an
		// offline render has not: it is no difference.
		data := maps.Clone(cm.Data)
		delete(data, render.RevisionKey)
		live[r] = data
	}
	return live, nil
}
