package cli

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/promptdiff"
	"github.com/persona-operator/persona-operator/internal/render"
)

// liveSide reads the ConfigMap of each persona of the new side from the
// cluster, one GET each: the operator's render of it. A persona whose
// ConfigMap does not exist is left out, so it shows as added. notes tell
// of each persona whose ConfigMap a pin holds on another revision than its
// latest, so that the diff is read as against that revision.
func (o *diffOptions) liveSide(ctx context.Context, personas map[promptdiff.Ref]map[string]string) (live map[promptdiff.Ref]map[string]string, notes []string, err error) {
	cfg, err := o.kube.ToRESTConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("--live: the kubeconfig: %w", err)
	}
	core, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("--live: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("--live: %w", err)
	}
	refs := slices.SortedFunc(maps.Keys(personas), func(a, b promptdiff.Ref) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	live = map[promptdiff.Ref]map[string]string{}
	for _, r := range refs {
		name := delivery.ConfigMapName(r.Name)
		cm, err := core.ConfigMaps(r.Namespace).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, nil, fmt.Errorf("--live: get ConfigMap %s/%s: %w", r.Namespace, name, err)
		}
		if note := pinNote(ctx, dyn, r); note != "" {
			notes = append(notes, note)
		}
		// revision.json is the operator's record of the revision, which an
		// offline render has not: it is no difference.
		data := maps.Clone(cm.Data)
		delete(data, render.RevisionKey)
		live[r] = data
	}
	return live, notes, nil
}

// pinNote tells when a pin holds r's ConfigMap on another revision than
// its latest; "" when none does, or the Persona cannot be read (a user
// who may only read ConfigMaps still gets the diff).
func pinNote(ctx context.Context, dyn dynamic.Interface, r promptdiff.Ref) string {
	u, err := dyn.Resource(personasResource).Namespace(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	pinned, _, _ := unstructured.NestedInt64(u.Object, "status", "pinnedRevision")
	current, _, _ := unstructured.NestedInt64(u.Object, "status", "currentRevision")
	latest, _, _ := unstructured.NestedInt64(u.Object, "status", "latestRevision")
	if pinned == 0 || current == latest {
		return ""
	}
	return fmt.Sprintf("persona %s/%s: the live ConfigMap holds revision %d, pinned to revision %d, not the latest revision %d: the diff is against the pinned prompt",
		r.Namespace, r.Name, current, pinned, latest)
}
