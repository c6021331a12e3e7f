package persona

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/controller/kube"
	"github.com/persona-operator/persona-operator/internal/controller/revisions"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/render"
	"github.com/persona-operator/persona-operator/test/fixtures"
)

// The steps of a Persona's reconcile are tested against controller-runtime's
// fake client, with the field indexes registered, where what is tested is
// the controller's logic rather than the API server's behaviour (which the
// envtest suite covers). The fake stands in for every reader the
// reconciler has: the cache, the API server and the ConfigMap metadata
// caches.

var stepsScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(v1alpha1.AddToScheme(s))
	return s
}()

// steps is a Persona reconciler over a fake cluster, with its revision
// store.
type steps struct {
	*reconciler
	cluster  client.Client
	writer   *countingWriter
	recorder *events.FakeRecorder
	// cached and live are what the reconciler and its revision store read
	// through, the cache and the API server: a test may point them
	// elsewhere.
	cached, live *swappable
}

// swappable is a client a test may point elsewhere once the reconciler and
// its store, which both read through it, are built.
type swappable struct{ client.Client }

func newSteps(t *testing.T, objs ...client.Object) *steps {
	t.Helper()
	c := fakeCluster(objs...)
	w := &countingWriter{c: c}
	rec := events.NewFakeRecorder(16)
	cached, live := &swappable{c}, &swappable{fixtures.ManagersAPIServer{Client: c}}
	store := revisions.New(revisions.Config{Client: cached, APIReader: live, Snapshots: fixtures.ListedSnapshots{Reader: c}, Writer: w, Scheme: stepsScheme})
	r := newReconciler(cached, stepsScheme, rec, live, c, kube.NewSourceReader(c, c, false), w, options{Revisions: store})
	return &steps{reconciler: r, cluster: c, writer: w, recorder: rec, cached: cached, live: live}
}

// fakeCluster is a fake API server holding objs, with the field indexes
// the controller lists by.
func fakeCluster(objs ...client.Object) client.WithWatch {
	return fake.NewClientBuilder().WithScheme(stepsScheme).WithObjects(objs...).
		WithStatusSubresource(&v1alpha1.Persona{}, &v1alpha1.PromptLayer{}, &v1alpha1.ClusterPromptLayer{}).
		WithIndex(&v1alpha1.Persona{}, kube.DependencyIndex, kube.IndexDependencies).
		WithIndex(&v1alpha1.Persona{}, kube.ReferenceIndex, kube.IndexPersonaReferences).
		WithIndex(&v1alpha1.PromptLayer{}, kube.ReferenceIndex, kube.IndexLayerReferences).
		// The API server's own field selector, which kube.LiveMetadata reads by.
		WithIndex(&v1alpha1.Persona{}, "metadata.name", fixtures.IndexName).
		WithIndex(&v1alpha1.PromptLayer{}, "metadata.name", fixtures.IndexName).
		WithIndex(&v1alpha1.ClusterPromptLayer{}, "metadata.name", fixtures.IndexName).
		WithIndex(&v1alpha1.PromptPlatform{}, "metadata.name", fixtures.IndexName).
		Build()
}

