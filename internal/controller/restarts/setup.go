package restarts

import (
	"context"
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/controller/kube"
	"github.com/persona-operator/persona-operator/internal/waves"
)

// restartSelector selects the workloads that opt in to restarts on change:
// the only ones the manager's informers hold, so that other workloads cost
// nothing in memory.
var restartSelector = labels.SelectorFromSet(labels.Set{v1alpha1.RestartOnChangeLabel: "true"})

// CacheObjects are the cache's options for the workloads with
// --restart-workloads: those of opts' kinds that opt in, alone.
func CacheObjects(opts Options) map[client.Object]cache.ByObject {
	out := map[client.Object]cache.ByObject{}
	for _, kind := range opts.kinds() {
		out[newWorkload(kind)] = cache.ByObject{Label: restartSelector}
	}
	return out
}

// workloadPersonaIndex indexes the opted-in workloads by the Persona they name.
const workloadPersonaIndex = "restart.persona"

// Setup registers the restarts' controller: it watches the
// opted-in workloads, and the Personas whose delivered revision changes.
func Setup(ctx context.Context, mgr ctrl.Manager, recorder kube.CuttingRecorder, opts Options, halts Halts) error {
	r := newWorkloadRestarter(mgr.GetClient(), mgr.GetCache(), mgr.GetAPIReader(), recorder, opts, halts)
	index := func(obj client.Object) []string {
		if name := workloadPersona(obj); name != "" {
			return []string{name}
		}
		return nil
	}
	for _, kind := range r.kinds {
		if err := mgr.GetFieldIndexer().IndexField(ctx, newWorkload(kind), workloadPersonaIndex, index); err != nil {
			return fmt.Errorf("index %ss by Persona: %w", kind, err)
		}
	}
	b := builder.TypedControllerManagedBy[waves.Workload](mgr).Named("workload-restart").
		WithOptions(controller.TypedOptions[waves.Workload]{MaxConcurrentReconciles: 1})
	for _, kind := range r.kinds {
		b = b.WatchesRawSource(source.TypedKind(mgr.GetCache(), newWorkload(kind),
			handler.TypedEnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []waves.Workload {
				return []waves.Workload{{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}}
			})))
	}
	b = b.WatchesRawSource(source.TypedKind(mgr.GetCache(), &v1alpha1.Persona{},
		handler.TypedEnqueueRequestsFromMapFunc(r.workloadsOf), deliveredRevisionChanged()))
	if err := b.Complete(r); err != nil {
		return err
	}
	return metrics.Registry.Register(restartCounts)
}

// deliveredRevisionChanged passes the Persona events that can start a
// restart: a delivered revision changed, a Persona created or deleted.
func deliveredRevisionChanged() predicate.TypedPredicate[*v1alpha1.Persona] {
	return predicate.TypedFuncs[*v1alpha1.Persona]{
		UpdateFunc: func(e event.TypedUpdateEvent[*v1alpha1.Persona]) bool {
			return e.ObjectOld.Status.CurrentRevision != e.ObjectNew.Status.CurrentRevision ||
				e.ObjectOld.Status.LatestRevision != e.ObjectNew.Status.LatestRevision
		},
		GenericFunc: func(event.TypedGenericEvent[*v1alpha1.Persona]) bool { return false },
	}
}

// workloadsOf are the opted-in workloads that name p.
func (r *workloadRestarter) workloadsOf(ctx context.Context, p *v1alpha1.Persona) []waves.Workload {
	var out []waves.Workload
	for _, kind := range r.kinds {
		objs, err := listWorkloads(ctx, r.workloads, kind, client.InNamespace(p.Namespace), client.MatchingFields{workloadPersonaIndex: p.Name})
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "list the workloads naming a Persona", "kind", kind, "persona", client.ObjectKeyFromObject(p))
			continue
		}
		for _, obj := range objs {
			out = append(out, waves.Workload{Kind: kind, Namespace: p.Namespace, Name: obj.GetName()})
		}
	}
	return out
}

// restartGauges are the restarts' figures, as the scheduler last counted them.
type restartGauges struct{ waiting, rolling, halted prometheus.Gauge }

var restartCounts = restartGauges{
	waiting: prometheus.NewGauge(prometheus.GaugeOpts{Name: "persona_restarts_waiting",
		Help: "Workloads waiting to be restarted onto their Persona's new revision (halted ones not counted)."}),
	rolling: prometheus.NewGauge(prometheus.GaugeOpts{Name: "persona_restarts_rolling",
		Help: "Workloads rolling out onto their Persona's new revision."}),
	halted: prometheus.NewGauge(prometheus.GaugeOpts{Name: "persona_restarts_halted",
		Help: "Workloads whose rollout failed, and those whose restart such a failure halts."}),
}

func (g restartGauges) set(c waves.Counts) {
	g.waiting.Set(float64(c.Waiting))
	g.rolling.Set(float64(c.Rolling))
	g.halted.Set(float64(c.Halted))
}

func (g restartGauges) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range []prometheus.Gauge{g.waiting, g.rolling, g.halted} {
		m.Describe(ch)
	}
}

func (g restartGauges) Collect(ch chan<- prometheus.Metric) {
	for _, m := range []prometheus.Gauge{g.waiting, g.rolling, g.halted} {
		m.Collect(ch)
	}
}

// OffCheck says once, at start, that workloads opt in to restarts while
// --restart-workloads is off. Where the manager may list a kind (a
// SelfSubjectAccessReview tells, so that the default install, which may
// not, makes no request it is refused), it lists one object of that kind by
// the label, with the API reader: no informer, nothing held.
type OffCheck struct {
	client client.Client
	reader client.Reader
}

// The manager asks whether it may list workloads: SelfSubjectAccessReviews.
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=selfsubjectaccessreviews,verbs=create

// NewOffCheck reads through c and, for the list, through reader (the API
// reader: nothing held).
func NewOffCheck(c client.Client, reader client.Reader) OffCheck {
	return OffCheck{client: c, reader: reader}
}

// NeedLeaderElection runs the check on the leader only.
func (OffCheck) NeedLeaderElection() bool { return true }

// Start tells, once, of a workload that opts in.
func (o OffCheck) Start(ctx context.Context) error {
	log := ctrl.Log.WithName("restarts")
	for _, kind := range (Options{Rollouts: true}).kinds() {
		gvk := gvkOf(kind)
		resource := strings.ToLower(kind) + "s"
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Group: gvk.Group, Resource: resource, Verb: "list"},
		}}
		if err := o.client.Create(ctx, review); err != nil {
			log.V(1).Info("cannot tell whether workloads opt in to restarts", "kind", kind, "error", err.Error())
			continue
		}
		if !review.Status.Allowed {
			log.V(1).Info("cannot tell whether workloads opt in to restarts: listing them is not allowed", "kind", kind)
			continue
		}
		var list metav1.PartialObjectMetadataList
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(kind + "List"))
		if err := o.reader.List(ctx, &list, client.MatchingLabelsSelector{Selector: restartSelector}, client.Limit(1)); err != nil {
			log.V(1).Info("cannot tell whether workloads opt in to restarts", "kind", kind, "error", err.Error())
			continue
		}
		if len(list.Items) > 0 {
			w := list.Items[0]
			log.Info("a workload opts in to restarts on change, but restarts are off: run the manager with --restart-workloads",
				"kind", kind, "namespace", w.Namespace, "name", w.Name, "label", v1alpha1.RestartOnChangeLabel)
			return nil
		}
	}
	return nil
}

var _ manager.LeaderElectionRunnable = OffCheck{}
