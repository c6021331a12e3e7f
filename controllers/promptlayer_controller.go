package controllers

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/render"
	"github.com/persona-operator/persona-operator/internal/resolve"
)

// PromptLayerReconciler reports whether each PromptLayer is usable: its
// template parses and its templateFrom resolves.
type PromptLayerReconciler struct {
	client.Client
	// APIReader reads what the cache trims; nil reads the cache only.
	APIReader client.Reader
}

// +kubebuilder:rbac:groups=prompts.persona-operator.dev,resources=promptlayers/status,verbs=get;update;patch

// Reconcile sets the layer's Ready condition; status is patched only when it changed.
func (r *PromptLayerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	var l v1alpha1.PromptLayer
	if err := r.Get(ctx, req.NamespacedName, &l); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := l.Status.DeepCopy()
	defer func() { patchStatus(ctx, r.Client, &l, before, &l.Status, &err) }()

	ready := metav1.Condition{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonValid, ObservedGeneration: l.Generation}
	switch text, reason, problem, err := r.template(ctx, &l); {
	case err != nil:
		return ctrl.Result{}, err
	case problem != "":
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, reason, problem
	default:
		if checkErr := render.Default().Check(render.KindLayer, l.Name, text); checkErr != nil {
			ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, ReasonTemplateInvalid, checkErr.Error()
		} else {
			ready.Message = "the template parses"
		}
	}
	l.Status.ObservedGeneration = l.Generation
	meta.SetStatusCondition(&l.Status.Conditions, ready)
	return ctrl.Result{}, nil
}

// template returns the layer's template text, or the reason and problem
// that keep it from having one.
func (r *PromptLayerReconciler) template(ctx context.Context, l *v1alpha1.PromptLayer) (text, reason, problem string, err error) {
	switch {
	case l.Spec.Template != nil:
		return *l.Spec.Template, "", "", nil
	case l.Spec.TemplateFrom == nil:
		return "", "", "", nil // a disable layer without a template
	}
	text, missing, err := resolve.TemplateFrom(ctx, untrimmed{cached: r.Client, live: r.APIReader}, l.Namespace, l)
	switch {
	case err != nil:
		return "", "", "", err
	case missing != nil:
		return "", ReasonReferenceNotFound, missing.String() + " not found", nil
	}
	return text, "", "", nil
}

// SetupWithManager registers the controller; a ConfigMap change re-checks
// the layers whose templateFrom names it.
func (r *PromptLayerReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.PromptLayer{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.layersReading)).
		Named("promptlayer").
		Complete(r)
}

func (r *PromptLayerReconciler) layersReading(ctx context.Context, obj client.Object) []reconcile.Request {
	var list v1alpha1.PromptLayerList
	if err := r.List(ctx, &list, client.InNamespace(obj.GetNamespace()), client.MatchingFields{templateFromIndex: obj.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list PromptLayers reading ConfigMap", "name", obj.GetName())
		return nil
	}
	reqs := make([]reconcile.Request, len(list.Items))
	for i, l := range list.Items {
		reqs[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&l)}
	}
	return reqs
}
