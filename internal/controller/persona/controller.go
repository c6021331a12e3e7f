package persona

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/controller/kube"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/fairshare"
	"github.com/persona-operator/persona-operator/internal/render"
	"github.com/persona-operator/persona-operator/internal/status"
)

// reconciler renders each Persona into its ConfigMap (personas.md#composition, #delivery and #conditions).
// It holds state between reconciles (its stores), so it is built by
// newReconciler only.
type reconciler struct {
	client.Client
	Scheme   *runtime.Scheme
	Recorder events.EventRecorder
	// APIReader reads the Persona's ConfigMap when the cache does not hold
	// it: the label the cache selects by was taken off, or another owner's
	// ConfigMap has its name.
	APIReader client.Reader
	// MaxConcurrentReconciles is the number of workers; 0 means 1.
	MaxConcurrentReconciles int
	// ReferenceGracePeriod is how long a missing reference is awaited
	// before the Persona is stalled; 0 means status.DefaultReferenceGracePeriod.
	ReferenceGracePeriod time.Duration
	// GuardrailDeadline is how long new ClusterPromptLayers wait for a
	// render in time before they are delivered alone; 0 means
	// DefaultGuardrailDeadline.
	GuardrailDeadline time.Duration

	// gate admits the renders (render_gate.go); nil renders at once.
	gate *fairshare.Gate
	// parked are the reconciles the gate turned away, until their
	// namespace has room; queue is the controller's, they go back to.
	parked *fairshare.Parked[types.NamespacedName]
	queue  atomic.Pointer[priorityqueue.PriorityQueue[reconcile.Request]]
	// renderConfigMap renders a bundle's ConfigMap (the render engine).
	renderConfigMap renderFunc
	// guardrailsWaiting is when each Persona's new guardrails began to wait
	// for a render in time.
	guardrailsWaiting *guardrailsWaiting
	// writes is what each Persona's ConfigMap holds, at the version the
	// controller last wrote or read.
	writes *ownWrites
	// configMapMetadata is the metadata of the operator's ConfigMaps but
	// the snapshots (those are in the cache of the snapshots).
	configMapMetadata client.Reader
	// deferred is the renders of a fan-out whose status waits for its pass.
	deferred *deferredStatuses
	// configMapWriter writes the ConfigMaps.
	configMapWriter kube.ConfigMapWrites
	// waiting is what each Persona's last render found missing.
	waiting *awaiting
	// overruns counts each Persona's renders in a row out of wall time.
	overruns *overruns
	// configMaps reads the ConfigMaps templateFrom names.
	configMaps *kube.SourceReader
	// revisions keeps the delivered revisions' snapshots; prunes finishes
	// its prunes off the workers.
	revisions RevisionStore
	prunes    *backgroundPrunes
	// halts are the RolloutHalted conditions the restarts decide, which
	// this controller writes with the rest of the status.
	halts *RolloutHalts
	// stores are the stores above that hold an entry per Persona, which
	// forget drops.
	stores []personaStore
}

// personaStore is a store of the Persona controller that holds an entry
// per Persona, until the Persona is gone.
type personaStore interface {
	// forgetPersona drops what the store holds about persona.
	forgetPersona(persona types.NamespacedName)
}

// options tune the Persona controller (Config).
type options struct {
	// Workers is the number of concurrent reconciles; 0 means 1.
	Workers int
	// ReferenceGracePeriod is how long a missing reference is awaited
	// before the Persona is stalled; 0 means status.DefaultReferenceGracePeriod.
	ReferenceGracePeriod time.Duration
	// GuardrailDeadline is how long new ClusterPromptLayers wait for a
	// render in time; 0 means DefaultGuardrailDeadline.
	GuardrailDeadline time.Duration
	// Gate admits the renders to the CPUs (newRenderGate); nil renders at once.
	Gate *fairshare.Gate
	// Revisions keeps the revisions' snapshots.
	Revisions RevisionStore
	// Halts are the RolloutHalted conditions the restarts decide; nil, a
	// store of the controller's own that nothing sets.
	Halts *RolloutHalts
}

