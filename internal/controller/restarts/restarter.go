package restarts

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/controller/kube"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/version"
	"github.com/persona-operator/persona-operator/internal/waves"
)

// FieldManager is the field manager of the restarts' writes: the
// pod template's revision annotation and the applied-revision annotation of
// workloads. A Persona's RolloutHalted condition is written by the Persona
// controller, as the restarts decide it (Halts).
const FieldManager = "persona-operator-restarts"

// Halts has the Persona controller write the RolloutHalted conditions the
// restarts decide: with one writer of a Persona's conditions, a merge
// patch of them loses nothing. The restarts and the Persona controller run
// in the same leader.
type Halts interface {
	// Set decides the RolloutHalted condition of the Persona key, and has
	// the Persona controller write it.
	Set(key types.NamespacedName, status metav1.ConditionStatus, reason, message string)
}

// Defaults of Options.
const (
	DefaultMaxConcurrent = 5
	DefaultDeadline      = 10 * time.Minute
)

// Options tune the restarts on change (--restart-workloads).
type Options struct {
	// MaxConcurrent is how many workloads may be rolling out at once.
	MaxConcurrent int
	// Deadline is how long a rollout may take before it counts as failed.
	Deadline time.Duration
	// Rollouts restarts Argo Rollouts' Rollouts too (RolloutsRestartable).
	Rollouts bool
}

// workloadRestarter restarts opted-in workloads onto their Persona's
// delivered revision, in the waves of its scheduler. It reconciles one
// workload at a time: the writes it admits are few, and one worker keeps
// admission and the writes in order.
type workloadRestarter struct {
	client    client.Client
	apiReader client.Reader
	// workloads reads the opted-in workloads from the manager's cache:
	// Rollouts, as unstructured objects, too (the manager's client reads
	// those from the API server).
	workloads client.Reader
	recorder  events.EventRecorder
	waves     *waves.Scheduler
	limit     int
	deadline  time.Duration
	// kinds are the workload kinds it restarts.
	kinds []string

	// primed: the first reconcile has seen every opted-in workload, so
	// rollouts a previous leader started count before anything is admitted.
	primed bool
	// warned is the last Warning told about each workload, so it is told
	// once; writeFailed the last failed write of a restart, until one succeeds.
	warned, writeFailed sync.Map
	// halted are the Personas showing RolloutHalted, by the halt's namespace and cause.
	halted map[types.NamespacedName]waves.Cause
	// halts has the Persona controller write their RolloutHalted.
	halts Halts
}

func newWorkloadRestarter(c client.Client, workloads, apiReader client.Reader, recorder events.EventRecorder, opts Options, halts Halts) *workloadRestarter {
	limit := opts.MaxConcurrent
	if limit <= 0 {
		limit = DefaultMaxConcurrent
	}
	deadline := opts.Deadline
	if deadline <= 0 {
		deadline = DefaultDeadline
	}
	return &workloadRestarter{client: c, workloads: workloads, apiReader: apiReader, recorder: recorder, waves: waves.New(limit),
		limit: limit, deadline: deadline, kinds: opts.kinds(), halted: map[types.NamespacedName]waves.Cause{}, halts: halts}
}

// The workloads' RBAC is opt-in: config/components/restart-workloads.

// Reconcile observes one workload: a finished or failed rollout, a new
// revision to restart onto. Then it admits what the limit allows.
func (r *workloadRestarter) Reconcile(ctx context.Context, w waves.Workload) (reconcile.Result, error) {
	now := time.Now()
	if !r.primed {
		if err := r.prime(ctx, now); err != nil {
			return reconcile.Result{}, err
		}
		r.primed = true
	}
	var after time.Duration
	obj, err := r.get(ctx, w)
	switch {
	case apierrors.IsNotFound(err):
		r.forget(w)
		r.warned.Delete(w)
	case err != nil:
		return reconcile.Result{}, err
	default:
		if after, err = r.observe(ctx, w, obj, now, false); err != nil {
			return reconcile.Result{}, err
		}
	}
	r.admit(ctx, now)
	if retry, ok := r.waves.NextRetry(now); ok && (after == 0 || retry < after) {
		after = max(retry, time.Second)
	}
	restartCounts.set(r.waves.Counts())
	return reconcile.Result{RequeueAfter: after}, nil
}

