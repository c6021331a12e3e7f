package controller

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/admission"
	"github.com/persona-operator/persona-operator/internal/status"
)

// ClusterPromptLayerReconciler reports whether each ClusterPromptLayer is
// usable: its template parses and includes nothing, its selectors parse.
type ClusterPromptLayerReconciler struct {
	client.Client
}

// Reads go through the cache: its informers watch (with a streaming initial
// list, WatchList) and never get; list is for API servers that serve no
// streaming lists, where the informers' initial list is a list. Status is
// only patched (patchStatus).
// +kubebuilder:rbac:groups=prompts.persona-operator.dev,resources=clusterpromptlayers,verbs=list;watch
// +kubebuilder:rbac:groups=prompts.persona-operator.dev,resources=clusterpromptlayers/status,verbs=patch

// Reconcile sets the layer's conditions; status is patched only when it changed.
func (r *ClusterPromptLayerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	var l v1alpha1.ClusterPromptLayer
	if err := r.Get(ctx, req.NamespacedName, &l); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := l.Status.DeepCopy()
	defer func() { patchStatus(ctx, r.Client, &l, before, &l.Status, &err) }()

	l.Status.ObservedGeneration = l.Generation
	if problem := checkClusterLayer(&l); problem != nil {
		// Only an edit of the layer can fix it: stalled at once.
		status.MarkFailed(&l.Status.Conditions, l.Generation,
			status.Failure{Reason: v1alpha1.TemplateInvalidReason, Message: problem.Error()}, time.Now(), 0)
		return ctrl.Result{}, nil
	}
	status.MarkReady(&l.Status.Conditions, l.Generation, v1alpha1.ValidReason, "the template parses")
	return ctrl.Result{}, nil
}

// checkClusterLayer runs the admission checks on a stored object, which
// may have been stored without them (the webhook down or bypassed).
func checkClusterLayer(l *v1alpha1.ClusterPromptLayer) error {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(l)
	if err != nil {
		return err
	}
	return admission.ValidateClusterPromptLayer(obj).ToAggregate()
}

// SetupWithManager registers the controller.
func (r *ClusterPromptLayerReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.ClusterPromptLayer{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Named("clusterpromptlayer").
		Complete(r)
}
