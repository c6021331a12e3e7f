package persona

import (
	"errors"
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/render"
	"github.com/persona-operator/persona-operator/test/fixtures"
)

func TestDeliverStep(t *testing.T) {
	foreignOwner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "other", UID: "uid-other",
		Controller: new(true)}
	cases := []struct {
		name string
		// existing is persona-p before the delivery, given the persona
		// and the ConfigMap the render would deliver; nil: none.
		existing func(p *v1alpha1.Persona, desired *corev1.ConfigMap) *corev1.ConfigMap
		// announce asks for the data the update replaced.
		announce                 bool
		wantCreates, wantUpdates int
		wantReason               string
		wantPrevious             map[string]string
		wantData                 bool // persona-p holds the render after
		wantController           string
		wantStaleFallbackRemoved bool
		// wantRevision is the revision the ConfigMap is annotated with after; 0: none.
		wantRevision int64
	}{{
		name:        "created when missing",
		wantCreates: 1, wantReason: v1alpha1.RenderedReason, wantData: true, wantController: "p", wantRevision: 1,
	}, {
		name: "left alone when current",
		existing: func(p *v1alpha1.Persona, desired *corev1.ConfigMap) *corev1.ConfigMap {
			cm := ownedBy(p, desired)
			cm.Annotations[delivery.RevisionAnnotation] = "4"
			cm.Data[render.RevisionKey] = `{"revision":4,"contentHash":"` + desired.Annotations[delivery.ContentHashAnnotation] + `"}`
			return cm
		},
		wantReason: v1alpha1.RenderedReason, wantData: true, wantController: "p", wantRevision: 4,
	}, {
		name: "numbered 1 when it holds the render from before revisions",
		existing: func(p *v1alpha1.Persona, desired *corev1.ConfigMap) *corev1.ConfigMap {
			return ownedBy(p, desired)
		},
		wantUpdates: 1, wantReason: v1alpha1.RenderedReason, wantData: true, wantController: "p", wantRevision: 1,
	}, {
		name: "updated when stale, with the data it replaced",
		existing: func(p *v1alpha1.Persona, desired *corev1.ConfigMap) *corev1.ConfigMap {
			cm := ownedBy(p, desired)
			cm.Data = map[string]string{"system-prompt.md": "Old.\n"}
			cm.Annotations[delivery.ContentHashAnnotation] = "sha256:old"
			return cm
		},
		announce:    true,
		wantUpdates: 1, wantReason: v1alpha1.RenderedReason, wantData: true, wantController: "p", wantRevision: 1,
		wantPrevious: map[string]string{"system-prompt.md": "Old.\n"},
	}, {
		name: "a fallback's annotation cleared by a good render",
		existing: func(p *v1alpha1.Persona, desired *corev1.ConfigMap) *corev1.ConfigMap {
			cm := ownedBy(p, desired)
			cm.Annotations[delivery.FallbackAnnotation] = delivery.FallbackGuardrailsOnly
			return cm
		},
		wantUpdates: 1, wantReason: v1alpha1.RenderedReason, wantData: true, wantController: "p", wantStaleFallbackRemoved: true, wantRevision: 1,
	}, {
		name: "never touched when another owner controls it",
		existing: func(_ *v1alpha1.Persona, desired *corev1.ConfigMap) *corev1.ConfigMap {
			cm := desired.DeepCopy()
			cm.Data = map[string]string{"other": "data"}
			cm.OwnerReferences = []metav1.OwnerReference{foreignOwner}
			return cm
		},
		wantReason: v1alpha1.ConfigMapConflictReason, wantController: "other",
	}, {
		name: "a foreign ConfigMap without the operator's label is a conflict too",
		existing: func(_ *v1alpha1.Persona, desired *corev1.ConfigMap) *corev1.ConfigMap {
			return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: desired.Name}, Data: map[string]string{"other": "data"}}
		},
		wantReason: v1alpha1.ConfigMapConflictReason,
	}, {
		name: "an orphan of the operator's adopted and written",
		existing: func(_ *v1alpha1.Persona, desired *corev1.ConfigMap) *corev1.ConfigMap {
			cm := desired.DeepCopy()
			cm.Data = map[string]string{"system-prompt.md": "Orphaned.\n"}
			return cm
		},
		wantUpdates: 1, wantReason: v1alpha1.RenderedReason, wantData: true, wantController: "p", wantRevision: 1,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := barePersona("p", "Hello")
			s := newSteps(t, p)
			attempt := renderOnce(t, s, p)
			desired := delivery.ConfigMap(p.Name, p.Namespace, attempt.output)
			if tc.existing != nil {
				if err := s.cluster.Create(t.Context(), tc.existing(p, desired)); err != nil {
					t.Fatal(err)
				}
			}

			o, err := s.deliver(t.Context(), p, attempt, tc.announce)
			if err != nil {
				t.Fatalf("deliver: %v", err)
			}
			if o.reason != tc.wantReason {
				t.Errorf("reason = %s (%s), want %s", o.reason, o.message, tc.wantReason)
			}
			if s.writer.creates != tc.wantCreates || s.writer.updates != tc.wantUpdates {
				t.Errorf("%d creates and %d updates, want %d and %d", s.writer.creates, s.writer.updates, tc.wantCreates, tc.wantUpdates)
			}
			if wrote := tc.wantCreates+tc.wantUpdates > 0; o.wrote != wrote {
				t.Errorf("wrote = %v, want %v", o.wrote, wrote)
			}
			if !maps.Equal(o.previous, tc.wantPrevious) {
				t.Errorf("previous = %v, want %v", o.previous, tc.wantPrevious)
			}
			cm := configMapOf(t, s, p)
			if got := delivery.Revision(cm.Annotations); got != tc.wantRevision {
				t.Errorf("revision annotation = %d, want %d", got, tc.wantRevision)
			}
			content := maps.Clone(cm.Data)
			delete(content, render.RevisionKey)
			if holds := maps.Equal(content, attempt.output.Data); holds != tc.wantData {
				t.Errorf("the ConfigMap holds the render: %v, want %v", holds, tc.wantData)
			}
			if got := controllerName(cm); got != tc.wantController {
				t.Errorf("controller = %q, want %q", got, tc.wantController)
			}
			if _, ok := cm.Annotations[delivery.FallbackAnnotation]; ok && tc.wantStaleFallbackRemoved {
				t.Error("the fallback annotation is still there")
			}
			if tc.wantData && cm.Annotations[delivery.ContentHashAnnotation] != attempt.output.Hash {
				t.Errorf("content hash %s, want %s", cm.Annotations[delivery.ContentHashAnnotation], attempt.output.Hash)
			}
		})
	}
}

