package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

// BenchmarkStatusPatchByHistory is what the API server spends on a status
// patch of a new revision, as the controller sends it in a fan-out, by the
// length of status.history the Persona carries: a merge patch replaces the
// list whole, and the API server decodes, validates, stores and sends to
// its watchers the whole object. A cache watches the Personas, as the
// manager's does. Run it with the envtest binaries:
//
//	KUBEBUILDER_ASSETS=$(hack/envtest-binaries.sh) go test -run '^$' -bench StatusPatchByHistory -benchtime 2000x -count 3 ./test/scale
func BenchmarkStatusPatchByHistory(b *testing.B) {
	cfg, procs := benchControlPlane(b)
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	watcher, err := cache.New(cfg, cache.Options{Scheme: scheme})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := watcher.GetInformer(ctx, &v1alpha1.Persona{}); err != nil {
		b.Fatal(err)
	}
	go func() { _ = watcher.Start(ctx) }()

	const namespace, personas = "history", 500
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		b.Fatal(err)
	}
	for i := range personas {
		p := &v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("p-%03d", i)}}
		if err := c.Create(ctx, p); err != nil {
			b.Fatal(err)
		}
		// The status of a rendered Persona of the harness's world: six
		// sections, six dependencies, Ready.
		if err := c.Status().Patch(ctx, p, client.RawPatch(types.MergePatchType, renderedStatusPatch(b, 10, 10))); err != nil {
			b.Fatal(err)
		}
	}
	var revision atomic.Int64
	revision.Store(10)
	for _, history := range []int{2, 7, 10} {
		b.Run(fmt.Sprintf("history=%d", history), func(b *testing.B) {
			var next atomic.Int64
			before := procs.cpu().apiserver
			b.SetParallelism(8) // 16 workers on 2 cores, as the controller's
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := next.Add(1) % personas
					p := &v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("p-%03d", i)}}
					if err := c.Status().Patch(ctx, p, client.RawPatch(types.MergePatchType, renderedStatusPatch(b, revision.Add(1), history))); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(procs.cpu().apiserver-before)/float64(b.N), "apiserver-ns/op")
		})
	}
}

// renderedStatusPatch is the merge patch of a rendered Persona's status at
// revision n, with the last history revisions.
func renderedStatusPatch(b *testing.B, n int64, history int) []byte {
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	st := v1alpha1.PersonaStatus{ObservedGeneration: 1, ConfigMapName: "persona-p", RenderedBytes: 14000, CurrentRevision: n, LatestRevision: n,
		Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Rendered", ObservedGeneration: 1, LastTransitionTime: now,
			Message: "rendered revision " + strconv.FormatInt(n, 10) + " into ConfigMap persona-p (14000 bytes)"}}}
	for i := range 6 {
		st.Sections = append(st.Sections, v1alpha1.RenderedSection{Name: fmt.Sprintf("section-%d", i), Origin: "PromptLayer/team-notes", Bytes: 2000})
		st.Dependencies = append(st.Dependencies, v1alpha1.Dependency{Kind: v1alpha1.PromptLayerKind, Name: fmt.Sprintf("layer-%d", i)})
	}
	for k := n - int64(history) + 1; k <= n; k++ {
		st.History = append(st.History, v1alpha1.RevisionHistoryEntry{Revision: k, ContentHash: fmt.Sprintf("sha256:%064x", k), Time: now,
			Cause: v1alpha1.RevisionInput{Kind: "PromptPlatform", Name: "default", Generation: k, ResourceVersion: strconv.FormatInt(1_000_000+k, 10)}})
	}
	raw, err := json.Marshal(map[string]any{"status": st})
	if err != nil {
		b.Fatal(err)
	}
	return raw
}