// prime observes every opted-in workload once, before the first admission:
// a new leader counts the rollouts its predecessor started against the
// limit, and reads the applied-revision annotations for what is done.
func (r *workloadRestarter) prime(ctx context.Context, now time.Time) error {
	for _, kind := range r.kinds {
		objs, err := listWorkloads(ctx, r.workloads, kind)
		if err != nil {
			return err
		}
		for _, obj := range objs {
			w := waves.Workload{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
			if _, err := r.observe(ctx, w, obj, now, true); err != nil {
				return err
			}
		}
	}
	return nil
}

// observe records what obj shows: the end of its rollout, and the restart
// its Persona's delivered revision asks for. It returns when to look again
// at a rollout still running. At priming, a rollout onto the applied
// revision that has not completed is adopted as rolling.
func (r *workloadRestarter) observe(ctx context.Context, w waves.Workload, obj client.Object, now time.Time, priming bool) (time.Duration, error) {
	name := workloadPersona(obj)
	if name == "" {
		r.warn(w, obj, "PersonaNotNamed", "the workload opts in to restarts on change but names no Persona: label prompts.persona-operator.dev/persona on its metadata or pod template")
		r.forget(w)
		return 0, nil
	}
	var p v1alpha1.Persona
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: name}, &p); err != nil {
		if !apierrors.IsNotFound(err) {
			return 0, fmt.Errorf("get Persona %s: %w", name, err)
		}
		r.warn(w, obj, "PersonaNotFound", fmt.Sprintf("Persona %s, which the workload names, does not exist: it is not restarted", name))
		r.forget(w)
		return 0, nil
	}
	if why := templateElsewhere(obj); why != "" {
		r.warn(w, obj, "TemplateNotOwn", why)
		r.forget(w)
		return 0, nil
	}
	r.warned.Delete(w)
	desired := p.Status.CurrentRevision
	if desired == 0 {
		return 0, nil
	}
	applied, roll := appliedRevision(obj), rolloutOf(obj)
	restart := r.restartFor(&p, w, desired)
	if priming && applied == desired && !roll.done() {
		r.waves.Adopt(restart, now)
	}
	var after time.Duration
	if cur, since, ok := r.waves.Rolling(w); ok && applied == cur.Revision {
		// The cache shows the write: the status read is of this rollout.
		switch {
		case roll.done():
			r.finish(ctx, w, obj, &p)
		case roll == rolloutFailed:
			r.fail(ctx, w, obj, failureOf(obj))
		case now.Sub(since) >= r.deadline:
			r.fail(ctx, w, obj, fmt.Sprintf("not complete within %s", r.deadline))
		default:
			after = since.Add(r.deadline).Sub(now)
		}
	} else if !ok && roll.done() {
		r.waves.Finish(w) // a failed rollout that completed after all
	}
	if applied != desired {
		r.waves.Add(restart)
	}
	r.clearHalt(client.ObjectKeyFromObject(&p))
	return after, nil
}

// restartFor is the restart of w onto revision n of p, with its cause: a
// pin, an unpin (the delivered revision is not the latest render's, or the
// workload goes back), a guardrail change, or the revision's cause.
func (r *workloadRestarter) restartFor(p *v1alpha1.Persona, w waves.Workload, n int64) waves.Restart {
	out := waves.Restart{Workload: w, Persona: p.Name, Revision: n}
	if p.Status.LatestRevision != n {
		out.Cause = waves.Cause{Kind: v1alpha1.PersonaKind, Namespace: p.Namespace, Name: p.Name, Version: "pin/" + strconv.FormatInt(n, 10)}
		out.Priority = true
		return out
	}
	e, ok := p.Status.HistoryEntry(n)
	if !ok || e.Cause.Kind == v1alpha1.RevisionCauseOperator {
		out.Cause = waves.Cause{Kind: v1alpha1.RevisionCauseOperator, Version: version.String()}
		return out
	}
	c := e.Cause
	at := c.ResourceVersion
	if c.Generation != 0 {
		at = strconv.FormatInt(c.Generation, 10)
	}
	out.Cause = waves.Cause{Kind: c.Kind, Namespace: c.Namespace, Name: c.Name, Version: at}
	if namespaced(c.Kind) && out.Cause.Namespace == "" {
		out.Cause.Namespace = p.Namespace
	}
	out.Priority = c.Kind == v1alpha1.ClusterPromptLayerKind
	return out
}

func namespaced(kind string) bool {
	switch kind {
	case v1alpha1.ClusterPromptLayerKind, v1alpha1.PromptPlatformKind, v1alpha1.NamespaceKind, v1alpha1.RevisionCauseOperator:
		return false
	}
	return true
}

