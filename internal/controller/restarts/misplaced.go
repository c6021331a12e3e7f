package restarts

import (
	"context"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/controller/kube"
)

// misplacedRestartKinds are the kinds a restart label is most often put on
// by mistake: restarts roll out Deployments, StatefulSets and DaemonSets
// alone. Each is watched by metadata and by the label, so that a cluster's
// other objects of these kinds cost nothing.
var misplacedRestartKinds = []schema.GroupVersionKind{
	appsv1.SchemeGroupVersion.WithKind("ReplicaSet"),
	batchv1.SchemeGroupVersion.WithKind("Job"),
	batchv1.SchemeGroupVersion.WithKind("CronJob"),
	corev1.SchemeGroupVersion.WithKind("Pod"),
}

// The restart label on another kind is told (MisplacedLabels); the
// rights are in config/components/restart-workloads, with the restarts'.

// MisplacedLabels tells one Warning Event, RestartLabelIgnored, on
// each object of misplacedRestartKinds that carries the restart label and
// has no controller: one a controller made (a Deployment's ReplicaSet and
// pods, a CronJob's Jobs) has the label from its owner's template, and its
// owner is what opted in, or is told. It runs on the leader, from a cache
// of its own.
type MisplacedLabels struct {
	cache    cache.Cache
	recorder kube.CuttingRecorder
	mu       sync.Mutex
	told     map[types.UID]bool
}

// NewMisplacedLabels creates the cache of the labelled objects of
// misplacedRestartKinds, run with the manager's, and what tells of them.
func NewMisplacedLabels(mgr ctrl.Manager, namespaces []string, recorder kube.CuttingRecorder) (*MisplacedLabels, error) {
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme:               mgr.GetScheme(),
		Mapper:               mgr.GetRESTMapper(),
		DefaultNamespaces:    kube.NamespaceConfigs(namespaces),
		DefaultLabelSelector: restartSelector,
		DefaultTransform:     trimToController,
	})
	if err != nil {
		return nil, fmt.Errorf("create the cache of misplaced restart labels: %w", err)
	}
	if err := mgr.Add(kube.StartedWithCaches{Cache: c}); err != nil {
		return nil, fmt.Errorf("run the cache of misplaced restart labels: %w", err)
	}
	return &MisplacedLabels{cache: c, recorder: recorder, told: map[types.UID]bool{}}, nil
}

// trimToController keeps of an object's metadata its name, version and
// whether a controller owns it.
func trimToController(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	kept := metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion}
	if ref := metav1.GetControllerOfNoCopy(m); ref != nil {
		kept.OwnerReferences = []metav1.OwnerReference{*ref}
	}
	m.ObjectMeta = kept
	kube.InternMeta(m)
	return m, nil
}

// NeedLeaderElection runs the check on the leader only.
func (*MisplacedLabels) NeedLeaderElection() bool { return true }

// Start registers a handler on each kind's informer: an informer hands a
// new handler every object it holds, then each one added.
func (m *MisplacedLabels) Start(ctx context.Context) error {
	for _, gvk := range misplacedRestartKinds {
		obj := &metav1.PartialObjectMetadata{}
		obj.SetGroupVersionKind(gvk)
		// Not waiting for its sync: a kind whose list is refused (a role of an
		// older release) leaves the others told, and its reflector logs why.
		informer, err := m.cache.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		if err != nil {
			return fmt.Errorf("watch %ss with the restart label: %w", gvk.Kind, err)
		}
		if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { m.tell(gvk, o) },
			DeleteFunc: func(o any) { m.forget(o) },
		}); err != nil {
			return fmt.Errorf("watch %ss with the restart label: %w", gvk.Kind, err)
		}
	}
	<-ctx.Done()
	return nil
}

func (m *MisplacedLabels) tell(gvk schema.GroupVersionKind, o any) {
	obj, ok := o.(*metav1.PartialObjectMetadata)
	if !ok || metav1.GetControllerOfNoCopy(obj) != nil {
		return
	}
	m.mu.Lock()
	told := m.told[obj.UID]
	m.told[obj.UID] = true
	m.mu.Unlock()
	if told {
		return
	}
	// The Event's object reference needs the kind, which the cache's
	// objects need not carry.
	regarding := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: obj.Name, Namespace: obj.Namespace, UID: obj.UID, ResourceVersion: obj.ResourceVersion}}
	regarding.SetGroupVersionKind(gvk)
	m.recorder.Eventf(regarding, nil, corev1.EventTypeWarning, "RestartLabelIgnored", "Restart",
		"%s %s is not restarted on change: the label %s works on Deployments, StatefulSets and DaemonSets only; put it on the workload that makes this %s",
		gvk.Kind, obj.Name, v1alpha1.RestartOnChangeLabel, gvk.Kind)
}

func (m *MisplacedLabels) forget(o any) {
	if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	if obj, ok := o.(*metav1.PartialObjectMetadata); ok {
		m.mu.Lock()
		delete(m.told, obj.UID)
		m.mu.Unlock()
	}
}

var _ manager.LeaderElectionRunnable = &MisplacedLabels{}
