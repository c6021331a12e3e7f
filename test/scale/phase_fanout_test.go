package main

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/persona-operator/persona-operator/internal/controller/kube"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/test/controlplane"
)

// TestConfigMapTrackersReceiveOnlyWhatTheySelect runs the fan-out's two
// ConfigMap trackers against a real API server: the live ConfigMaps' and
// the snapshots'. Each must receive, in its list and in its watch, only its
// half of the operator's ConfigMaps. An object of the other half is written
// just before one of its own: the API server sends one watch's events in
// order, so once a tracker holds its own object, it would hold the other
// too, had its watch not selected.
func TestConfigMapTrackersReceiveOnlyWhatTheySelect(t *testing.T) {
	controlplane.RequireEnvtest(t)
	env := &envtest.Environment{}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	c, err := client.NewWithWatch(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const ns = "trackers"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	live := func(persona string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: delivery.ConfigMapName(persona),
			Labels: delivery.Labels(persona)}}
	}
	snapshot := func(persona string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: delivery.SnapshotName(persona, 1),
			Labels: delivery.SnapshotLabels(persona, 1)}}
	}
	create := func(objs ...client.Object) {
		t.Helper()
		for _, o := range objs {
			if err := c.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Before the trackers list: one of each, and a ConfigMap of no one's.
	create(live("a"), snapshot("a"), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "someone-elses"}})

	always := func(client.Object) bool { return true }
	start := func(name string, selector labels.Selector) *tracker {
		t.Helper()
		tr, err := track(ctx, c, ns, name, configMapMetadataList, selector, 1000, always)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tr.stop)
		return tr
	}
	liveTracker := start("live", kube.NotSnapshotSelector)
	snapshotTracker := start("snapshots", kube.SnapshotSelector)

	// Through the watches: the other half's object first, then one of the
	// tracker's own.
	create(snapshot("b"), live("b"), live("c"), snapshot("c"))
	holds := func(tr *tracker, names ...string) {
		t.Helper()
		var got []string
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			tr.mu.Lock()
			got = got[:0]
			for name := range tr.state {
				got = append(got, name)
			}
			tr.mu.Unlock()
			slices.Sort(got)
			if slices.Contains(got, names[len(names)-1]) {
				break
			}
		}
		if !slices.Equal(got, names) {
			t.Errorf("tracker %s holds %q, want %q", tr.name, got, names)
		}
	}
	holds(liveTracker, delivery.ConfigMapName("a"), delivery.ConfigMapName("b"), delivery.ConfigMapName("c"))
	holds(snapshotTracker, delivery.SnapshotName("a", 1), delivery.SnapshotName("b", 1), delivery.SnapshotName("c", 1))
}