// admit starts the restarts the limit allows. A restart whose write fails
// goes back to wait (waves' Abort holds it back, with a backoff), with a
// Warning Event RestartFailed on its workload, once per error. It is no
// error of this reconcile, which may be another workload's: one workload
// whose write always fails must not back off the others' checks.
func (r *workloadRestarter) admit(ctx context.Context, now time.Time) {
	for _, rs := range r.waves.Admit(now) {
		if err := r.apply(ctx, rs); err != nil {
			r.waves.Abort(rs, now)
			message := fmt.Sprintf("the restart onto revision %d of Persona %s could not be written, and is tried again: %v", rs.Revision, rs.Persona, err)
			if tellOnce(&r.writeFailed, rs.Workload, message) {
				log.FromContext(ctx).Error(err, "restart not written", "workload", rs.Workload, "persona", rs.Persona, "revision", rs.Revision)
				if obj, getErr := r.get(ctx, rs.Workload); getErr == nil {
					r.recorder.Eventf(obj, nil, corev1.EventTypeWarning, "RestartFailed", "Restart", "%s", message)
				}
			}
			continue
		}
		r.waves.Wrote(rs.Workload)
		r.writeFailed.Delete(rs.Workload)
		log.FromContext(ctx).Info("restarting onto a new revision", "workload", rs.Workload, "persona", rs.Persona, "revision", rs.Revision)
	}
}

// forget drops what the restarts hold of w, and lifts the halts shown by
// the Personas whose restarts it held, where nothing else halts them.
func (r *workloadRestarter) forget(w waves.Workload) {
	r.writeFailed.Delete(w)
	for _, persona := range r.waves.Forget(w) {
		r.clearHalt(types.NamespacedName{Namespace: w.Namespace, Name: persona})
	}
}

// apply writes the restart: the pod template's revision annotation and the
// applied-revision annotation, both in one server-side apply of its own
// field manager, forced, so that a leader change neither forgets nor
// repeats it, and a rollout undo that took the field gives it back.
func (r *workloadRestarter) apply(ctx context.Context, rs waves.Restart) error {
	n := strconv.FormatInt(rs.Revision, 10)
	applied := map[string]string{v1alpha1.AppliedRevisionAnnotation: n}
	template := corev1ac.PodTemplateSpec().WithAnnotations(map[string]string{delivery.RevisionAnnotation: n})
	var ac runtime.ApplyConfiguration
	switch rs.Workload.Kind {
	case deploymentKind:
		ac = appsv1ac.Deployment(rs.Workload.Name, rs.Workload.Namespace).WithAnnotations(applied).
			WithSpec(appsv1ac.DeploymentSpec().WithTemplate(template))
	case statefulSetKind:
		ac = appsv1ac.StatefulSet(rs.Workload.Name, rs.Workload.Namespace).WithAnnotations(applied).
			WithSpec(appsv1ac.StatefulSetSpec().WithTemplate(template))
	case daemonSetKind:
		ac = appsv1ac.DaemonSet(rs.Workload.Name, rs.Workload.Namespace).WithAnnotations(applied).
			WithSpec(appsv1ac.DaemonSetSpec().WithTemplate(template))
	case rolloutKind:
		u := newWorkload(rolloutKind).(*unstructured.Unstructured)
		u.SetName(rs.Workload.Name)
		u.SetNamespace(rs.Workload.Namespace)
		u.SetAnnotations(applied)
		if err := unstructured.SetNestedStringMap(u.Object, map[string]string{delivery.RevisionAnnotation: n}, "spec", "template", "metadata", "annotations"); err != nil {
			return err
		}
		ac = client.ApplyConfigurationFromUnstructured(u)
	default:
		return fmt.Errorf("unknown kind %s", rs.Workload.Kind)
	}
	return r.client.Apply(ctx, ac, client.FieldOwner(FieldManager), client.ForceOwnership)
}

// Events about a workload go on the workload, in its namespace, where only
// those who may read that namespace's Events read them. Its cause gets the
// progress too, naming the workload only when it is in the workload's
// namespace: a cluster-scoped cause's Events are recorded in default, which
// other tenants may read, so they hold counts only.

// finish records w's completed rollout, with a Normal Event Restarted on
// the workload obj, and tells its cause's progress: at the end of each
// wave's worth of workloads, and at the last.
func (r *workloadRestarter) finish(ctx context.Context, w waves.Workload, obj client.Object, p *v1alpha1.Persona) {
	rs, progress, ok := r.waves.Finish(w)
	if !ok {
		return
	}
	r.recorder.Eventf(obj, nil, corev1.EventTypeNormal, "Restarted", "Restart",
		"rolled out onto revision %d of Persona %s, made by %s", rs.Revision, rs.Persona, causeName(rs.Cause))
	if progress.Done == progress.Total || progress.Done%r.limit == 0 {
		r.recorder.Eventf(r.causeObject(ctx, rs.Cause, p), nil, corev1.EventTypeNormal, "Restarted", "Restart",
			"restarted %d of %d workloads onto their Personas' new revision", progress.Done, progress.Total)
	}
}

