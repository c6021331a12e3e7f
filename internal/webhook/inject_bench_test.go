package webhook

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
)

// cachedFacts answers as the manager's caches would for one Persona at
// revision 4 with its four snapshots, and a canary of revision 5 (whose
// snapshot is a fifth) when canary is set.
type cachedFacts struct {
	canary *v1alpha1.CanaryStatus
}

func (f cachedFacts) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	p, ok := obj.(*v1alpha1.Persona)
	if !ok { // the live ConfigMap: the pods mount snapshots
		return apierrors.NewNotFound(corev1.Resource("configmaps"), key.Name)
	}
	*p = v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace, UID: "u1"},
		Spec:   v1alpha1.PersonaSpec{Variants: []v1alpha1.Variant{{Name: "short"}}},
		Status: v1alpha1.PersonaStatus{CurrentRevision: 4, LatestRevision: 4}}
	if f.canary != nil {
		p.Status.LatestRevision, p.Status.Canary = f.canary.Revision, f.canary.DeepCopy()
	}
	return nil
}

func (f cachedFacts) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("the injection lists nothing")
}

// SnapshotsOf answers with the cache's own records, as the cache does,
// made once.
func (f cachedFacts) SnapshotsOf(context.Context, string, string) ([]*delivery.SnapshotMeta, error) {
	last := int64(4)
	if f.canary != nil {
		last = f.canary.Revision
	}
	return benchSnapshotMetas[:last], nil
}

// benchSnapshotMetas are the cache's records of snapshots 1 to 5.
var benchSnapshotMetas = func() []*delivery.SnapshotMeta {
	var out []*delivery.SnapshotMeta
	for n := int64(1); n <= 5; n++ {
		out = append(out, delivery.NewSnapshotMeta(benchSnapshot(n)))
	}
	return out
}()

// benchSnapshot is the metadata of snapshot n of Persona reviewer.
func benchSnapshot(n int64) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Name: delivery.SnapshotName("reviewer", n), Namespace: "team-a", UID: types.UID(fmt.Sprint("s", n)),
		Labels:          delivery.SnapshotLabels("reviewer", n),
		Annotations:     map[string]string{delivery.GuardrailsAnnotation: "sha256:g"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.PersonaKind, Name: "reviewer", UID: "u1", Controller: new(true)}},
	}}
}

// apiServer answers the reads of the API server for the snapshots of
// cachedFacts, each after delay (a round trip), and counts them.
type apiServer struct {
	delay time.Duration
	gets  atomic.Int64
}

func (a *apiServer) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	a.gets.Add(1)
	time.Sleep(a.delay)
	_, n, _ := delivery.SnapshotOf(key.Name)
	m := benchSnapshot(n)
	switch o := obj.(type) {
	case *metav1.PartialObjectMetadata:
		o.ObjectMeta = m.ObjectMeta
	case *corev1.ConfigMap:
		o.ObjectMeta = m.ObjectMeta
		o.Data = map[string]string{"bundle.json": `{"persona":{"harness":"claude","model":"m"},"variants":[{"name":"short"}]}`}
	}
	return nil
}

func (a *apiServer) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return fmt.Errorf("the injection lists nothing of the API server")
}

// The webhook's own time per pod create, from the admission request to the
// patch, with the caches' answers in memory:
//
//	go test ./internal/webhook -run XXX -bench BenchmarkInjectorHandle -benchmem
func BenchmarkInjectorHandle(b *testing.B) {
	i := &Injector{Personas: cachedFacts{}, ConfigMaps: cachedFacts{}, Snapshots: cachedFacts{}}
	req := podCreate(b, "team-a", map[string]string{"prompts.persona-operator.dev/persona": "reviewer", "app": "agent"})
	ctx := context.Background()
	for b.Loop() {
		if resp := i.Handle(ctx, req); !resp.Allowed || len(resp.Patches) == 0 {
			b.Fatalf("%+v", resp)
		}
	}
}

// The same with the API server too, whose reads take a millisecond each,
// for pods of a Persona without a canary and of one whose canary of revision
// 5 gets 10% or all of the new pods (each review of its own uid): the
// reads/op metric is the API server's reads per pod create, past the one
// read of each snapshot's bundle.json that the later pods share.
//
//	go test ./internal/webhook -run XXX -bench BenchmarkInjectorHandleReads -benchmem
func BenchmarkInjectorHandleReads(b *testing.B) {
	for _, c := range []struct {
		name   string
		canary *v1alpha1.CanaryStatus
	}{
		{"no canary", nil},
		{"canary at 10%", &v1alpha1.CanaryStatus{Revision: 5, Weight: 10, Phase: v1alpha1.CanaryPaused}},
		{"canary at 100%", &v1alpha1.CanaryStatus{Revision: 5, Weight: 100, Phase: v1alpha1.CanaryPaused}},
	} {
		b.Run(c.name, func(b *testing.B) {
			facts := cachedFacts{canary: c.canary}
			api := &apiServer{delay: time.Millisecond}
			i := &Injector{Personas: facts, ConfigMaps: facts, Snapshots: facts, APIReader: api}
			req := podCreate(b, "team-a", map[string]string{"prompts.persona-operator.dev/persona": "reviewer", "app": "agent"})
			ctx := context.Background()
			// The reads of the snapshots' bundle.json, once each.
			for n := int64(4); n <= 5; n++ {
				s := benchSnapshot(n)
				if _, err := i.launches().launches(ctx, s.Namespace, s.Name, s.UID); err != nil {
					b.Fatal(err)
				}
			}
			api.gets.Store(0)
			for b.Loop() {
				req.UID = uuid.NewUUID()
				if resp := i.Handle(ctx, req); !resp.Allowed || len(resp.Patches) == 0 || len(resp.Warnings) > 0 {
					b.Fatalf("%+v", resp)
				}
			}
			b.ReportMetric(float64(api.gets.Load())/float64(b.N), "reads/op")
		})
	}
}
