package persona

import (
	"errors"
	"slices"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/resolve"
)

func TestResolveStep(t *testing.T) {
	cases := []struct {
		name    string
		objs    []client.Object
		persona *v1alpha1.Persona
		// wantMissing are the references the resolve found missing, and
		// wantWaiting what the Persona is recorded waiting for.
		wantMissing []string
		wantWaiting []objectRef
		wantDeps    []v1alpha1.Dependency
	}{{
		name:     "every reference there",
		objs:     []client.Object{appendLayer("style", "Be brief.")},
		persona:  barePersona("p", "Hello", "style"),
		wantDeps: []v1alpha1.Dependency{{Kind: "PromptLayer", Name: "style"}},
	}, {
		name:        "a missing layer, awaited and listed as a dependency",
		persona:     barePersona("p", "Hello", "absent"),
		wantMissing: []string{"PromptLayer/absent"},
		wantWaiting: []objectRef{{Kind: "PromptLayer", Namespace: ns, Name: "absent"}},
		wantDeps:    []v1alpha1.Dependency{{Kind: "PromptLayer", Name: "absent"}},
	}, {
		// A missing parent is skipped, so that every missing reference is named at once.
		name:        "a missing parent and layer, awaited in kind and name order",
		objs:        []client.Object{appendLayer("style", "Be brief.")},
		persona:     inheriting("p", "Hello", []string{"mom"}, "zeta", "style"),
		wantMissing: []string{"Persona/mom", "PromptLayer/zeta"},
		wantWaiting: []objectRef{{Kind: "Persona", Namespace: ns, Name: "mom"}, {Kind: "PromptLayer", Namespace: ns, Name: "zeta"}},
		wantDeps:    []v1alpha1.Dependency{{Kind: "Persona", Name: "mom"}, {Kind: "PromptLayer", Name: "style"}, {Kind: "PromptLayer", Name: "zeta"}},
	}, {
		name: "a ClusterPromptLayer makes the Namespace and the layers it selects dependencies",
		objs: []client.Object{appendLayer("style", "Be brief."), &v1alpha1.ClusterPromptLayer{
			ObjectMeta: clusterLayerMeta("guard"), Spec: v1alpha1.ClusterPromptLayerSpec{Template: "Guard."}}},
		persona: barePersona("p", "Hello", "style"),
		wantDeps: []v1alpha1.Dependency{{Kind: "ClusterPromptLayer", Name: "guard"}, {Kind: "Namespace", Name: ns},
			{Kind: "PromptLayer", Name: "style"}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newSteps(t, append(tc.objs, tc.persona)...)
			res, _, _, err := s.resolve(t.Context(), tc.persona)
			var missing []string
			var notFound *resolve.NotFoundError
			if errors.As(err, &notFound) {
				for _, m := range notFound.Missing {
					missing = append(missing, m.Kind+"/"+m.Name)
				}
			} else if err != nil {
				t.Fatalf("resolve: %v", err)
			}
			if !slices.Equal(missing, tc.wantMissing) {
				t.Errorf("missing = %v, want %v", missing, tc.wantMissing)
			}
			if got := s.waiting.byPersona[client.ObjectKeyFromObject(tc.persona)]; !slices.Equal(got, tc.wantWaiting) {
				t.Errorf("waiting for %v, want %v", got, tc.wantWaiting)
			}
			if !slices.Equal(res.Dependencies, tc.wantDeps) {
				t.Errorf("dependencies = %v, want %v", res.Dependencies, tc.wantDeps)
			}
		})
	}
}

// A reference that arrives is no longer awaited on the next resolve.
func TestResolveStepForgetsAnArrivedReference(t *testing.T) {
	p := barePersona("p", "Hello", "later")
	s := newSteps(t, p)
	if _, _, _, err := s.resolve(t.Context(), p); err == nil {
		t.Fatal("resolved with its layer missing")
	}
	ref := objectRef{Kind: "PromptLayer", Namespace: ns, Name: "later"}
	if got := s.waiting.waiters(ref); !slices.Equal(got, []string{"p"}) {
		t.Fatalf("waiters of the missing layer = %v, want [p]", got)
	}
	if err := s.cluster.Create(t.Context(), appendLayer("later", "Later.")); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := s.resolve(t.Context(), p); err != nil {
		t.Fatalf("resolve once the layer arrived: %v", err)
	}
	if got := s.waiting.waiters(ref); len(got) != 0 {
		t.Errorf("still waiting: %v", got)
	}
}

// The inputs change with what a render reads (a layer's spec), and not
// with what it does not (a layer's status).
func TestResolveStepInputs(t *testing.T) {
	p := barePersona("p", "Hello", "style")
	l := appendLayer("style", "Be brief.")
	s := newSteps(t, p, l)
	_, first, _, err := s.resolve(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	s.get(t, l)
	l.Status.ObservedGeneration = 1
	if err := s.cluster.Status().Update(t.Context(), l); err != nil {
		t.Fatal(err)
	}
	if _, again, _, _ := s.resolve(t.Context(), p); again != first {
		t.Error("a status write of a layer changed the inputs")
	}
	s.get(t, l)
	l.Generation++
	if err := s.cluster.Update(t.Context(), l); err != nil {
		t.Fatal(err)
	}
	if _, changed, _, _ := s.resolve(t.Context(), p); changed == first {
		t.Error("a new generation of a layer left the inputs as they were")
	}
}