// newReconciler is the Persona controller with empty stores. It
// reads Personas and PromptLayers through c (the manager's cache), its own
// ConfigMaps' metadata through ownConfigMaps and, when that is not enough,
// through live (the API server), template sources through sources, and
// writes ConfigMaps through writer.
func newReconciler(c client.Client, scheme *runtime.Scheme, recorder events.EventRecorder, live, ownConfigMaps client.Reader,
	sources *kube.SourceReader, writer kube.ConfigMapWrites, opts options) *reconciler {
	r := &reconciler{
		Client:                  c,
		Scheme:                  scheme,
		Recorder:                recorder,
		APIReader:               live,
		MaxConcurrentReconciles: opts.Workers,
		ReferenceGracePeriod:    opts.ReferenceGracePeriod,
		GuardrailDeadline:       opts.GuardrailDeadline,
		gate:                    opts.Gate,
		renderConfigMap:         render.Default().ConfigMapBy,
		guardrailsWaiting:       newGuardrailsWaiting(),
		revisions:               opts.Revisions,
		prunes:                  newBackgroundPrunes(prunesPerWorker * opts.Workers),
		halts:                   opts.Halts,
		writes:                  newOwnWrites(),
		configMapMetadata:       ownConfigMaps,
		deferred:                newDeferredStatuses(),
		configMapWriter:         writer,
		waiting:                 newAwaiting(),
		overruns:                newOverruns(),
		configMaps:              sources,
	}
	if r.halts == nil {
		r.halts = NewRolloutHalts()
	}
	if r.gate != nil {
		r.parked = fairshare.NewParked(r.gate, parkClasses, r.unpark)
	}
	r.stores = []personaStore{r.writes, r.deferred, r.waiting, r.overruns, r.halts, r.guardrailsWaiting}
	return r
}

// The rights are exactly the requests the manager makes (test/install's
// TestManagerRBACIsWhatItUses records them):
//   - Personas and PromptLayers are read from the cache: its informers watch,
//     with a streaming initial list (WatchList); list is held for API servers
//     that serve no streaming lists, where the initial list is a list.
//   - Status is only patched (kube.PatchStatus); its RolloutHalted condition
//     too, as the restarts decide it (RolloutHalts).
//   - personas/finalizers update is no request: the admission plugin
//     OwnerReferencesPermissionEnforcement checks it when a ConfigMap's owner
//     reference sets blockOwnerDeletion.
//   - ConfigMaps: watched by metadata (list as above), read by name (get),
//     created and updated whole (kube.ConfigMapWriter), never patched; deleted
//     only when a snapshot is pruned.
//   - Events: created, and patched when the recorder sends a repeated Event
//     as a series.
// +kubebuilder:rbac:groups=prompts.persona-operator.dev,resources=personas,verbs=list;watch
// +kubebuilder:rbac:groups=prompts.persona-operator.dev,resources=personas/status,verbs=patch
// +kubebuilder:rbac:groups=prompts.persona-operator.dev,resources=personas/finalizers,verbs=update
// +kubebuilder:rbac:groups=prompts.persona-operator.dev,resources=promptlayers,verbs=list;watch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// outcome is what one render attempt came to.
type outcome struct {
	// reason is the Ready reason: Rendered or a failure of personas.md#conditions.
	reason  string
	message string
	// output is the render, and render what the status tells of it. When
	// a fan-out's status pass reports the render its delivery wrote, only
	// render is set.
	output *render.Output
	render status.Render
	// inputs are what the render read.
	inputs inputs
	// delivered is set when the ConfigMap is known to hold the render.
	delivered bool
	// retryAfter is set for a render that ran out of wall time and is
	// tried again by itself.
	retryAfter time.Duration
	// outOfTime is set for a render that ran out of wall time, alone too.
	outOfTime bool
	// budgetEnd is when the reconcile's render budget (MaxPersonaDuration
	// from the render's start) ends: a pinned revision's re-render is
	// charged to what is left of it.
	budgetEnd time.Time
	// wrote is set when the ConfigMap was created or updated.
	wrote bool
	// previous is the data an update replaced, for the Rendered Event to
	// say what changed; nil when the ConfigMap was created.
	previous map[string]string
	// guardrails is the identity of the ClusterPromptLayers output was
	// rendered with (delivery.GuardrailsAnnotation).
	guardrails string
	// fallback is set when a failed render delivers output all the same
	// (delivery.FallbackAnnotation).
	fallback string
	// read is the inputs revision.json names.
	read []v1alpha1.RevisionInput
	// revision is the revision the ConfigMap is known to deliver, and
	// written the data a write of this reconcile gave it (for the snapshot).
	revision *v1alpha1.RevisionHistoryEntry
	written  map[string]string
	// pinned is the revision a pin delivers from its snapshot, and base
	// set for a pinned revision re-rendered with the current guardrails.
	pinned *revision
	base   *rebase
}

func failed(reason string, err error) outcome { return outcome{reason: reason, message: err.Error()} }