// fail records w's failed rollout: the waiting restarts of its cause in its
// namespace halt, the workload obj gets a Warning Event RestartsHalted that
// names it, its cause one that names it only when in its namespace, and the
// Personas concerned show RolloutHalted.
func (r *workloadRestarter) fail(ctx context.Context, w waves.Workload, obj client.Object, why string) {
	rs, held, ok := r.waves.Fail(w)
	if !ok {
		return
	}
	var p v1alpha1.Persona
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: rs.Persona}, &p); err != nil {
		p = v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: rs.Persona}}
	}
	message := fmt.Sprintf("the rollout of %s %s/%s onto revision %d of Persona %s, made by %s, failed (%s): %d waiting restarts of the same cause in namespace %s are halted until its next revision",
		w.Kind, w.Namespace, w.Name, rs.Revision, rs.Persona, causeName(rs.Cause), why, len(held), w.Namespace)
	r.recorder.Eventf(obj, nil, corev1.EventTypeWarning, "RestartsHalted", "Restart", "%s", message)
	cause := r.causeObject(ctx, rs.Cause, &p)
	if causeObj, ok := cause.(client.Object); ok && causeObj.GetNamespace() == w.Namespace {
		r.recorder.Eventf(cause, nil, corev1.EventTypeWarning, "RestartsHalted", "Restart", "%s", message)
	} else {
		r.recorder.Eventf(cause, nil, corev1.EventTypeWarning, "RestartsHalted", "Restart",
			"a rollout onto a revision of this cause failed: %d waiting restarts of it in the same namespace are halted until its next revision; the workload's namespace has the details",
			len(held))
	}
	personas := map[string]bool{rs.Persona: true}
	for _, h := range held {
		personas[h.Persona] = true
	}
	for name := range personas {
		key := types.NamespacedName{Namespace: w.Namespace, Name: name}
		r.halted[key] = rs.Cause
		r.halts.Set(key, metav1.ConditionTrue, v1alpha1.RolloutFailedReason, message)
	}
}

// causeName names a restart's cause as the workload's namespace may read it.
func causeName(c waves.Cause) string {
	if c.Kind == v1alpha1.RevisionCauseOperator {
		return "the operator's defaults at version " + c.Version
	}
	return c.Kind + " " + c.Name
}

// clearHalt sets RolloutHalted False on the Persona key once the halt it
// shows is over: the cause's next revision resumed it, or no restart of its
// workloads is halted any more (their next revision has another cause, the
// failed rollout completed after all, or the halted workloads are gone).
func (r *workloadRestarter) clearHalt(key types.NamespacedName) {
	cause, ok := r.halted[key]
	if !ok {
		return
	}
	message := "a new revision of the cause resumed the halted restarts"
	if r.waves.Halted(key.Namespace, cause) {
		if r.waves.PersonaHalted(key.Namespace, key.Name) {
			return
		}
		message = "no restart of this Persona's workloads is halted any more"
	}
	delete(r.halted, key)
	r.halts.Set(key, metav1.ConditionFalse, v1alpha1.RolloutsResumedReason, message)
}

// warn tells a Warning about obj once, until it is different.
func (r *workloadRestarter) warn(w waves.Workload, obj client.Object, reason, message string) {
	if tellOnce(&r.warned, w, reason+message) {
		r.recorder.Eventf(obj, nil, corev1.EventTypeWarning, reason, "Restart", "%s", message)
	}
}

// tellOnce records said as the last thing told about w in told, and
// reports whether it is new: not what was told last.
func tellOnce(told *sync.Map, w waves.Workload, said string) bool {
	prev, ok := told.Swap(w, said)
	return !ok || prev != said
}

// causeObject is the object a restart's Events go on: the cause, else the
// Persona (the operator's defaults, or a cause that cannot be read).
func (r *workloadRestarter) causeObject(ctx context.Context, c waves.Cause, p *v1alpha1.Persona) runtime.Object {
	var obj client.Object
	key := client.ObjectKey{Namespace: c.Namespace, Name: c.Name}
	switch c.Kind {
	case v1alpha1.PersonaKind:
		obj = &v1alpha1.Persona{}
	case v1alpha1.PromptLayerKind:
		obj = &v1alpha1.PromptLayer{}
	case v1alpha1.ClusterPromptLayerKind:
		obj = &v1alpha1.ClusterPromptLayer{}
	case v1alpha1.PromptPlatformKind:
		obj = &v1alpha1.PromptPlatform{}
	case v1alpha1.ConfigMapKind:
		m := kube.ConfigMapMetadata()
		if err := r.apiReader.Get(ctx, key, m); err == nil {
			return m
		}
		return p
	default:
		return p
	}
	if err := r.client.Get(ctx, key, obj); err != nil {
		return p
	}
	return obj
}

// get reads w from the cache, which holds opted-in workloads only.
func (r *workloadRestarter) get(ctx context.Context, w waves.Workload) (client.Object, error) {
	obj := newWorkload(w.Kind)
	if obj == nil {
		return nil, fmt.Errorf("unknown kind %s", w.Kind)
	}
	err := r.workloads.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: w.Name}, obj)
	return obj, err
}