// A ConfigMap the controller wrote is known at the version it wrote: the
// next delivery of the same render neither reads its data nor writes it,
// and the write's own watch event needs no render.
func TestDeliverStepKnowsItsOwnWrite(t *testing.T) {
	p := barePersona("p", "Hello")
	s := newSteps(t, p)
	first := deliverOnce(t, s, p)
	first.wrote = false
	cm := configMapOf(t, s, p)
	if !s.writes.holds(cm) {
		t.Error("the event of the controller's own write is taken for someone else's")
	}
	again, err := s.deliver(t.Context(), p, first, true)
	if err != nil || again.wrote || s.writer.creates+s.writer.updates != 1 {
		t.Errorf("second delivery: wrote %v, %d writes, %v", again.wrote, s.writer.creates+s.writer.updates, err)
	}
	cm.Data["system-prompt.md"] = "Someone else's."
	if err := s.cluster.Update(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	if s.writes.holds(cm) {
		t.Error("someone else's write is taken for the controller's own")
	}
	if o, err := s.deliver(t.Context(), p, first, false); err != nil || !o.wrote || s.writer.updates != 1 {
		t.Errorf("someone else's write is not repaired: wrote %v, %d updates, %v", o.wrote, s.writer.updates, err)
	}
}

// The cache may still hold a Persona that the API server holds as being
// deleted (kubectl delete --cascade=orphan), or no longer holds: its
// orphan is adopted only when the API server still holds it, as it is;
// otherwise the delivery waits for the cache, writing nothing.
func TestDeliverStepAdoptsAnOrphanOnlyForAPersonaTheAPIServerKeeps(t *testing.T) {
	deleting := metav1.Now()
	cases := []struct {
		name string
		// onServer is the Persona the API server holds, given the cached
		// one; nil: none.
		onServer func(p *v1alpha1.Persona) *v1alpha1.Persona
		adopted  bool
	}{{
		name:     "kept as it is: adopted",
		onServer: func(p *v1alpha1.Persona) *v1alpha1.Persona { return p.DeepCopy() },
		adopted:  true,
	}, {
		name: "being deleted with its dependents orphaned",
		onServer: func(p *v1alpha1.Persona) *v1alpha1.Persona {
			p = p.DeepCopy()
			p.DeletionTimestamp, p.Finalizers = &deleting, []string{metav1.FinalizerOrphanDependents}
			return p
		},
	}, {
		name: "gone",
	}, {
		name: "made again under another UID",
		onServer: func(p *v1alpha1.Persona) *v1alpha1.Persona {
			p = p.DeepCopy()
			p.UID = "uid-persona-p-again"
			return p
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := barePersona("p", "Hello")
			s := newSteps(t, p)
			attempt := renderOnce(t, s, p)
			orphan := delivery.ConfigMap(p.Name, p.Namespace, attempt.output)
			orphan.Data = map[string]string{"system-prompt.md": "Orphaned.\n"}
			if err := s.cluster.Create(t.Context(), orphan); err != nil {
				t.Fatal(err)
			}
			// The same orphan, at the same version, beside what the API
			// server holds of p.
			s.apiServerHolds(p, tc.onServer, orphan)

			o, err := s.deliver(t.Context(), p, attempt, false)
			behind := (*cachesBehindError)(nil)
			switch {
			case tc.adopted && (err != nil || o.reason != v1alpha1.RenderedReason):
				t.Errorf("deliver: %s (%s), %v; want it adopted and rendered", o.reason, o.message, err)
			case !tc.adopted && !errors.As(err, &behind):
				t.Errorf("deliver: %s (%s), %v; want it held back for the cache", o.reason, o.message, err)
			}
			want, wantUpdates := "", 0
			if tc.adopted {
				want, wantUpdates = "p", 1
			}
			if got := controllerName(configMapOf(t, s, p)); got != want || s.writer.updates != wantUpdates {
				t.Errorf("controller %q after %d updates, want %q after %d", got, s.writer.updates, want, wantUpdates)
			}
		})
	}
}

// apiServerHolds has the API server the reconciler asks hold objs and,
// unless onServer is nil, what onServer makes of p; nothing else.
func (s *steps) apiServerHolds(p *v1alpha1.Persona, onServer func(*v1alpha1.Persona) *v1alpha1.Persona, objs ...client.Object) {
	if onServer != nil {
		objs = append(objs, onServer(p))
	}
	s.live.Client = fixtures.ManagersAPIServer{Client: fakeCluster(objs...)}
}

func ownedBy(p *v1alpha1.Persona, cm *corev1.ConfigMap) *corev1.ConfigMap {
	cm = cm.DeepCopy()
	cm.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(p, v1alpha1.GroupVersion.WithKind(v1alpha1.PersonaKind))}
	return cm
}

func controllerName(obj metav1.Object) string {
	if ref := metav1.GetControllerOf(obj); ref != nil {
		return ref.Name
	}
	return ""
}
