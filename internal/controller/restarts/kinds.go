package restarts

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Workload kinds, as the restarts name them.
const (
	deploymentKind  = "Deployment"
	statefulSetKind = "StatefulSet"
	daemonSetKind   = "DaemonSet"
	// rolloutKind is Argo Rollouts' Rollout: a restart changes its pod
	// template, and its own strategy (canary steps, analysis, blue-green)
	// rolls the change out.
	rolloutKind = "Rollout"
)

// rolloutGVK is Argo Rollouts' Rollout, read as unstructured objects: the
// operator does not build against Argo Rollouts' API.
var rolloutGVK = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: rolloutKind}

// kinds are the workload kinds the restarts roll out.
func (o Options) kinds() []string {
	out := []string{deploymentKind, statefulSetKind, daemonSetKind}
	if o.Rollouts {
		out = append(out, rolloutKind)
	}
	return out
}

// gvkOf is the group, version and kind of a workload kind.
func gvkOf(kind string) schema.GroupVersionKind {
	if kind == rolloutKind {
		return rolloutGVK
	}
	return appsv1.SchemeGroupVersion.WithKind(kind)
}

// newWorkload is an empty object of kind, nil for an unknown kind.
func newWorkload(kind string) client.Object {
	switch kind {
	case deploymentKind:
		return &appsv1.Deployment{}
	case statefulSetKind:
		return &appsv1.StatefulSet{}
	case daemonSetKind:
		return &appsv1.DaemonSet{}
	case rolloutKind:
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(rolloutGVK)
		return u
	}
	return nil
}

// newWorkloadList is an empty list of kind, nil for an unknown kind.
func newWorkloadList(kind string) client.ObjectList {
	switch kind {
	case deploymentKind:
		return &appsv1.DeploymentList{}
	case statefulSetKind:
		return &appsv1.StatefulSetList{}
	case daemonSetKind:
		return &appsv1.DaemonSetList{}
	case rolloutKind:
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(rolloutGVK.GroupVersion().WithKind(rolloutKind + "List"))
		return l
	}
	return nil
}

// listWorkloads lists the objects of kind through c.
func listWorkloads(ctx context.Context, c client.Reader, kind string, opts ...client.ListOption) ([]client.Object, error) {
	l := newWorkloadList(kind)
	if l == nil {
		return nil, fmt.Errorf("unknown kind %s", kind)
	}
	if err := c.List(ctx, l, opts...); err != nil {
		return nil, err
	}
	items, err := apimeta.ExtractList(l)
	if err != nil {
		return nil, err
	}
	out := make([]client.Object, 0, len(items))
	for _, item := range items {
		if obj, ok := item.(client.Object); ok {
			out = append(out, obj)
		}
	}
	return out, nil
}

// rolloutVerbs are what the restarts do with Rollouts: watch them (list,
// watch), read one (get) and apply a restart (patch).
var rolloutVerbs = []string{"get", "list", "watch", "patch"}

// RolloutsRestartable reports whether Argo Rollouts' Rollouts can be
// restart targets: their API is served, and the manager may get, list,
// watch and patch them (the restart-workloads component grants it). It is
// decided once, at start: Argo Rollouts installed later takes a restart of
// the manager. why says what is missing.
func RolloutsRestartable(ctx context.Context, cfg *rest.Config) (ok bool, why string, err error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return false, "", err
	}
	resources, err := cs.Discovery().ServerResourcesForGroupVersion(rolloutGVK.GroupVersion().String())
	if apierrors.IsNotFound(err) {
		return false, "Argo Rollouts' CRDs are not installed", nil
	}
	if err != nil {
		return false, "", fmt.Errorf("discover %s: %w", rolloutGVK.GroupVersion(), err)
	}
	if !slices.ContainsFunc(resources.APIResources, func(r metav1.APIResource) bool { return r.Name == "rollouts" }) {
		return false, "Argo Rollouts' Rollout CRD is not installed", nil
	}
	for _, verb := range rolloutVerbs {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Group: rolloutGVK.Group, Resource: "rollouts", Verb: verb},
		}}
		review, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return false, "", fmt.Errorf("may the manager %s Rollouts: %w", verb, err)
		}
		if !review.Status.Allowed {
			return false, fmt.Sprintf("the manager may not %s rollouts.argoproj.io: install this version's restart-workloads component", verb), nil
		}
	}
	return true, "", nil
}