// events are the Events recorded so far, as "<type> <reason> <note>".
func (s *steps) events() []string {
	var out []string
	for {
		select {
		case e := <-s.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// countingWriter writes ConfigMaps through the fake client and counts the writes.
type countingWriter struct {
	c                client.Client
	creates, updates int
}

func (w *countingWriter) Create(ctx context.Context, cm *corev1.ConfigMap) (string, error) {
	return w.write(cm, &w.creates, func(obj client.Object) error { return w.c.Create(ctx, obj) })
}

func (w *countingWriter) Update(ctx context.Context, cm *corev1.ConfigMap) (string, error) {
	return w.write(cm, &w.updates, func(obj client.Object) error { return w.c.Update(ctx, obj) })
}

// write writes a copy of cm with do, counts it in count, and returns the
// version written.
func (w *countingWriter) write(cm *corev1.ConfigMap, count *int, do func(client.Object) error) (string, error) {
	cm = cm.DeepCopy()
	if err := do(cm); err != nil {
		return "", err
	}
	*count++
	return cm.ResourceVersion, nil
}

const ns = "team"

// barePersona is a Persona whose every platform section is removed, so that
// its prompt is exactly its one extension, text, and its layers.
func barePersona(name, text string, layers ...string) *v1alpha1.Persona {
	return inheriting(name, text, nil, layers...)
}

// inheriting is barePersona with parents.
func inheriting(name, text string, parents []string, layers ...string) *v1alpha1.Persona {
	platform := map[string]v1alpha1.PlatformOverride{}
	for _, key := range render.Catalog {
		platform[key] = v1alpha1.PlatformOverride{Remove: new(true)}
	}
	p := &v1alpha1.Persona{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.PersonaKind},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-persona-" + name), Generation: 1},
		Spec: v1alpha1.PersonaSpec{SystemPrompt: &v1alpha1.SystemPromptSpec{
			Platform: platform, Extensions: []v1alpha1.Extension{{ID: "text", Template: text}},
		}},
	}
	for _, parent := range parents {
		p.Spec.Inherit = append(p.Spec.Inherit, v1alpha1.PersonaName(parent))
	}
	for _, l := range layers {
		p.Spec.Layers = append(p.Spec.Layers, v1alpha1.LayerReference{Name: l})
	}
	return p
}

// appendLayer is a PromptLayer appending template.
func appendLayer(name, template string) *v1alpha1.PromptLayer {
	return &v1alpha1.PromptLayer{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-layer-" + name), Generation: 1},
		Spec:       v1alpha1.PromptLayerSpec{Source: "app", Mode: v1alpha1.LayerModeAppend, Template: &template},
	}
}

// get reads obj back from the fake cluster.
func (s *steps) get(t *testing.T, obj client.Object) {
	t.Helper()
	if err := s.cluster.Get(t.Context(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatalf("get %s: %v", obj.GetName(), err)
	}
}

// clusterLayerMeta is the metadata of a ClusterPromptLayer named name.
func clusterLayerMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, UID: types.UID("uid-clusterlayer-" + name), Generation: 1}
}

// withExtension replaces p's extensions by one, id with template.
func withExtension(p *v1alpha1.Persona, id, template string) *v1alpha1.Persona {
	p.Spec.SystemPrompt.Extensions = []v1alpha1.Extension{{ID: id, Template: template}}
	return p
}

// renderOnce renders p, which must render.
func renderOnce(t *testing.T, s *steps, p *v1alpha1.Persona) outcome {
	t.Helper()
	o, err := s.tryRender(t.Context(), p)
	if err != nil || o.reason != v1alpha1.RenderedReason {
		t.Fatalf("render: %s %s %v", o.reason, o.message, err)
	}
	return o
}

// deliverOnce renders p and delivers the render, as a reconcile's delivery pass does.
func deliverOnce(t *testing.T, s *steps, p *v1alpha1.Persona) outcome {
	t.Helper()
	o, err := s.deliver(t.Context(), p, renderOnce(t, s, p), true)
	if err != nil || !o.wrote {
		t.Fatalf("deliver: wrote %v, %v", o.wrote, err)
	}
	return o
}

// configMapOf reads p's ConfigMap from the fake cluster.
func configMapOf(t *testing.T, s *steps, p *v1alpha1.Persona) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{}
	cm.Namespace, cm.Name = p.Namespace, delivery.ConfigMapName(p.Name)
	s.get(t, cm)
	return cm
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
func (s *steps) prune(ctx context.Context, p *v1alpha1.Persona, patched *metav1.PartialObjectMetadata) error {
	pr, err := s.revisions.BeginPrune(ctx, p)
	if err != nil {
		return err
	}
	return s.revisions.FinishPrune(ctx, p, pr, patched)
}
