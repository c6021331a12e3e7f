package webhook

import (
	"context"
	"os"
	"slices"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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

// The generated webhook configuration matches only this API's kinds, each
// at a path Register serves.
func TestWebhookConfigurationMatchesOnlyThisAPI(t *testing.T) {
	raw, err := os.ReadFile("../../config/webhook/manifests.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	if err := yaml.UnmarshalStrict(raw, &vwc); err != nil {
		t.Fatal(err)
	}
	served := map[string]string{
		"personas":            PersonaPath,
		"promptlayers":        PromptLayerPath,
		"clusterpromptlayers": ClusterPromptLayerPath,
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