// Reconcile resolves and renders a Persona, writes its ConfigMap when the
// render changed, and reports the result in status. Status is patched once,
// at the end, and only when it changed; when another object's change
// brought new content, in a later pass (delivery first).
func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, err error) {
	// The cache's own object, which nothing may change: a reconcile parked
	// at the gate reads its class and no more, and only one let in pays for
	// a copy. In a fan-out of one namespace the workers past its share park
	// every reconcile once before it runs.
	var cached v1alpha1.Persona
	if err := r.Get(ctx, req.NamespacedName, &cached, client.UnsafeDisableDeepCopy); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.parked != nil {
		// A namespace whose reconciles hold their share of the workers at
		// the render gate waits, parked, until it has room: the others'
		// get a worker meanwhile.
		place, ok := r.parked.Enter(req.Namespace, req.NamespacedName, r.parkClass(&cached))
		if !ok {
			return ctrl.Result{}, nil
		}
		defer place.Leave()
		ctx = withPlace(ctx, place)
	}
	var p v1alpha1.Persona
	cached.DeepCopyInto(&p)
	p.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind(v1alpha1.PersonaKind))
	before := p.Status.DeepCopy()
	deferStatus := false
	defer func() {
		if held, ok := heldBack(ctx, err); ok {
			result, err, deferStatus = held, nil, true
		}
		if deferStatus {
			return
		}
		r.halts.apply(&p)
		patched := kube.PatchStatus(ctx, r.Client, &p, before, &p.Status, &err)
		if err == nil {
			// Pruning waits until the status names the revision kept.
			err = r.prune(ctx, req, &p, patched)
		}
	}()

	renderStart := time.Now()
	attempt, err := r.tryRender(ctx, &p)
	if err != nil {
		return ctrl.Result{}, err
	}
	pn := pinOf(&p)
	if budget := render.Default().Limits().MaxPersonaDuration; budget > 0 {
		attempt.budgetEnd = renderStart.Add(budget)
	}
	// Before anything is written: snapshots, an AnalysisRun, the ConfigMap.
	if err := r.stillDelivered(ctx, &p); err != nil {
		return ctrl.Result{}, err
	}
	switch {
	case pn.revision > 0:
		if result, done, err := r.reconcilePinned(ctx, &p, before, &pn, attempt); done || err != nil {
			if done {
				r.guardrailsHeld(&p) // a pin delivers its revision with the current guardrails
			}
			r.endCanary(ctx, &p, fmt.Sprintf("pinned to revision %d", pn.revision))
			return result, err
		}
	case p.Spec.Rollout != nil:
		if result, done, err := r.reconcileCanary(ctx, &p, attempt); done || err != nil {
			if done {
				r.guardrailsHeld(&p) // a canary's revisions never wait for guardrails
			}
			return result, err
		}
	default:
		r.endCanary(ctx, &p, "spec.rollout was removed: the latest render is delivered")
	}
	// A canary promoted or ended is the Persona's own news too: its status
	// is never left to a deferred pass, which would not carry it.
	own := ownChange(&p, before) || !equality.Semantic.DeepEqual(before.Canary, p.Status.Canary)
	switch {
	case attempt.reason != v1alpha1.RenderedReason:
		if attempt, err = r.keepGuardrails(ctx, &p, attempt); err != nil {
			return ctrl.Result{}, err
		}
	case !attempt.delivered:
		if attempt, err = r.deliver(ctx, &p, attempt, own); err != nil {
			return ctrl.Result{}, err
		}
	}
	rendered(ctx)
	retryAfter := r.report(&p, before, attempt, own)
	r.reportUnpinned(&p, before, pn)
	if attempt.wrote && !own && attempt.reason == v1alpha1.RenderedReason {
		// In a fan-out the new content's status follows in a pass of low
		// priority, after the ConfigMaps of every dependent; the delay lets
		// the cache see this write first.
		deferStatus = true
		r.deferred.put(ctx, req.NamespacedName, attempt.inputs, attempt.render, *attempt.revision, attempt.written, attempt.guardrails)
		return ctrl.Result{RequeueAfter: statusDelay, Priority: new(statusPriority)}, nil
	}
	if retryAfter, err = r.keepSnapshot(ctx, &p, attempt, retryAfter); err != nil {
		return ctrl.Result{}, err
	}
	if pn.retryAfter > 0 && (retryAfter == 0 || pn.retryAfter < retryAfter) {
		retryAfter = pn.retryAfter
	}
	// Other than a retried render or an awaited reference, a failure waits
	// for a change to the persona or what it reads: the watches bring it back.
	return ctrl.Result{RequeueAfter: retryAfter}, nil
}

// heldBack is the result of a reconcile whose delivery was held back, and
// whether it was: nothing is written, the status neither. From caches
// behind the API server, the watch event that brings them up to date, or
// the retry, renders again; a Persona being deleted is left to its
// deletion.
func heldBack(ctx context.Context, err error) (ctrl.Result, bool) {
	if behind := (*cachesBehindError)(nil); errors.As(err, &behind) {
		log.FromContext(ctx).V(1).Info("delivery held back", "reason", behind.Error())
		return ctrl.Result{RequeueAfter: cachesBehindRetry}, true
	}
	return ctrl.Result{}, errors.Is(err, errBeingDeleted)
}

