package webhook

import (
	"context"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
)

func request(kind, name, object string) admission.Request {
	js, err := yaml.YAMLToJSON([]byte(object))
	if err != nil {
		panic(err)
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Kind:   metav1.GroupVersionKind(v1alpha1.GroupVersion.WithKind(kind)),
		Name:   name,
		Object: runtime.RawExtension{Raw: js},
	}}
}

// A ClusterPromptLayer is refused with every problem by its field path, as
// apierrors.NewInvalid reports them, and a good one is admitted.
func TestClusterPromptLayer(t *testing.T) {
	v := &Validator{}
	bad := request(v1alpha1.ClusterPromptLayerKind, "no-push", `
kind: ClusterPromptLayer
metadata: {name: no-push}
spec:
  template: '{{ include "org-policy" . }}'
  namespaceSelector: {matchExpressions: [{key: tier, operator: Equals, values: [prod]}]}
  mode: append
`)
	resp := v.Handle(context.Background(), bad)
	if resp.Allowed || resp.Result == nil || resp.Result.Details == nil {
		t.Fatalf("admitted, or refused without details: %+v", resp)
	}
	if d := resp.Result.Details; d.Kind != v1alpha1.ClusterPromptLayerKind || d.Group != v1alpha1.GroupVersion.Group || d.Name != "no-push" {
		t.Errorf("details name %s %s/%s", d.Group, d.Kind, d.Name)
	}
	var fields []string
	for _, c := range resp.Result.Details.Causes {
		fields = append(fields, c.Field)
	}
	slices.Sort(fields)
	want := []string{"spec.mode", "spec.namespaceSelector.matchExpressions[0].operator", "spec.template"}
	if !slices.Equal(fields, want) {
		t.Errorf("causes at %v, want %v", fields, want)
	}

	good := request(v1alpha1.ClusterPromptLayerKind, "no-push", `
kind: ClusterPromptLayer
metadata: {name: no-push}
spec:
  template: Never push to the default branch; open a pull request.
  namespaceSelector: {matchLabels: {prompts.persona-operator.dev/guardrails: standard}}
`)
	if resp := v.Handle(context.Background(), good); !resp.Allowed {
		t.Errorf("refused: %+v", resp.Result)
	}
}

// generatedWebhookConfiguration decodes the configuration of kind kind of
// config/webhook/manifests.yaml strictly into out.
func generatedWebhookConfiguration(t *testing.T, kind string, out any) {
	t.Helper()
	raw, err := os.ReadFile("../../config/webhook/manifests.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		if strings.Contains(doc, "\nkind: "+kind+"\n") {
			if err := yaml.UnmarshalStrict([]byte(doc), out); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("config/webhook/manifests.yaml has no %s", kind)
}

// The generated validating webhook configuration matches only this API's
// kinds, each at a path Register serves.
func TestWebhookConfigurationMatchesOnlyThisAPI(t *testing.T) {
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	generatedWebhookConfiguration(t, "ValidatingWebhookConfiguration", &vwc)
	served := map[string]string{
		"personas":            PersonaPath,
		"promptlayers":        PromptLayerPath,
		"clusterpromptlayers": ClusterPromptLayerPath,
		"promptplatforms":     PromptPlatformPath,
	}
	seen := map[string]bool{}
	for _, w := range vwc.Webhooks {
		for _, r := range w.Rules {
			if !slices.Equal(r.APIGroups, []string{v1alpha1.GroupVersion.Group}) || len(r.Resources) != 1 {
				t.Errorf("webhook %s matches groups %v, resources %v", w.Name, r.APIGroups, r.Resources)
				continue
			}
			res := r.Resources[0]
			if path := served[res]; path == "" || w.ClientConfig.Service == nil || *w.ClientConfig.Service.Path != path {
				t.Errorf("webhook %s sends %s to %v", w.Name, res, w.ClientConfig.Service)
			}
			seen[res] = true
		}
	}
	for res := range served {
		if !seen[res] {
			t.Errorf("no webhook validates %s", res)
		}
	}
}

// The generated mutating webhook configuration matches only pod creates,
// at the path RegisterInjection serves, idempotent under reinvocation.
func TestInjectionConfigurationMatchesOnlyPodCreates(t *testing.T) {
	var mwc admissionregistrationv1.MutatingWebhookConfiguration
	generatedWebhookConfiguration(t, "MutatingWebhookConfiguration", &mwc)
	if len(mwc.Webhooks) != 1 {
		t.Fatalf("%d webhooks, want 1", len(mwc.Webhooks))
	}
	w := mwc.Webhooks[0]
	want := []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}
	if !reflect.DeepEqual(w.Rules, want) {
		t.Errorf("rules %+v, want %+v", w.Rules, want)
	}
	if w.ClientConfig.Service == nil || *w.ClientConfig.Service.Path != InjectPath {
		t.Errorf("sends pods to %v, want %s", w.ClientConfig.Service, InjectPath)
	}
	if *w.FailurePolicy != admissionregistrationv1.Fail || *w.SideEffects != admissionregistrationv1.SideEffectClassNone ||
		*w.TimeoutSeconds != 5 || *w.ReinvocationPolicy != admissionregistrationv1.IfNeededReinvocationPolicy {
		t.Errorf("failurePolicy %s, sideEffects %s, timeoutSeconds %d, reinvocationPolicy %s", *w.FailurePolicy, *w.SideEffects, *w.TimeoutSeconds, *w.ReinvocationPolicy)
	}
}

