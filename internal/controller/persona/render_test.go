package persona

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

func TestRenderStep(t *testing.T) {
	cases := []struct {
		name    string
		objs    []client.Object
		persona *v1alpha1.Persona
		// wantReason and wantMessage are the outcome's; wantPrompt is
		// system-prompt.md of a render.
		wantReason, wantMessage, wantPrompt string
	}{{
		name:       "the one extension",
		persona:    barePersona("p", "Hello"),
		wantReason: v1alpha1.RenderedReason, wantPrompt: "Hello\n",
	}, {
		name:       "an appended layer after a blank line",
		objs:       []client.Object{appendLayer("style", "Be brief.")},
		persona:    barePersona("p", "Hello", "style"),
		wantReason: v1alpha1.RenderedReason, wantPrompt: "Hello\n\nBe brief.\n",
	}, {
		// Extensions in chain order, the parent's first.
		name:       "a parent's extension before the child's",
		objs:       []client.Object{barePersona("mom", "Mom")},
		persona:    withExtension(inheriting("p", "Hello", []string{"mom"}), "own", "Child"),
		wantReason: v1alpha1.RenderedReason, wantPrompt: "Mom\n\nChild\n",
	}, {
		// An id defined again later replaces the earlier template.
		name:       "a child's extension of its parent's id",
		objs:       []client.Object{barePersona("mom", "Mom")},
		persona:    inheriting("p", "Child", []string{"mom"}),
		wantReason: v1alpha1.RenderedReason, wantPrompt: "Child\n",
	}, {
		name:       "a missing layer",
		persona:    barePersona("p", "Hello", "absent"),
		wantReason: v1alpha1.ReferenceNotFoundReason, wantMessage: `PromptLayer "absent" (referenced by persona "p") not found`,
	}, {
		name:       "an inheritance cycle",
		objs:       []client.Object{inheriting("b", "B", []string{"a"})},
		persona:    inheriting("a", "A", []string{"b"}),
		wantReason: v1alpha1.InheritanceCycleReason, wantMessage: "inheritance cycle: a -> b -> a",
	}, {
		name:       "a template that fails",
		persona:    barePersona("p", `{{ fail "broken on purpose" }}`),
		wantReason: v1alpha1.RenderFailedReason,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newSteps(t, append(tc.objs, tc.persona)...)
			o, err := s.tryRender(t.Context(), tc.persona)
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			if o.reason != tc.wantReason {
				t.Fatalf("reason = %s (%s), want %s", o.reason, o.message, tc.wantReason)
			}
			if tc.wantMessage != "" && o.message != tc.wantMessage {
				t.Errorf("message = %q, want %q", o.message, tc.wantMessage)
			}
			if tc.wantReason != v1alpha1.RenderedReason {
				if o.output != nil {
					t.Error("a failure has output")
				}
				return
			}
			if got := o.output.Data["system-prompt.md"]; got != tc.wantPrompt {
				t.Errorf("system-prompt.md = %q, want %q", got, tc.wantPrompt)
			}
			if o.render.Hash != o.output.Hash || o.delivered {
				t.Errorf("render %+v of a new output: hash %s, delivered %v", o.render, o.output.Hash, o.delivered)
			}
		})
	}
}

// The status pass of a fan-out reports the render its delivery wrote
// without rendering again, when it reads the same inputs and the ConfigMap
// still holds the render; otherwise it renders.
func TestRenderStepOfADeferredStatus(t *testing.T) {
	cases := []struct {
		name string
		// change is done between the delivery and the status pass.
		change       func(t *testing.T, s *steps, p *v1alpha1.Persona)
		wantRendered bool
	}{
		{name: "nothing changed", change: func(*testing.T, *steps, *v1alpha1.Persona) {}},
		{name: "a layer changed", wantRendered: true, change: func(t *testing.T, s *steps, _ *v1alpha1.Persona) {
			l := &v1alpha1.PromptLayer{}
			l.Namespace, l.Name = ns, "style"
			s.get(t, l)
			l.Spec.Template, l.Generation = new("Be briefer."), 2
			if err := s.cluster.Update(t.Context(), l); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "the ConfigMap was overwritten", wantRendered: true, change: func(t *testing.T, s *steps, p *v1alpha1.Persona) {
			cm := configMapOf(t, s, p)
			cm.Data["system-prompt.md"] = "Someone else's."
			if err := s.cluster.Update(t.Context(), cm); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := barePersona("p", "Hello", "style")
			s := newSteps(t, p, appendLayer("style", "Be brief."))
			delivered := deliverOnce(t, s, p)
			s.deferred.put(t.Context(), client.ObjectKeyFromObject(p), delivered.inputs, delivered.render, *delivered.revision, delivered.written, delivered.guardrails)
			tc.change(t, s, p)

			o, err := s.tryRender(t.Context(), p)
			if err != nil || o.reason != v1alpha1.RenderedReason {
				t.Fatalf("status pass: %s %s %v", o.reason, o.message, err)
			}
			if rendered := o.output != nil; rendered != tc.wantRendered {
				t.Fatalf("rendered again: %v, want %v", rendered, tc.wantRendered)
			}
			if !tc.wantRendered && (!o.delivered || o.render.Hash != delivered.render.Hash) {
				t.Errorf("reported %+v (delivered %v), want the delivered render %s", o.render, o.delivered, delivered.render.Hash)
			}
			if _, held := s.deferred.take(client.ObjectKeyFromObject(p)); held {
				t.Error("the deferred status is still held after its pass")
			}
		})
	}
}
