package controller

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
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
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/promptdiff"
	"github.com/persona-operator/persona-operator/internal/render"
	"github.com/persona-operator/persona-operator/internal/resolve"
	"github.com/persona-operator/persona-operator/internal/status"
)

// PersonaReconciler renders each Persona into its ConfigMap (personas.md#composition, #delivery and #conditions).
type PersonaReconciler struct {
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

	// writes is what each Persona's ConfigMap holds, at the version the
	// controller last wrote or read.
	writes *ownWrites
	// configMapMetadata is the metadata of the operator's ConfigMaps.
	configMapMetadata client.Reader
	// deferred is the renders of a fan-out whose status waits for its pass.
	deferred *deferredStatuses
	// configMapWriter writes the ConfigMaps.
	configMapWriter *configMapWriter
	// waiting is what each Persona's last render found missing.
	waiting *awaiting
	// overruns counts each Persona's renders in a row out of wall time.
	overruns *overruns
	// configMaps reads the ConfigMaps templateFrom names.
	configMaps *sourceReader
}

// The rights are exactly the requests the manager makes (test/install's
// TestManagerRBACIsWhatItUses records them):
//   - Personas and PromptLayers are read from the cache: its informers watch,
//     with a streaming initial list (WatchList); list is held for API servers
//     that serve no streaming lists, where the initial list is a list.
//   - Status is only patched (patchStatus).
//   - personas/finalizers update is no request: the admission plugin
//     OwnerReferencesPermissionEnforcement checks it when a ConfigMap's owner
//     reference sets blockOwnerDeletion.
//   - ConfigMaps: watched by metadata (list as above), read by name (get),
//     created and updated whole (configMapWriter), never patched nor deleted.
//   - Events: created, and patched when the recorder sends a repeated Event
//     as a series.
// +kubebuilder:rbac:groups=prompts.persona-operator.dev,resources=personas,verbs=list;watch
// +kubebuilder:rbac:groups=prompts.persona-operator.dev,resources=personas/status,verbs=patch
// +kubebuilder:rbac:groups=prompts.persona-operator.dev,resources=personas/finalizers,verbs=update
// +kubebuilder:rbac:groups=prompts.persona-operator.dev,resources=promptlayers,verbs=list;watch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update
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
}

func failed(reason string, err error) outcome { return outcome{reason: reason, message: err.Error()} }

