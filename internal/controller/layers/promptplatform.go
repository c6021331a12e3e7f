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

// PromptPlatformReconciler reports whether the PromptPlatform is usable:
// every section template parses (promptplatforms.md#conditions).
type PromptPlatformReconciler struct {
	client.Client
}

// Reads go through the cache, as a ClusterPromptLayer's do; status is only
// patched (patchStatus).
// +kubebuilder:rbac:groups=prompts.persona-operator.dev,resources=promptplatforms,verbs=list;watch
// +kubebuilder:rbac:groups=prompts.persona-operator.dev,resources=promptplatforms/status,verbs=patch

// Reconcile sets the platform's conditions; status is patched only when it changed.
func (r *PromptPlatformReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	var pp v1alpha1.PromptPlatform
	if err := r.Get(ctx, req.NamespacedName, &pp); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := pp.Status.DeepCopy()
	defer func() { kube.PatchStatus(ctx, r.Client, &pp, before, &pp.Status, &err) }()

	reportValidity(&pp, &pp.Status.ObservedGeneration, &pp.Status.Conditions, admission.ValidatePromptPlatform, "every section template parses")
	return ctrl.Result{}, nil
}

// SetupWithManager registers the controller.
func (r *PromptPlatformReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.PromptPlatform{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Named("promptplatform").
		Complete(r)
}
