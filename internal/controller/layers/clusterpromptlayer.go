package layers

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/admission"
	"github.com/persona-operator/persona-operator/internal/controller/kube"
)

// ClusterPromptLayerReconciler reports whether each ClusterPromptLayer is
// usable: its template parses and includes nothing, its selectors parse.
type ClusterPromptLayerReconciler struct {
	client.Client
}

// Reads go through the cache: its informers watch (with a streaming initial
// list, WatchList) and never get; list is for API servers that serve no
// streaming lists, where the informers' initial list is a list. Status is
// only patched (kube.PatchStatus).
// +kubebuilder:rbac:groups=prompts.persona-operator.dev,resources=clusterpromptlayers,verbs=list;watch
// +kubebuilder:rbac:groups=prompts.persona-operator.dev,resources=clusterpromptlayers/status,verbs=patch

// Reconcile sets the layer's conditions; status is patched only when it changed.
func (r *ClusterPromptLayerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	var l v1alpha1.ClusterPromptLayer
	if err := r.Get(ctx, req.NamespacedName, &l); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := l.Status.DeepCopy()
	defer func() { kube.PatchStatus(ctx, r.Client, &l, before, &l.Status, &err) }()

	reportValidity(&l, &l.Status.ObservedGeneration, &l.Status.Conditions, admission.ValidateClusterPromptLayer, "the template parses")
	return ctrl.Result{}, nil
}

// SetupWithManager registers the controller.
func (r *ClusterPromptLayerReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.ClusterPromptLayer{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Named("clusterpromptlayer").
		Complete(r)
}
