package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/render"
	"github.com/persona-operator/persona-operator/internal/resolve"
	"github.com/persona-operator/persona-operator/internal/status"
)

// The shared objects every measured Persona reads.
const (
	parentName  = "platform-base"
	policyLayer = "org-policy"
	sharedLayer = "team-notes" // the layer the fan-out phase edits
)

// parentPersona is the persona every measured persona inherits: a realistic
// Markdown body, a model, a replaced section, an extension at its revision
// version and a context.
func parentPersona(ns string, version int) *v1alpha1.Persona {
	body := strings.Repeat("You are a careful coding agent working for the platform team. Read the code before changing it, "+
		"keep changes small and reviewable, and explain what you did and why in the pull request description.\n", 6)
	return &v1alpha1.Persona{
		ObjectMeta: metav1.ObjectMeta{Name: parentName, Namespace: ns},
		Spec: v1alpha1.PersonaSpec{
			Description:     "The platform's base persona.",
			Model:           new("claude-sonnet-4-6"),
			ReasoningEffort: new("medium"),
			Prompt:          body,
			SystemPrompt: &v1alpha1.SystemPromptSpec{
				Platform: map[string]v1alpha1.PlatformOverride{
					"workspace": {Replace: new("{{if .Repos}}Repositories: {{range .Repos}}{{.Name}} at {{.Dir}} on {{.Branch}}; {{end}}{{end}}\nWork in {{.WorkspaceDir}}.")},
					"waiver":    {Remove: new(true)},
				},
				Extensions: []v1alpha1.Extension{{ID: "house_rules", Template: houseRules(version)}},
			},
			Vars: map[string]string{"team": "platform", "oncall": "#platform-oncall"},
			Context: &v1alpha1.PersonaContext{
				WorkspaceDir: new("/workspace"),
				Repos: []v1alpha1.Repo{
					{Name: "acme/api", CloneURL: "https://github.com/acme/api.git", Dir: "/workspace/api", Branch: "agent/work", BranchCreated: true},
					{Name: "acme/web", CloneURL: "https://github.com/acme/web.git", Dir: "/workspace/web", Branch: "main"},
				},
				ExpectedOutput: new("pr"),
			},
		},
	}
}

// houseRules is the parent's extension; version changes it.
func houseRules(version int) string {
	return fmt.Sprintf("House rules, revision %d, for {{ .AgentRef }} ({{ .ModelFamily | default \"any model\" }}): run the tests before every push.", version)
}

// layers are the two PromptLayers every measured persona lists.
func layers(ns, sharedText string) []*v1alpha1.PromptLayer {
	return []*v1alpha1.PromptLayer{
		{
			ObjectMeta: metav1.ObjectMeta{Name: policyLayer, Namespace: ns},
			Spec: v1alpha1.PromptLayerSpec{Source: "user", Mode: v1alpha1.LayerModeAppend, Template: new(
				"Follow the organization's security policy: never commit secrets, never disable tests, " +
					"and ask before deleting data.{{ if .GitHubGateway }} Use the GitHub gateway for every gh call.{{ end }}")},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: sharedLayer, Namespace: ns},
			Spec:       v1alpha1.PromptLayerSpec{Source: "app", Mode: v1alpha1.LayerModeAppend, Template: new(sharedText)},
		},
	}
}

// sharedTemplate is the edited layer's template; version changes it.
func sharedTemplate(version int) string {
	return fmt.Sprintf("Team {{ index .Vars \"team\" }} notes, revision %d: page {{ index .Vars \"oncall\" }} when blocked.", version)
}

// guardrailLabel is the Namespace label the ClusterPromptLayer of a round
// selects: a ClusterPromptLayer is cluster-scoped, so each round has its
// own, named for the round, which selects only that round's namespaces.
const guardrailLabel = "scale.persona-operator.dev/guardrail"

// roundLabels are the labels of round's measured namespaces.
func roundLabels(round int) map[string]string {
	return map[string]string{guardrailLabel: fmt.Sprintf("round-%d", round)}
}

// guardrail is round's ClusterPromptLayer, whose template is text: it
// selects every Persona of the namespaces labelled roundLabels(round).
func guardrail(round int, text string) *v1alpha1.ClusterPromptLayer {
	return &v1alpha1.ClusterPromptLayer{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("scale-guardrail-%d", round)},
		Spec: v1alpha1.ClusterPromptLayerSpec{
			Description:       fmt.Sprintf("The scale harness's guardrail of round %d.", round),
			Position:          v1alpha1.ClusterLayerLast,
			Template:          text,
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: roundLabels(round)},
		},
	}
}