// A pass that only brings a Persona's status up to date with its delivered
// ConfigMap runs at low priority, after a delay.
const (
	statusPriority = handler.LowPriority
	statusDelay    = time.Second
)

// ownChange reports whether this render is the Persona's own news: its
// first render, the first good render of a generation (one its status has
// not described yet, or that failed so far: a reference its edit named may
// reach the cache after the edit), or a recovery. Any other render is
// caused by another object's change to a Persona that was Ready.
func ownChange(p *v1alpha1.Persona, before *v1alpha1.PersonaStatus) bool {
	return before.ContentHash == "" || before.ObservedGeneration != p.Generation || !renderedBefore(p, before)
}

// renderedBefore reports whether the Persona was Ready at this generation
// before this render.
func renderedBefore(p *v1alpha1.Persona, before *v1alpha1.PersonaStatus) bool {
	ready := meta.FindStatusCondition(before.Conditions, v1alpha1.ReadyCondition)
	return ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == p.Generation
}

// forget drops what the controller holds about a deleted Persona.
func (r *reconciler) forget(key types.NamespacedName) {
	for _, s := range r.stores {
		s.forgetPersona(key)
	}
	if r.parked != nil {
		r.parked.Forget(key)
	}
}

// SetupWithManager registers the controller and the watches that bring a
// Persona back when anything its render reads changes or arrives. The field
// indexes must be registered first (kube.SetupIndexes); own is the cache of
// the operator's ConfigMaps but the snapshots, sourceMetadata that of the
// template sources, snapshots that of the snapshots.
func (r *reconciler) SetupWithManager(mgr ctrl.Manager, own, sourceMetadata cache.Cache, snapshots *kube.SnapshotCache) error {
	specChanged := builder.WithPredicates(predicate.GenerationChangedPredicate{})
	// A Persona's labels select ClusterPromptLayers; its pin annotation
	// changes what is delivered.
	specLabelsOrPinChanged := builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, pinChanged, releaseCommanded))
	// A ConfigMap event of the controller's own write needs no render; a
	// deletion always does, even of a ConfigMap that held the last write.
	changedByOthers := predicate.TypedFuncs[*metav1.PartialObjectMetadata]{
		CreateFunc: func(e event.TypedCreateEvent[*metav1.PartialObjectMetadata]) bool { return !r.writes.holds(e.Object) },
		UpdateFunc: func(e event.TypedUpdateEvent[*metav1.PartialObjectMetadata]) bool {
			return !r.writes.holds(e.ObjectNew)
		},
	}
	// The initial list's ConfigMaps enqueue nothing: the For watch's
	// initial list enqueues every Persona, and a restart at N Personas
	// would otherwise map 3N ConfigMaps to their Personas and queue them
	// again before its first render.
	notInInitialList := predicate.TypedFuncs[*metav1.PartialObjectMetadata]{
		CreateFunc: func(e event.TypedCreateEvent[*metav1.PartialObjectMetadata]) bool { return !e.IsInInitialList },
	}
	owner := handler.TypedEnqueueRequestForOwner[*metav1.PartialObjectMetadata](mgr.GetScheme(), mgr.GetRESTMapper(), &v1alpha1.Persona{}, handler.OnlyControllerOwner())
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Persona{}, specLabelsOrPinChanged).
		WatchesRawSource(source.Kind(own, kube.ConfigMapMetadata(), owner, notInInitialList, changedByOthers)).
		WatchesRawSource(source.Kind(own, kube.ConfigMapMetadata(), handler.TypedEnqueueRequestsFromMapFunc(r.inConflict), notInInitialList)).
		Watches(&v1alpha1.Persona{}, r.propagating(v1alpha1.PersonaKind), specChanged).
		Watches(&v1alpha1.Persona{}, unobservedFirst).
		Watches(&v1alpha1.PromptLayer{}, r.propagating(v1alpha1.PromptLayerKind), specChanged).
		WatchesRawSource(kube.WatchConfigMapMetadata(sourceMetadata, r.configMapPropagating())).
		WatchesRawSource(r.watchClusterLayers(mgr)).
		WatchesRawSource(r.watchNamespaceLabels(mgr)).
		WatchesRawSource(r.watchPlatform(mgr)).
		WatchesRawSource(source.Channel(r.halts.events, &handler.EnqueueRequestForObject{})).
		WatchesRawSource(source.Func(r.keepQueue)).
		WatchesRawSource(snapshotDeletions{snapshots: snapshots, pruned: func(m *delivery.SnapshotMeta) bool { return r.revisions.TakePruned(m.Key()) }}).
		// The priority queue lets the status passes of a fan-out wait
		// behind its deliveries.
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.MaxConcurrentReconciles, 1), UsePriorityQueue: new(true)}).
		Named("persona").
		Complete(r)
}
