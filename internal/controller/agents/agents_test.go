package agents

import (
	"context"
	"reflect"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/controller/kube"
	"github.com/persona-operator/persona-operator/internal/delivery"
)

func agentPodMeta(name string, labels map[string]string) metav1.PartialObjectMetadata {
	return metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a", Labels: labels}}
}

func onRevision(n string) map[string]string {
	return map[string]string{"prompts.persona-operator.dev/persona": "reviewer", "prompts.persona-operator.dev/revision": n}
}

func TestAgentsOf(t *testing.T) {
	deleting := agentPodMeta("d", onRevision("2"))
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	pods := []metav1.PartialObjectMetadata{
		agentPodMeta("a", onRevision("2")), agentPodMeta("b", onRevision("2")), agentPodMeta("c", onRevision("2")),
		agentPodMeta("e", onRevision("1")),
		deleting,
		agentPodMeta("live", map[string]string{"prompts.persona-operator.dev/persona": "reviewer"}),
		agentPodMeta("forged", onRevision("02")),
	}
	want := &v1alpha1.AgentsStatus{Current: 3, Revisions: []v1alpha1.RevisionAgents{{Revision: 2, Pods: 3}, {Revision: 1, Pods: 1}}}
	if got := agentsOf(pods, 2); !reflect.DeepEqual(got, want) {
		t.Errorf("agents = %+v, want %+v", got, want)
	}
	if got := agentsOf(pods, 3); got.Current != 0 {
		t.Errorf("on revision 3 (no pod yet): %d", got.Current)
	}
	if got := agentsOf(pods[5:6], 2); got != nil {
		t.Errorf("live pods alone: %+v, want none", got)
	}
	// Labels can be rewritten after admission: the count stays bounded.
	var many []metav1.PartialObjectMetadata
	for n := 1; n <= 100; n++ {
		many = append(many, agentPodMeta(strconv.Itoa(n), onRevision(strconv.Itoa(n))))
	}
	got := agentsOf(many, 100)
	if len(got.Revisions) != 32 || got.Revisions[0].Revision != 100 || got.Revisions[31].Revision != 69 || got.Current != 1 {
		t.Errorf("100 revisions: %d entries, %+v first, %+v last", len(got.Revisions), got.Revisions[0], got.Revisions[len(got.Revisions)-1])
	}
}

func agentPod(name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a", Labels: labels}}
}

// The controller writes status.agents at once, then at most once per
// interval, coming back when the interval is over.
func TestAgentsWriteAtMostOncePerInterval(t *testing.T) {
	persona := &v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Name: "reviewer", Namespace: "team-a"},
		Status: v1alpha1.PersonaStatus{CurrentRevision: 2}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(persona, agentPod("a", onRevision("2"))).
		WithStatusSubresource(&v1alpha1.Persona{}).Build()
	now := time.Unix(1000, 0)
	r := NewReconciler(c, c, 30*time.Second)
	r.now = func() time.Time { return now }
	key := types.NamespacedName{Namespace: "team-a", Name: "reviewer"}
	agents := func() *v1alpha1.AgentsStatus {
		var p v1alpha1.Persona
		if err := c.Get(context.Background(), key, &p); err != nil {
			t.Fatal(err)
		}
		return p.Status.Agents
	}
	reconcile := func() ctrl.Result {
		res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	if res := reconcile(); res.RequeueAfter != 0 || agents().Current != 1 {
		t.Fatalf("first count: %+v, agents %+v", res, agents())
	}
	if err := c.Create(context.Background(), agentPod("b", onRevision("2"))); err != nil {
		t.Fatal(err)
	}
	now = now.Add(10 * time.Second)
	if res := reconcile(); res.RequeueAfter != 20*time.Second || agents().Current != 1 {
		t.Errorf("10 s later: %+v, agents %+v; want a return in 20 s and no write", res, agents())
	}
	now = now.Add(20 * time.Second)
	if res := reconcile(); res.RequeueAfter != 0 || agents().Current != 2 {
		t.Errorf("30 s later: %+v, agents %+v; want 2 written", res, agents())
	}
	// Nothing changed: no write, no return.
	if res := reconcile(); res.RequeueAfter != 0 {
		t.Errorf("unchanged: %+v", res)
	}
}

// A pod's status change moves its metadata's resourceVersion, not its
// count: only a label change or the start of its deletion recounts.
func TestAgentsRecountOnlyOnCountedChanges(t *testing.T) {
	pod := func(rv, revision string, deleting bool) *metav1.PartialObjectMetadata {
		m := kube.PodMetadata()
		m.Name, m.ResourceVersion = "agent", rv
		m.Labels = map[string]string{delivery.PersonaLabel: "p", delivery.RevisionLabel: revision}
		if deleting {
			m.DeletionTimestamp = new(metav1.Now())
		}
		return m
	}
	for _, c := range []struct {
		what     string
		old, new *metav1.PartialObjectMetadata
		want     bool
	}{
		{"a status change", pod("1", "2", false), pod("2", "2", false), false},
		{"a new revision label", pod("1", "2", false), pod("2", "3", false), true},
		{"its deletion begun", pod("1", "2", false), pod("2", "2", true), true},
	} {
		if got := countedChange.Update(event.TypedUpdateEvent[*metav1.PartialObjectMetadata]{ObjectOld: c.old, ObjectNew: c.new}); got != c.want {
			t.Errorf("%s: recount %v, want %v", c.what, got, c.want)
		}
	}
}

var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(v1alpha1.AddToScheme(s))
	return s
}()