// guardrailTemplate is the ClusterPromptLayer's template; version changes it.
func guardrailTemplate(version int) string {
	return fmt.Sprintf("Platform guardrail, revision %d: never print a secret, never push to a protected branch, "+
		"and ask {{ index .Vars \"oncall\" }} before deleting data.", version)
}

// persona is the i-th measured persona: it inherits the parent and lists both layers.
func persona(ns string, i int) *v1alpha1.Persona {
	name := fmt.Sprintf("agent-%05d", i)
	return &v1alpha1.Persona{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.PersonaSpec{
			Description: "A measured persona.",
			Inherit:     []v1alpha1.PersonaName{parentName},
			Layers:      []v1alpha1.LayerReference{{Name: policyLayer}, {Name: sharedLayer}},
			Prompt:      fmt.Sprintf("You are agent %d. Review pull requests for correctness first, style second.\n", i),
			Vars:        map[string]string{"ticket": fmt.Sprintf("PLAT-%d", 1000+i)},
			Variants:    []v1alpha1.Variant{{Name: "codex", Harness: v1alpha1.HarnessCodex, Model: "gpt-5-codex"}},
		},
	}
}

// smallPersona is a small valid persona, for the webhook latency samples.
func smallPersona(ns, name string) *v1alpha1.Persona {
	return &v1alpha1.Persona{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.PersonaSpec{
			Prompt: "A small persona.",
			SystemPrompt: &v1alpha1.SystemPromptSpec{
				Extensions: []v1alpha1.Extension{{ID: "note", Template: "Harness: {{ .Harness }}."}},
			},
		},
	}
}

// invalidPersona is refused by the webhook but not by the CRD schema: its
// template names a variable that does not exist. Created with dry-run, it
// tells whether the webhook is active.
func invalidPersona(ns string) *v1alpha1.Persona {
	p := smallPersona(ns, "webhook-probe")
	p.Spec.SystemPrompt.Extensions[0].Template = "{{ .NoSuchVariable }}"
	return p
}

// offline resolves and renders personas without a cluster, from the objects
// it holds, exactly as the controller does from its cache.
type offline struct {
	objs map[string]client.Object
}

func newOffline(objs ...client.Object) *offline {
	o := &offline{objs: map[string]client.Object{}}
	for _, obj := range objs {
		o.objs[offlineKey(obj, client.ObjectKeyFromObject(obj))] = obj
	}
	return o
}

func offlineKey(obj client.Object, k client.ObjectKey) string {
	return fmt.Sprintf("%T/%s", obj, k)
}

// List implements resolve.Lookup: the ClusterPromptLayers it holds, in
// name order, each a copy.
func (o *offline) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	l, ok := list.(*v1alpha1.ClusterPromptLayerList)
	if !ok {
		return fmt.Errorf("list of %T is not supported offline", list)
	}
	l.Items = nil
	for _, obj := range o.objs {
		if cpl, ok := obj.(*v1alpha1.ClusterPromptLayer); ok {
			l.Items = append(l.Items, *cpl.DeepCopy())
		}
	}
	slices.SortFunc(l.Items, func(a, b v1alpha1.ClusterPromptLayer) int { return cmp.Compare(a.Name, b.Name) })
	return nil
}

// Get implements resolve.Lookup.
func (o *offline) Get(_ context.Context, k client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	src, ok := o.objs[offlineKey(obj, k)]
	if !ok {
		return apierrors.NewNotFound(corev1.Resource("object"), k.Name)
	}
	raw, err := json.Marshal(src)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, obj)
}

// rendered is what the controller would write for one persona.
type rendered struct {
	configMap *corev1.ConfigMap
	status    v1alpha1.PersonaStatus
	// note is the Rendered Event's.
	note string
}

// render renders p as the controller would: its ConfigMap (without owner)
// and its status.
func (o *offline) render(p *v1alpha1.Persona) (*rendered, error) {
	res, err := resolve.Resolve(context.Background(), o, p)
	if err != nil {
		return nil, fmt.Errorf("resolve %s offline: %w", p.Name, err)
	}
	out, err := render.Default().ConfigMap(res.Bundle)
	if err != nil {
		return nil, fmt.Errorf("render %s offline: %w", p.Name, err)
	}
	// The status and Event the controller writes, for generation 1.
	q := p.DeepCopy()
	q.Generation = 1
	q.Status = v1alpha1.PersonaStatus{ObservedGeneration: 1, Dependencies: res.Dependencies}
	status.SetRendered(q, status.RenderOf(out))
	return &rendered{configMap: delivery.ConfigMap(p.Name, p.Namespace, out), status: q.Status, note: status.RenderedNote(q, out)}, nil
}
