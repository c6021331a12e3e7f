package persona

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/render"
)

// staleReads answers a read of one object with an older copy of it, as
// caches filled from a lagging watch cache do.
type staleReads struct {
	client.Client
	stale client.Object
}

func (c staleReads) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if key == client.ObjectKeyFromObject(c.stale) {
		if p, ok := obj.(*v1alpha1.Persona); ok {
			c.stale.(*v1alpha1.Persona).DeepCopyInto(p)
			return nil
		}
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// A render from caches that hold a Persona older than the API server does
// delivers nothing: the live ConfigMap keeps the newer content and the
// status its revision, until the caches catch up.
func TestCachesBehindDeliverNothing(t *testing.T) {
	p := barePersona("p", "Hello")
	s := newSteps(t, p)
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(p)}
	if _, err := s.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	s.get(t, p)
	stale := p.DeepCopy()
	p.Spec.SystemPrompt.Extensions[0].Template = "Hello again"
	p.Generation = 2
	if err := s.cluster.Update(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	// Its status pass, which the edit's own render does not defer.
	s.get(t, p)
	if p.Status.CurrentRevision != 2 {
		t.Fatalf("currentRevision %d after the edit, want 2", p.Status.CurrentRevision)
	}
	writes := s.writer.creates + s.writer.updates

	s.cached.Client = staleReads{Client: s.cluster, stale: stale}
	res, err := s.Reconcile(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter != cachesBehindRetry {
		t.Errorf("requeued after %s, want %s", res.RequeueAfter, cachesBehindRetry)
	}
	if got := s.writer.creates + s.writer.updates - writes; got != 0 {
		t.Errorf("%d ConfigMap writes from the stale Persona, want 0", got)
	}
	live := configMapOf(t, s, p)
	if !strings.Contains(live.Data[render.SystemPromptKey], "Hello again") || live.Annotations[delivery.RevisionAnnotation] != "2" {
		t.Errorf("live ConfigMap at revision %s holds %q, want revision 2 with the edit", live.Annotations[delivery.RevisionAnnotation], live.Data[render.SystemPromptKey])
	}
	s.get(t, p)
	if p.Status.CurrentRevision != 2 || !meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ReadyCondition) {
		t.Errorf("status currentRevision %d, Ready %v: want 2 and True, untouched", p.Status.CurrentRevision, p.Status.Conditions)
	}
}

// A Persona deleted, or being deleted in the foreground, whose ConfigMap
// the garbage collector deleted, has no ConfigMap made again, whether the
// cache has heard of the deletion or not, nor of the status patch that
// named its revision: the reconcile writes nothing, the status neither, and
// fails nothing. From a cache behind, it is tried again shortly. A
// ConfigMap deleted by hand of a Persona the API server keeps is made
// again, and a new Persona's first one asks the API server nothing.
func TestDeletedPersonaHasNoConfigMapMadeAgain(t *testing.T) {
	for _, tc := range []struct {
		name string
		// delivered has the first reconcile make p's ConfigMap, which is
		// then deleted; else p is new.
		delivered bool
		// cachedNew has the cache hold p as it was before that reconcile.
		cachedNew bool
		// onServer is the Persona the API server holds, given p; nil: none.
		onServer func(p *v1alpha1.Persona) *v1alpha1.Persona
		// deleting deletes p in the foreground.
		deleting bool
		created  bool
		requeue  time.Duration
	}{{
		name:      "deleted, the cache behind",
		delivered: true,
		requeue:   cachesBehindRetry,
	}, {
		name:      "deleted, the cache behind its status patch too",
		delivered: true, cachedNew: true,
		requeue: cachesBehindRetry,
	}, {
		name:      "made again under another UID, the cache behind",
		delivered: true,
		onServer: func(p *v1alpha1.Persona) *v1alpha1.Persona {
			p = p.DeepCopy()
			p.UID = "uid-persona-p-again"
			return p
		},
		requeue: cachesBehindRetry,
	}, {
		name:      "being deleted in the foreground",
		delivered: true,
		onServer:  func(p *v1alpha1.Persona) *v1alpha1.Persona { return p.DeepCopy() },
		deleting:  true,
	}, {
		name:      "kept as it is: made again",
		delivered: true,
		onServer:  func(p *v1alpha1.Persona) *v1alpha1.Persona { return p.DeepCopy() },
		created:   true,
	}, {
		// The API server, which holds no Persona, is not asked.
		name:    "new: made without asking",
		created: true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p := barePersona("p", "Hello")
			// The API server's own finalizer, which a foreground deletion
			// keeps until the dependents are gone.
			p.Finalizers = []string{metav1.FinalizerDeleteDependents}
			s := newSteps(t, p)
			fresh := p.DeepCopy()
			req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(p)}
			if tc.delivered {
				if _, err := s.Reconcile(t.Context(), req); err != nil {
					t.Fatal(err)
				}
				if err := s.cluster.Delete(t.Context(), configMapOf(t, s, p)); err != nil {
					t.Fatal(err)
				}
			}
			s.get(t, p)
			if tc.deleting {
				if err := s.cluster.Delete(t.Context(), p, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
					t.Fatal(err)
				}
				s.get(t, p)
			}
			before := p.DeepCopy()
			s.apiServerHolds(p, tc.onServer)
			if tc.cachedNew {
				s.cached.Client = staleReads{Client: s.cluster, stale: fresh}
			}
			creates := s.writer.creates

			res, err := s.Reconcile(t.Context(), req)
			// The live ConfigMap and the snapshots alike.
			made := s.writer.creates - creates
			switch {
			case tc.created && err != nil:
				t.Errorf("reconcile: %v", err)
			case tc.created:
				configMapOf(t, s, p)
			case err != nil || res.RequeueAfter != tc.requeue || made != 0:
				t.Errorf("reconcile: requeued after %s, %v, %d ConfigMaps made; want after %s, no error, none made", res.RequeueAfter, err, made, tc.requeue)
			}
			if s.get(t, p); !tc.created && !equality.Semantic.DeepEqual(p.Status, before.Status) {
				t.Errorf("status written while held back:\n%+v\nwas\n%+v", p.Status, before.Status)
			}
		})
	}
}

// A layer deleted and made again starts at generation 1, lower than the
// revision recorded: the API server holds no newer one, and its content is
// delivered.
func TestInputMadeAgainIsDelivered(t *testing.T) {
	p := barePersona("p", "Hello", "style")
	layer := appendLayer("style", "Be brief.")
	layer.Generation = 3
	s := newSteps(t, p, layer)
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(p)}
	if _, err := s.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	s.get(t, layer)
	if err := s.cluster.Delete(t.Context(), layer); err != nil {
		t.Fatal(err)
	}
	again := appendLayer("style", "Be terse.")
	if err := s.cluster.Create(t.Context(), again); err != nil {
		t.Fatal(err)
	}
	s.get(t, again)
	if again.Generation >= 3 {
		t.Fatalf("the layer made again is at generation %d, want below 3", again.Generation)
	}
	for pass := range 2 {
		if _, err := s.Reconcile(t.Context(), req); err != nil {
			t.Fatalf("pass %d: %v", pass, err)
		}
	}
	if live := configMapOf(t, s, p); !strings.Contains(live.Data[render.SystemPromptKey], "Be terse.") {
		t.Errorf("live ConfigMap holds %q, want the layer made again", live.Data[render.SystemPromptKey])
	}
}
