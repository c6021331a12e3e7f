package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/internal/controller/kube"
	"github.com/persona-operator/persona-operator/internal/controller/revisions"
	"github.com/persona-operator/persona-operator/internal/delivery"
)

// BenchmarkFreshPodLists is what the API server and etcd spend on the
// fresh lists of pods that prunes make before deleting a snapshot, per
// Persona pruned: one list per Persona, or one shared by the prunes
// waiting in the namespace (revisions' freshPodLists; about 8 in a fan-out
// at N = 2,000). Each is a consistent read of the pods' metadata, which
// the API server answers once its cache is as new as etcd. The namespace
// holds a labelled pod for a tenth of its Personas. Run it with the
// envtest binaries:
//
//	KUBEBUILDER_ASSETS=$(hack/envtest-binaries.sh) go test -run '^$' -bench FreshPodLists -benchtime 2000x -count 3 ./test/scale
func BenchmarkFreshPodLists(b *testing.B) {
	cfg, procs := benchControlPlane(b)
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		b.Fatal(err)
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		b.Fatal(err)
	}
	pods, err := kube.NewPodMetadataReader(cfg, httpClient)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	const namespace, personas = "prunes", 2000
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		b.Fatal(err)
	}
	name := func(i int64) string { return fmt.Sprintf("agent-%05d", i%personas) }
	for i := int64(0); i < personas; i += 10 {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name(i),
			Labels: map[string]string{delivery.PersonaLabel: name(i), delivery.RevisionLabel: "1"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "agent"}}}}
		if err := c.Create(ctx, pod); err != nil {
			b.Fatal(err)
		}
	}
	for _, shared := range []int64{1, 8} {
		b.Run(fmt.Sprintf("personas-per-list=%d", shared), func(b *testing.B) {
			var next atomic.Int64
			before := procs.cpu()
			b.SetParallelism(8) // 16 on 2 cores: the prunes of the default 16 workers
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					first := next.Add(shared)
					names := make([]string, 0, shared)
					for i := first - shared; i < first; i++ {
						names = append(names, name(i))
					}
					selector, err := revisions.PodsOf(names)
					if err != nil {
						b.Error(err)
						return
					}
					if err := pods.List(ctx, kube.PodMetadataList(), client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			spent := procs.cpu().minus(before)
			pruned := float64(int64(b.N) * shared)
			b.ReportMetric(float64(spent.apiserver)/pruned, "apiserver-ns/persona")
			b.ReportMetric(float64(spent.etcd)/pruned, "etcd-ns/persona")
		})
	}
}
