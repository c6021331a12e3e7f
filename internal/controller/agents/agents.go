package agents

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/controller/kube"
	"github.com/persona-operator/persona-operator/internal/delivery"
)

// status.agents (delivery.md#agents) counts the pods the webhook injected
// with a snapshot, by the revision label it gave them. A controller of its
// own keeps it, apart from the renders: it reads a metadata-only cache of
// the pods that carry the Persona label, so other pods cost nothing, and
// writes a Persona's status at most once per interval, however fast its
// pods come and go.

// DefaultInterval is the shortest time between two writes of one
// Persona's status.agents.
const DefaultInterval = 30 * time.Second

// agentsOf counts pods, the pods of one Persona, by the revision label: the
// pods not being deleted whose label is a revision, the newest
// MaxAgentRevisions revisions. nil when there are none.
func agentsOf(pods []metav1.PartialObjectMetadata, current int64) *v1alpha1.AgentsStatus {
	byRevision := map[int64]int32{}
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		if n, ok := delivery.PodRevision(p.Labels); ok {
			byRevision[n]++
		}
	}
	if len(byRevision) == 0 {
		return nil
	}
	out := &v1alpha1.AgentsStatus{Current: byRevision[current]}
	for n, pods := range byRevision {
		out.Revisions = append(out.Revisions, v1alpha1.RevisionAgents{Revision: n, Pods: pods})
	}
	slices.SortFunc(out.Revisions, func(a, b v1alpha1.RevisionAgents) int { return int(b.Revision - a.Revision) })
	out.Revisions = out.Revisions[:min(len(out.Revisions), v1alpha1.MaxAgentRevisions)]
	return out
}

// Reconciler keeps status.agents.
type Reconciler struct {
	client.Client
	pods     client.Reader
	interval time.Duration
	now      func() time.Time

	mu      sync.Mutex
	written map[types.NamespacedName]time.Time
}

// NewReconciler is the agents controller: it reads the Personas through c
// (the manager's cache) and their pods through pods (the agent pods'
// metadata cache), and writes a Persona's status.agents at most once per
// interval (0: DefaultInterval).
func NewReconciler(c client.Client, pods client.Reader, interval time.Duration) *Reconciler {
	if interval <= 0 {
		interval = DefaultInterval
	}
	return &Reconciler{Client: c, pods: pods, interval: interval, now: time.Now, written: map[types.NamespacedName]time.Time{}}
}

// Reconcile counts a Persona's pods and writes status.agents when the
// count changed and the last write is an interval ago; before, it comes back then.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	var p v1alpha1.Persona
	if err := r.Get(ctx, req.NamespacedName, &p); err != nil {
		if apierrors.IsNotFound(err) {
			r.mu.Lock()
			delete(r.written, req.NamespacedName)
			r.mu.Unlock()
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	pods := kube.PodMetadataList()
	if err := r.pods.List(ctx, pods, client.InNamespace(p.Namespace), client.MatchingLabels{delivery.PersonaLabel: p.Name}); err != nil {
		return ctrl.Result{}, fmt.Errorf("list the pods of persona %s: %w", p.Name, err)
	}
	agents := agentsOf(pods.Items, p.Status.CurrentRevision)
	if equality.Semantic.DeepEqual(agents, p.Status.Agents) {
		return ctrl.Result{}, nil
	}
	if wait := r.wait(req.NamespacedName); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	before := p.Status.DeepCopy()
	p.Status.Agents = agents
	// The merge patch holds status.agents alone: the Persona controller's
	// patches hold only what it changed, so neither undoes the other.
	kube.PatchStatus(ctx, r.Client, &p, before, &p.Status, &err)
	if err == nil {
		r.mu.Lock()
		r.written[req.NamespacedName] = r.now()
		r.mu.Unlock()
	}
	return ctrl.Result{}, err
}

// wait is how long until the Persona's status.agents may be written again.
func (r *Reconciler) wait(key types.NamespacedName) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	last, ok := r.written[key]
	if !ok {
		return 0
	}
	return max(r.interval-r.now().Sub(last), 0)
}

// SetupWithManager counts on pod events, and on a new delivered revision.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, pods cache.Cache) error {
	currentRevisionChanged := predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld.(*v1alpha1.Persona), e.ObjectNew.(*v1alpha1.Persona)
			return o.Status.CurrentRevision != n.Status.CurrentRevision
		},
	}
	ofPersona := handler.TypedEnqueueRequestsFromMapFunc(func(_ context.Context, m *metav1.PartialObjectMetadata) []reconcile.Request {
		name := m.Labels[delivery.PersonaLabel]
		if name == "" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: m.Namespace, Name: name}}}
	})
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Persona{}, builder.WithPredicates(currentRevisionChanged)).
		WatchesRawSource(source.Kind(pods, kube.PodMetadata(), ofPersona, countedChange)).
		Named("persona-agents").
		Complete(r)
}

// countedChange passes the pod events that can change a count: a pod
// created or deleted, its labels changed, its deletion begun. A pod's status
// changes often, and its metadata's resourceVersion with it, but never the
// count.
var countedChange = predicate.TypedFuncs[*metav1.PartialObjectMetadata]{
	UpdateFunc: func(e event.TypedUpdateEvent[*metav1.PartialObjectMetadata]) bool {
		o, n := e.ObjectOld, e.ObjectNew
		return !maps.Equal(o.Labels, n.Labels) || (o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil)
	},
}
