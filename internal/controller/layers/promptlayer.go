package layers

import (
	"cmp"
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/controller/kube"
	"github.com/persona-operator/persona-operator/internal/resolve"
	"github.com/persona-operator/persona-operator/internal/status"
)

// PromptLayerReconciler reports whether each PromptLayer is usable: its
// template parses and its templateFrom resolves. It reads template sources
// through the reader it shares with the Persona controller, so it is built
// by NewPromptLayerReconciler only.
type PromptLayerReconciler struct {
	client.Client
	Recorder events.EventRecorder
	// configMaps reads the ConfigMaps templateFrom names, and metadata is
	// the template sources' metadata cache it reads them by.
	configMaps *kube.SourceReader
	metadata   client.Reader
	// ReferenceGracePeriod is how long a missing templateFrom ConfigMap is
	// awaited before the layer is stalled; 0 means status.DefaultReferenceGracePeriod.
	ReferenceGracePeriod time.Duration
}

// NewPromptLayerReconciler is the PromptLayer controller; it reads
// templateFrom ConfigMaps through sources, which reads them by the
// template sources' metadata cache sourceMetadata.
func NewPromptLayerReconciler(c client.Client, recorder events.EventRecorder, sources *kube.SourceReader, sourceMetadata client.Reader,
	referenceGracePeriod time.Duration) *PromptLayerReconciler {
	return &PromptLayerReconciler{Client: c, Recorder: recorder, configMaps: sources, metadata: sourceMetadata, ReferenceGracePeriod: referenceGracePeriod}
}

// Status is only patched (kube.PatchStatus).
// +kubebuilder:rbac:groups=prompts.persona-operator.dev,resources=promptlayers/status,verbs=patch

// Reconcile sets the layer's conditions; status is patched only when it
// changed. A missing ConfigMap is awaited, then stalled, as for a Persona.
func (r *PromptLayerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	var l v1alpha1.PromptLayer
	if err := r.Get(ctx, req.NamespacedName, &l); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := l.Status.DeepCopy()
	defer func() { kube.PatchStatus(ctx, r.Client, &l, before, &l.Status, &err) }()

	problem, err := status.CheckLayer(ctx, kube.Lookup{Cached: r.Client, Sources: r.configMaps}, &l)
	if err != nil {
		return ctrl.Result{}, err
	}
	if readTemplateFrom(&l, problem) && r.configMaps.ReadsUnlabelled() {
		r.warnUnlabelled(ctx, &l)
	}
	l.Status.ObservedGeneration = l.Generation
	if problem != nil {
		grace := cmp.Or(r.ReferenceGracePeriod, status.DefaultReferenceGracePeriod)
		return ctrl.Result{RequeueAfter: status.MarkFailed(&l.Status.Conditions, l.Generation, problem.Failure, time.Now(), grace)}, nil
	}
	status.MarkReady(&l.Status.Conditions, l.Generation, v1alpha1.ValidReason, "the template parses")
	return ctrl.Result{}, nil
}

// readTemplateFrom reports whether the layer's template was read from its
// templateFrom ConfigMap.
func readTemplateFrom(l *v1alpha1.PromptLayer, problem *status.LayerProblem) bool {
	return l.Spec.Template == nil && l.Spec.TemplateFrom != nil && (problem == nil || problem.Missing == nil)
}

// UnlabelledTemplateSourceReason is the reason of the Warning Event on a
// PromptLayer whose templateFrom ConfigMap lacks the template-source label,
// read all the same with --template-source-label=warn.
const UnlabelledTemplateSourceReason = "UnlabelledTemplateSource"

// warnUnlabelled warns on l when its templateFrom ConfigMap, just read, is
// not labelled as a template source.
func (r *PromptLayerReconciler) warnUnlabelled(ctx context.Context, l *v1alpha1.PromptLayer) {
	name := l.Spec.TemplateFrom.ConfigMapKeyRef.Name
	m := kube.ConfigMapMetadata()
	if err := r.metadata.Get(ctx, client.ObjectKey{Namespace: l.Namespace, Name: name}, m); err != nil || resolve.IsTemplateSource(m.Labels) {
		return
	}
	ref := resolve.Reference{Kind: v1alpha1.ConfigMapKind, Name: name, By: resolve.Referrer{Kind: resolve.ByLayer, Name: l.Name}, Unlabelled: true}
	r.Recorder.Eventf(l, nil, corev1.EventTypeWarning, UnlabelledTemplateSourceReason, "Read",
		"%s; it is read only because the manager runs with --template-source-label=warn", ref.Problem())
}

// SetupWithManager registers the controller; a ConfigMap change re-checks
// the layers whose templateFrom names it.
func (r *PromptLayerReconciler) SetupWithManager(mgr ctrl.Manager, configMaps cache.Cache) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.PromptLayer{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(kube.WatchConfigMapMetadata(configMaps, handler.TypedEnqueueRequestsFromMapFunc(r.layersReading))).
		Named("promptlayer").
		Complete(r)
}

func (r *PromptLayerReconciler) layersReading(ctx context.Context, obj *metav1.PartialObjectMetadata) []reconcile.Request {
	names := kube.ListNames(ctx, r.Client, &v1alpha1.PromptLayerList{}, obj.GetNamespace(), kube.ReferenceIndex, kube.DependencyKey(v1alpha1.ConfigMapKind, obj.GetName()))
	reqs := make([]reconcile.Request, len(names))
	for i, name := range names {
		reqs[i] = reconcile.Request{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}}
	}
	return reqs
}