// Reconcile resolves and renders a Persona, writes its ConfigMap when the
// render changed, and reports the result in status. Status is patched once,
// at the end, and only when it changed; when another object's change
// brought new content, in a later pass (delivery first).
func (r *PersonaReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	var p v1alpha1.Persona
	if err := r.Get(ctx, req.NamespacedName, &p); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := p.Status.DeepCopy()
	deferStatus := false
	defer func() {
		if !deferStatus {
			patchStatus(ctx, r.Client, &p, before, &p.Status, &err)
		}
	}()

	attempt, err := r.render(ctx, &p)
	if err != nil {
		return ctrl.Result{}, err
	}
	own := ownChange(&p, before)
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
	retryAfter := r.report(&p, before, attempt, own)
	if attempt.wrote && !own && attempt.reason == v1alpha1.RenderedReason {
		// In a fan-out the new content's status follows in a pass of low
		// priority, after the ConfigMaps of every dependent; the delay lets
		// the cache see this write first.
		deferStatus = true
		r.deferred.put(req.NamespacedName, attempt.inputs, attempt.render)
		return ctrl.Result{RequeueAfter: statusDelay, Priority: new(statusPriority)}, nil
	}
	// Other than a retried render or an awaited reference, a failure waits
	// for a change to the persona or what it reads: the watches bring it back.
	return ctrl.Result{RequeueAfter: retryAfter}, nil
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
func (r *PersonaReconciler) forget(key types.NamespacedName) {
	r.writes.forget(client.ObjectKey{Namespace: key.Namespace, Name: delivery.ConfigMapName(key.Name)})
	r.deferred.take(key)
	r.waiting.set(key, nil)
	r.overruns.reset(key)
}

// render resolves the persona's references and renders its ConfigMap data.
// A spec problem is an outcome; only a failure to read is an error. The
// status pass of a fan-out that reads what the delivery read reports the
// delivered render instead.
func (r *PersonaReconciler) render(ctx context.Context, p *v1alpha1.Persona) (outcome, error) {
	start := time.Now()
	key := client.ObjectKeyFromObject(p)
	deferred, isDeferred := r.deferred.take(key)
	res, in, err := r.resolve(ctx, p)
	p.Status.Dependencies = res.Dependencies
	if err != nil {
		if reason, ok := status.ResolveReason(err); ok {
			return failed(reason, err), nil
		}
		return outcome{}, fmt.Errorf("resolve persona %s: %w", p.Name, err)
	}
	if isDeferred && deferred.inputs == in && r.configMapHolds(ctx, p, deferred.render.Hash) {
		r.overruns.reset(key)
		return outcome{reason: v1alpha1.RenderedReason, render: deferred.render, inputs: in, delivered: true}, nil
	}
	defer func() { renderDuration.Observe(time.Since(start).Seconds()) }()
	out, err := render.Default().ConfigMap(res.Bundle)
	if err != nil && status.OutOfTime(err) {
		o := failed(status.RenderReason(err), err)
		o.retryAfter = r.overruns.add(key, p.Generation, res.Bundle)
		return o, nil
	}
	r.overruns.reset(key)
	if err != nil {
		return failed(status.RenderReason(err), err), nil
	}
	return outcome{reason: v1alpha1.RenderedReason, output: out, render: status.RenderOf(out), inputs: in,
		guardrails: resolve.GuardrailsIdentity(res.Guardrails)}, nil
}

// configMapHolds reports whether p's ConfigMap is controlled by p and
// holds the render of content hash hash.
func (r *PersonaReconciler) configMapHolds(ctx context.Context, p *v1alpha1.Persona, hash string) bool {
	current, currentHash, err := r.currentConfigMap(ctx, client.ObjectKey{Namespace: p.Namespace, Name: delivery.ConfigMapName(p.Name)})
	if err != nil {
		return false
	}
	return controls(p, current) && isCurrent(current, currentHash, delivery.ConfigMap(p.Name, p.Namespace, &render.Output{Hash: hash}))
}

// currentConfigMap is the ConfigMap key as the metadata cache has it, and
// the content hash of its data: known when the controller wrote or read
// that version, read from the API server otherwise (then with its data).
// A ConfigMap with binaryData has no hash, nor has one that no Persona
// controls: its data is none of the controller's business.
func (r *PersonaReconciler) currentConfigMap(ctx context.Context, key client.ObjectKey) (*corev1.ConfigMap, string, error) {
	// The cache's Get returns a copy of its own.
	m := configMapMetadata()
	if err := r.configMapMetadata.Get(ctx, key, m); err != nil {
		return nil, "", err
	}
	if !personasOwn(m) {
		return &corev1.ConfigMap{ObjectMeta: m.ObjectMeta}, "", nil
	}
	if hash, ok := r.writes.hashAt(key, m.ResourceVersion); ok {
		return &corev1.ConfigMap{ObjectMeta: m.ObjectMeta}, hash, nil
	}
	return r.readConfigMap(ctx, key)
}

// readConfigMap reads the ConfigMap key from the API server, and notes the
// content hash of its data at its version.
func (r *PersonaReconciler) readConfigMap(ctx context.Context, key client.ObjectKey) (*corev1.ConfigMap, string, error) {
	var cm corev1.ConfigMap
	if err := r.APIReader.Get(ctx, key, &cm); err != nil {
		return nil, "", err
	}
	hash := ""
	if len(cm.BinaryData) == 0 {
		hash = render.ContentHash(cm.Data)
	}
	r.writes.read(key, cm.ResourceVersion, hash)
	return &cm, hash, nil
}

// rereads bounds how often resolve reads again while references keep
// arriving during one reconcile.
const rereads = 4

// resolve resolves p and records the references it found missing, then
// reads them again: an object that arrived before the record is seen by
// that read, and one that arrives after finds p waiting for it (personas.md#conditions,
// order never matters). It returns what the resolve that counts read.
func (r *PersonaReconciler) resolve(ctx context.Context, p *v1alpha1.Persona) (*resolve.Result, inputs, error) {
	res, in, err := r.resolveOnce(ctx, p)
	for range rereads {
		missing := missingReferences(err)
		r.waiting.set(client.ObjectKeyFromObject(p), awaitedObjects(p.Namespace, missing))
		if len(missing) == 0 {
			return res, in, err
		}
		again, againIn, againErr := r.resolveOnce(ctx, p)
		if slices.Equal(missingReferences(againErr), missing) {
			return res, in, err
		}
		res, in, err = again, againIn, againErr
	}
	return res, in, fmt.Errorf("references of persona %s keep arriving while it resolves; trying again", p.Name)
}

func (r *PersonaReconciler) resolveOnce(ctx context.Context, p *v1alpha1.Persona) (*resolve.Result, inputs, error) {
	reads := newReadLog(p)
	res, err := resolve.Resolve(ctx, lookup{cached: r.Client, configMaps: r.configMaps, reads: reads}, p)
	return res, reads.sum(), err
}

func missingReferences(err error) []resolve.Reference {
	var notFound *resolve.NotFoundError
	if errors.As(err, &notFound) {
		return notFound.Missing
	}
	return nil
}

func awaitedObjects(namespace string, missing []resolve.Reference) []objectRef {
	refs := make([]objectRef, 0, len(missing))
	for _, m := range missing {
		refs = append(refs, objectRef{Kind: m.Kind, Namespace: namespace, Name: m.Name})
	}
	slices.SortFunc(refs, func(a, b objectRef) int { return cmp.Compare(a.Kind+"/"+a.Name, b.Kind+"/"+b.Name) })
	return slices.Compact(refs)
}

// deliver makes persona-<name> hold the render: created when missing,
// updated when it differs, left alone when it is current, and never touched
// when another owner controls it.
func (r *PersonaReconciler) deliver(ctx context.Context, p *v1alpha1.Persona, attempt outcome, announce bool) (outcome, error) {
	desired := delivery.ConfigMap(p.Name, p.Namespace, attempt.output)
	setIfNotEmpty(desired.Annotations, delivery.GuardrailsAnnotation, attempt.guardrails)
	setIfNotEmpty(desired.Annotations, delivery.FallbackAnnotation, attempt.fallback)
	if err := controllerutil.SetControllerReference(p, desired, r.Scheme); err != nil {
		return outcome{}, fmt.Errorf("own ConfigMap: %w", err)
	}
	key := client.ObjectKeyFromObject(desired)
	hash := desired.Annotations[delivery.ContentHashAnnotation]
	current, currentHash, err := r.currentConfigMap(ctx, key)
	if apierrors.IsNotFound(err) {
		switch err = r.write(ctx, key, hash, r.configMapWriter.create, desired); {
		case err == nil:
			attempt.wrote = true
			return attempt, nil
		case !apierrors.IsAlreadyExists(err):
			return outcome{}, fmt.Errorf("create ConfigMap %s: %w", desired.Name, err)
		}
		// It was created since the cache last heard of it.
		current, currentHash, err = r.readConfigMap(ctx, key)
	}
	if err != nil {
		return outcome{}, fmt.Errorf("get ConfigMap %s: %w", desired.Name, err)
	}
	if !controls(p, current) {
		adopted, err := r.adoptOrphan(ctx, p, key)
		if err != nil {
			return outcome{}, err
		}
		if adopted == nil {
			return failed(v1alpha1.ConfigMapConflictReason, fmt.Errorf("ConfigMap %s exists and is not controlled by this Persona; delete or rename it", desired.Name)), nil
		}
		// The adoption is written, whatever the data.
		current, currentHash = adopted, ""
	}
	stale := staleAnnotations(current, desired)
	if isCurrent(current, currentHash, desired) && len(stale) == 0 {
		return attempt, nil
	}
	if announce && currentHash != hash {
		// nil when it cannot be read, which only makes the Event say less.
		attempt.previous, _ = r.configMapData(ctx, current)
	}
	// current is this reconcile's own copy, with all of the metadata: the
	// update replaces the whole ConfigMap.
	current.Data = desired.Data
	current.BinaryData = nil
	for k, v := range desired.Labels {
		metav1.SetMetaDataLabel(&current.ObjectMeta, k, v)
	}
	for k, v := range desired.Annotations {
		metav1.SetMetaDataAnnotation(&current.ObjectMeta, k, v)
	}
	for _, k := range stale {
		delete(current.Annotations, k)
	}
	if err := r.write(ctx, key, hash, r.configMapWriter.update, current); err != nil {
		return outcome{}, fmt.Errorf("update ConfigMap %s: %w", desired.Name, err)
	}
	attempt.wrote = true
	return attempt, nil
}

// write writes cm, of content hash hash, with do, and records the version
// written. When someone else wrote the ConfigMap while the write was under
// way, it fails, for the Persona to be reconciled again.
func (r *PersonaReconciler) write(ctx context.Context, key client.ObjectKey, hash string,
	do func(context.Context, *corev1.ConfigMap) (string, error), cm *corev1.ConfigMap) error {
	r.writes.writing(key, hash)
	version, err := do(ctx, cm)
	if err != nil {
		r.writes.forget(key)
		return err
	}
	if r.writes.wrote(key, version) {
		return fmt.Errorf("ConfigMap %s was also written by someone else before this write's answer came back; reading it again", key.Name)
	}
	return nil
}

// isCurrent reports whether the ConfigMap, whose data has content hash
// currentHash, holds the desired data (compared by the content hash the
// desired ConfigMap carries), labels and annotations; other labels and
// annotations are left to their owners.
func isCurrent(current *corev1.ConfigMap, currentHash string, desired *corev1.ConfigMap) bool {
	if currentHash == "" || currentHash != desired.Annotations[delivery.ContentHashAnnotation] {
		return false
	}
	for k, v := range desired.Labels {
		if current.Labels[k] != v {
			return false
		}
	}
	for k, v := range desired.Annotations {
		if current.Annotations[k] != v {
			return false
		}
	}
	return true
}

func setIfNotEmpty(m map[string]string, key, value string) {
	if value != "" {
		m[key] = value
	}
}

// staleAnnotations are the operator's annotations that current has and
// desired does not: a good render clears a fallback's, a render without
// guardrails their identity.
func staleAnnotations(current, desired *corev1.ConfigMap) []string {
	var stale []string
	for _, k := range delivery.OperatorAnnotations {
		if _, ok := desired.Annotations[k]; ok {
			continue
		}
		if _, ok := current.Annotations[k]; ok {
			stale = append(stale, k)
		}
	}
	return stale
}

// report sets the status and emits Events for what changed (personas.md#conditions),
// and returns when the Persona must be reconciled again by itself: a render
// out of wall time is retried, an awaited reference becomes stalled. A
// failure keeps the last good render's fields: the ConfigMap still holds it.
func (r *PersonaReconciler) report(p *v1alpha1.Persona, before *v1alpha1.PersonaStatus, attempt outcome, own bool) time.Duration {
	st := &p.Status
	st.ObservedGeneration = p.Generation
	previous := meta.FindStatusCondition(before.Conditions, v1alpha1.ReadyCondition)
	if attempt.reason == v1alpha1.RenderedReason {
		status.SetRendered(p, attempt.render)
		// One Event per change of the ConfigMap's content that is the
		// Persona's own news: a reconcile that read a stale Persona from
		// the cache writes nothing and tells nothing, and a change another
		// object caused is told on that object (Propagated). The note also
		// says what the render changed, so that kubectl describe persona
		// answers what an edit did. A write comes from a render's output.
		if own && attempt.wrote && before.ContentHash != attempt.render.Hash {
			out := attempt.output
			change := promptdiff.Changes(attempt.previous, before.Sections, out)
			r.Recorder.Eventf(p, nil, corev1.EventTypeNormal, v1alpha1.RenderedReason, "Render", "%s: %s", status.RenderedNote(p, out), change)
		}
		return 0
	}
	renderFailures.WithLabelValues(attempt.reason).Inc()
	if attempt.output != nil {
		// The guardrails were delivered all the same: the status tells
		// what the ConfigMap now holds.
		status.SetDelivered(p, attempt.render)
	}
	f := status.Failure{Reason: attempt.reason, Message: attempt.message, Retrying: attempt.retryAfter > 0}
	now := time.Now()
	awaitFor := status.MarkFailed(&st.Conditions, p.Generation, f, now, r.gracePeriod())
	if attempt.reason == v1alpha1.ConfigMapConflictReason {
		awaitFor = conflictRecheck(st.Conditions, now)
	}
	// The condition holds the message cut: so is it compared.
	if previous == nil || previous.Reason != attempt.reason || previous.Message != status.Cut(attempt.message, status.MaxConditionMessage) {
		r.Recorder.Eventf(p, nil, corev1.EventTypeWarning, attempt.reason, "Render", "%s", attempt.message)
	}
	return max(attempt.retryAfter, awaitFor)
}

func (r *PersonaReconciler) gracePeriod() time.Duration {
	return cmp.Or(r.ReferenceGracePeriod, status.DefaultReferenceGracePeriod)
}

// SetupWithManager registers the controller and the watches that bring a
// Persona back when anything its render reads changes or arrives. The field
// indexes must be registered first (Setup does both).
func (r *PersonaReconciler) SetupWithManager(mgr ctrl.Manager, own, sourceMetadata cache.Cache, sources *sourceReader) error {
	r.writes, r.deferred, r.waiting, r.overruns, r.configMaps = newOwnWrites(), newDeferredStatuses(), newAwaiting(), newOverruns(), sources
	r.configMapMetadata = own
	var err error
	if r.configMapWriter, err = newConfigMapWriter(mgr.GetConfig(), mgr.GetHTTPClient()); err != nil {
		return err
	}
	specChanged := builder.WithPredicates(predicate.GenerationChangedPredicate{})
	// A Persona's labels select ClusterPromptLayers.
	specOrLabelsChanged := builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}))
	// A ConfigMap event of the controller's own write needs no render; a
	// deletion always does, even of a ConfigMap that held the last write.
	changedByOthers := predicate.TypedFuncs[*metav1.PartialObjectMetadata]{
		CreateFunc: func(e event.TypedCreateEvent[*metav1.PartialObjectMetadata]) bool { return !r.writes.holds(e.Object) },
		UpdateFunc: func(e event.TypedUpdateEvent[*metav1.PartialObjectMetadata]) bool {
			return !r.writes.holds(e.ObjectNew)
		},
	}
	owner := handler.TypedEnqueueRequestForOwner[*metav1.PartialObjectMetadata](mgr.GetScheme(), mgr.GetRESTMapper(), &v1alpha1.Persona{}, handler.OnlyControllerOwner())
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Persona{}, specOrLabelsChanged).
		WatchesRawSource(source.Kind(own, configMapMetadata(), owner, changedByOthers)).
		WatchesRawSource(watchConfigMapMetadata(own, handler.TypedEnqueueRequestsFromMapFunc(r.inConflict))).
		Watches(&v1alpha1.Persona{}, r.propagating(v1alpha1.PersonaKind), specChanged).
		Watches(&v1alpha1.Persona{}, unobservedFirst).
		Watches(&v1alpha1.PromptLayer{}, r.propagating(v1alpha1.PromptLayerKind), specChanged).
		WatchesRawSource(watchConfigMapMetadata(sourceMetadata, r.configMapPropagating())).
		WatchesRawSource(r.watchClusterLayers(mgr)).
		WatchesRawSource(r.watchNamespaceLabels(mgr)).
		// The priority queue lets the status passes of a fan-out wait
		// behind its deliveries.
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.MaxConcurrentReconciles, 1), UsePriorityQueue: new(true)}).
		Named("persona").
		Complete(r)
}

