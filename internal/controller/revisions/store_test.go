package revisions

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/render"
	"github.com/persona-operator/persona-operator/test/fixtures"
)

// The store is tested against controller-runtime's fake client, which
// stands in for every reader it has: the cache, the API server and, listed
// as the cache of the snapshots would hold them (fixtures.ListedSnapshots),
// the snapshots. The Persona controller's
// tests (internal/controller/persona) drive it through reconciles.

var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(v1alpha1.AddToScheme(s))
	return s
}()

const ns = "team"

// storeSteps is a Store over a fake cluster.
type storeSteps struct {
	*Store
	cluster client.Client
}

// newStore is a Store over a fake cluster of objs.
func newStore(t testing.TB, objs ...client.Object) *storeSteps {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&v1alpha1.Persona{}).
		WithIndex(&v1alpha1.Persona{}, "metadata.name", fixtures.IndexName). // the API server's own field selector
		Build()
	return &storeSteps{Store: New(Config{Client: c, APIReader: fixtures.ManagersAPIServer{Client: c}, Snapshots: fixtures.ListedSnapshots{Reader: c}, Writer: fakeWriter{c}, Scheme: scheme}), cluster: c}
}

// fakeWriter writes ConfigMaps through the fake client.
type fakeWriter struct{ c client.Client }

func (w fakeWriter) Create(ctx context.Context, cm *corev1.ConfigMap) (string, error) {
	cm = cm.DeepCopy()
	if err := w.c.Create(ctx, cm); err != nil {
		return "", err
	}
	return cm.ResourceVersion, nil
}

func (w fakeWriter) Update(ctx context.Context, cm *corev1.ConfigMap) (string, error) {
	cm = cm.DeepCopy()
	if err := w.c.Update(ctx, cm); err != nil {
		return "", err
	}
	return cm.ResourceVersion, nil
}

// barePersona is the Persona name of ns, as the Persona controller's tests
// make it (its spec is no business of the store's).
func barePersona(name string) *v1alpha1.Persona {
	return &v1alpha1.Persona{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.PersonaKind},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-persona-" + name), Generation: 1},
	}
}

// snapshotObject is snapshot n of p, controlled by p or, when not ours, by
// an older Persona of the same name.
func snapshotObject(p *v1alpha1.Persona, n int64, ours bool) *corev1.ConfigMap {
	owner := p
	if !ours {
		owner = p.DeepCopy()
		owner.UID = "uid-an-older-persona"
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: delivery.SnapshotName(p.Name, n), Labels: delivery.SnapshotLabels(p.Name, n),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner, v1alpha1.GroupVersion.WithKind(v1alpha1.PersonaKind))}},
		Data:      map[string]string{render.SystemPromptKey: "Old\n"},
		Immutable: new(true),
	}
}

// snapshotExists reports whether p's snapshot of revision n is in the cluster.
func snapshotExists(t *testing.T, c client.Client, persona string, n int64) bool {
	t.Helper()
	err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: delivery.SnapshotName(persona, n)}, &corev1.ConfigMap{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

// gets counts the objects of type T read through the client it wraps.
type gets[T client.Object] struct {
	client.Client
	n int
}

func (g *gets[T]) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(T); ok {
		g.n++
	}
	return g.Client.Get(ctx, key, obj, opts...)
}

// prune is a reconcile's pruning of p at once; patched is p's metadata as
// its status patch answered (nil: it patched nothing).
func (s *storeSteps) prune(ctx context.Context, p *v1alpha1.Persona, patched *metav1.PartialObjectMetadata) error {
	pr, err := s.BeginPrune(ctx, p)
	if err != nil {
		return err
	}
	return s.FinishPrune(ctx, p, pr, patched)
}