// notFound is a cache that holds nothing, counting the lookups.
type notFound struct{ gets int }

func (n *notFound) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	n.gets++
	return apierrors.NewNotFound(schema.GroupResource{}, key.Name)
}

func (n *notFound) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }

// References that are not in the caches are warned about, a templateFrom
// ConfigMap in words that cover one without the label; a review that names
// no user, which the API server never sends, looks nothing up.
func TestWarnings(t *testing.T) {
	objects, sources := &notFound{}, &notFound{}
	v := &Validator{Objects: objects, TemplateSources: sources}
	persona := request(v1alpha1.PersonaKind, "p", "kind: Persona\nmetadata: {name: p}\nspec: {inherit: [base], layers: [{name: house}]}\n")
	layer := request(v1alpha1.PromptLayerKind, "l", "kind: PromptLayer\nmetadata: {name: l}\nspec: {source: app, templateFrom: {configMapKeyRef: {name: agents, key: AGENTS.md}}}\n")

	for _, r := range []admission.Request{persona, layer} {
		if resp := v.Handle(context.Background(), r); !resp.Allowed || len(resp.Warnings) > 0 {
			t.Errorf("without a user: %+v", resp)
		}
	}
	if objects.gets+sources.gets != 0 {
		t.Errorf("without a user, %d lookups", objects.gets+sources.gets)
	}

	persona.UserInfo.Username, layer.UserInfo.Username = "alice", "alice"
	want := []string{`spec.inherit[0]: Persona "base" does not exist yet`, `spec.layers[0].name: PromptLayer "house" does not exist yet`}
	if got := v.Handle(context.Background(), persona).Warnings; !slices.Equal(got, want) {
		t.Errorf("persona warnings %q, want %q", got, want)
	}
	want = []string{`spec.templateFrom.configMapKeyRef.name: ConfigMap "agents" does not exist yet or lacks the label prompts.persona-operator.dev/template-source: "true"`}
	if got := v.Handle(context.Background(), layer).Warnings; !slices.Equal(got, want) {
		t.Errorf("layer warnings %q, want %q", got, want)
	}
	if objects.gets != 2 || sources.gets != 1 {
		t.Errorf("%d lookups of objects and %d of sources, want 2 and 1", objects.gets, sources.gets)
	}
}

// A Persona that sets harnessPrompt: replace itself while the cached
// PromptPlatform forbids it is admitted (the PromptPlatform may change in
// the same sync) with a warning per field; without the rule, none.
func TestWarnsOfAForbiddenHarnessPromptReplace(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	platform := func(allow bool) client.Reader {
		return fake.NewClientBuilder().WithScheme(scheme).WithObjects(&v1alpha1.PromptPlatform{
			ObjectMeta: metav1.ObjectMeta{Name: "default"},
			Spec:       v1alpha1.PromptPlatformSpec{HarnessPrompt: &v1alpha1.HarnessPromptPolicy{AllowReplace: &allow}},
		}).Build()
	}
	persona := request(v1alpha1.PersonaKind, "p", "kind: Persona\nmetadata: {name: p}\n"+
		"spec: {harnessPrompt: replace, variants: [{name: a, harnessPrompt: keep}, {name: b, harnessPrompt: replace}]}\n")
	persona.UserInfo.Username = "alice"
	const rule = ": PromptPlatform default forbids replace (its spec.harnessPrompt.allowReplace is false): the Persona will not render (HarnessPromptForbidden) until one of them changes"
	resp := (&Validator{Objects: platform(false)}).Handle(context.Background(), persona)
	if want := []string{"spec.harnessPrompt" + rule, "spec.variants[1].harnessPrompt" + rule}; !resp.Allowed || !slices.Equal(resp.Warnings, want) {
		t.Errorf("allowed %v, warnings %q, want %q", resp.Allowed, resp.Warnings, want)
	}
	if resp := (&Validator{Objects: platform(true)}).Handle(context.Background(), persona); !resp.Allowed || len(resp.Warnings) != 0 {
		t.Errorf("with replace allowed: %+v", resp)
	}
}

// A control plane check whose token proves nothing here (forged, spent,
// of another key, or served without a ControlPlane) is refused, so that
// the manager that sent it, if any, sends it again rather than count it
// as passed.
func TestAControlPlaneCheckThatProvesNothingIsRefused(t *testing.T) {
	dry := true
	req := request(v1alpha1.PersonaKind, controlPlaneCheckName, `
kind: Persona
metadata:
  name: control-plane-check
  annotations:
    prompts.persona-operator.dev/control-plane-check: AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA
`)
	req.Operation, req.DryRun = admissionv1.Create, &dry
	if resp := (&Validator{}).Handle(context.Background(), req); resp.Allowed {
		t.Errorf("a control plane check that proved nothing was admitted: %q", resp.Result.Message)
	}
	// Not a dry run: validated as any Persona.
	req.DryRun = nil
	if resp := (&Validator{}).Handle(context.Background(), req); !resp.Allowed {
		t.Errorf("a Persona with the annotation, not a dry run, was refused: %q", resp.Result.Message)
	}
}