// inConflict enqueues the Persona whose ConfigMap name obj has when a
// Persona does not control it.
func (r *PersonaReconciler) inConflict(_ context.Context, obj *metav1.PartialObjectMetadata) []reconcile.Request {
	if name, ok := personaOfConfigMap(obj.GetName()); ok && !controlledByPersona(obj, name) {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}}}
	}
	return nil
}

// configMapDependents enqueues the Personas that read a ConfigMap through
// templateFrom, and the Persona whose ConfigMap name it has when a Persona
// does not control it (a Persona that controls it is its owner, which the
// owner watch enqueues), so that a Persona in conflict retries once the
// foreign ConfigMap is gone.
func (r *PersonaReconciler) configMapDependents(ctx context.Context, obj *metav1.PartialObjectMetadata) []reconcile.Request {
	reqs := dependents(ctx, r.Client, r.waiting, objectRef{Kind: v1alpha1.ConfigMapKind, Namespace: obj.GetNamespace(), Name: obj.GetName()})
	return append(reqs, r.inConflict(ctx, obj)...)
}

// personasOwn reports whether obj is the ConfigMap of the Persona its name
// is for, controlled by that Persona.
func personasOwn(obj client.Object) bool {
	name, ok := personaOfConfigMap(obj.GetName())
	return ok && controlledByPersona(obj, name)
}

// controls reports whether p is obj's controller: its owner reference by UID,
// and by kind, API version and name too, so that a reference forged with
// p's UID under another kind or group is not taken for p's.
func controls(p *v1alpha1.Persona, obj client.Object) bool {
	return metav1.IsControlledBy(obj, p) && controlledByPersona(obj, p.Name)
}

func controlledByPersona(obj client.Object, name string) bool {
	ref := metav1.GetControllerOfNoCopy(obj)
	return ref != nil && ref.Kind == "Persona" && ref.Name == name && ref.APIVersion == v1alpha1.GroupVersion.String()
}

func personaOfConfigMap(name string) (string, bool) {
	persona, ok := strings.CutPrefix(name, delivery.ConfigMapPrefix)
	return persona, ok && persona != ""
}
