package webhook

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/test/controlplane"
	"github.com/persona-operator/persona-operator/test/fixtures"
)

// canaryInjector serves Persona reviewer, stable at revision 1, with a
// canary at revision 2 of the given weight and phase.
func canaryInjector(t *testing.T, weight int32, phase v1alpha1.CanaryPhase) *Injector {
	t.Helper()
	p := &v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Name: "reviewer", Namespace: "team", UID: "u1"},
		Status: v1alpha1.PersonaStatus{CurrentRevision: 1, LatestRevision: 2,
			Canary: &v1alpha1.CanaryStatus{Revision: 2, Weight: weight, Phase: phase}}}
	objs := []runtime.Object{p}
	for n := int64(1); n <= 2; n++ {
		objs = append(objs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: delivery.SnapshotName("reviewer", n), Namespace: "team",
			UID: types.UID(fmt.Sprint("s", n)), Labels: delivery.SnapshotLabels("reviewer", n),
			Annotations:     map[string]string{delivery.GuardrailsAnnotation: "g"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "prompts.persona-operator.dev/v1alpha1", Kind: "Persona", Name: "reviewer", UID: "u1", Controller: new(true)}}}})
	}
	cached := fake.NewClientBuilder().WithScheme(controlplane.Scheme).WithRuntimeObjects(objs...).Build()
	return &Injector{Personas: cached, ConfigMaps: cached, Snapshots: fixtures.ListedSnapshots{Reader: cached}}
}

// injectedTrack is the revision and track labels the injection gave pod of
// review req.
func injectedTrack(t *testing.T, i *Injector, req admission.Request) (revision, track string) {
	t.Helper()
	resp := i.Handle(context.Background(), req)
	if !resp.Allowed {
		t.Fatalf("refused: %v", resp.Result)
	}
	for _, op := range resp.Patches {
		if op.Path == "/metadata/labels/prompts.persona-operator.dev~1revision" {
			revision, _ = op.Value.(string)
		}
		if op.Path == "/metadata/labels/prompts.persona-operator.dev~1track" {
			track, _ = op.Value.(string)
		}
	}
	return revision, track
}

// At weight 10, 1,000 pod creates give between 62 and 138 canary pods
// (four standard deviations of a binomial of 1,000 and 0.1, about the mean
// of 100), each labelled with its revision and track; the same review
// always gets the same choice; an aborted canary gets no pod.
func TestCanaryShareOfNewPods(t *testing.T) {
	i := canaryInjector(t, 10, v1alpha1.CanaryProgressing)
	canaries := 0
	for range 1000 {
		req := launchPod(t, nil)
		req.UID = uuid.NewUUID()
		revision, track := injectedTrack(t, i, req)
		switch {
		case revision == "2" && track == v1alpha1.TrackCanary:
			canaries++
			if again, _ := injectedTrack(t, i, req); again != "2" {
				t.Fatal("the same review got the stable revision the second time")
			}
		case revision == "1" && track == v1alpha1.TrackStable:
		default:
			t.Fatalf("revision %q, track %q", revision, track)
		}
	}
	t.Logf("%d canary pods of 1,000 at weight 10", canaries)
	if canaries < 62 || canaries > 138 {
		t.Errorf("%d canary pods of 1,000 at weight 10, want 62 to 138", canaries)
	}

	aborted := canaryInjector(t, 100, v1alpha1.CanaryAborted)
	for range 50 {
		req := launchPod(t, nil)
		req.UID = uuid.NewUUID()
		if revision, track := injectedTrack(t, aborted, req); revision != "1" || track != v1alpha1.TrackStable {
			t.Fatalf("after an abort: revision %q, track %q", revision, track)
		}
	}
}

// The pods a canary gets read nothing of the API server but its snapshot's
// bundle.json, once, as the current revision's pods do: the controller
// keeps the snapshot of a canary that runs, as it keeps the current one's.
// A pod whose template names another revision (an aborted canary's, here)
// still reads whether its snapshot is there.
func TestCanaryPodsReadTheAPIServerOnce(t *testing.T) {
	var snapshots []client.Object
	for n := int64(1); n <= 2; n++ {
		snapshots = append(snapshots, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: delivery.SnapshotName("reviewer", n),
			Namespace: "team", UID: types.UID(fmt.Sprint("s", n))},
			Data: map[string]string{"bundle.json": `{"persona":{"harness":"claude"}}`}})
	}
	api := &countingReader{Reader: fake.NewClientBuilder().WithScheme(controlplane.Scheme).WithObjects(snapshots...).Build()}
	i := canaryInjector(t, 100, v1alpha1.CanaryProgressing)
	i.APIReader = api
	for range 20 {
		req := launchPod(t, nil)
		req.UID = uuid.NewUUID()
		resp := i.Handle(context.Background(), req)
		if revision, _ := injectedTrack(t, i, req); revision != "2" || len(resp.Warnings) > 0 {
			t.Fatalf("revision %q, warnings %q", revision, resp.Warnings)
		}
	}
	if n := api.gets.Load(); n != 1 {
		t.Errorf("20 canary pods, each reviewed twice, read the API server %d times, want once (the canary's bundle.json)", n)
	}

	api.gets.Store(0)
	aborted := canaryInjector(t, 100, v1alpha1.CanaryAborted)
	aborted.APIReader = api
	req := launchPod(t, map[string]string{delivery.RevisionAnnotation: "2"})
	req.UID = uuid.NewUUID()
	if revision, track := injectedTrack(t, aborted, req); revision != "2" || track != v1alpha1.TrackStable {
		t.Fatalf("a pod that names revision 2 after its canary's abort: revision %q, track %q", revision, track)
	}
	if n := api.gets.Load(); n != 2 {
		t.Errorf("a pod that names the aborted canary's revision read the API server %d times, want twice (whether its snapshot is there, and its bundle.json)", n)
	}
}
