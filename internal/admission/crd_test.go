package admission

import (
	"os"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/render"
)

// The CRD schema repeats the structural rules so that the API server holds
// them without the webhook; these tests tie the two together.

func crdSpec(t *testing.T, file string) apiextensionsv1.JSONSchemaProps {
	t.Helper()
	raw, err := os.ReadFile("../../config/crd/bases/" + file)
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(raw, &crd); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name == v1alpha1.GroupVersion.Version {
			return *v.Schema.OpenAPIV3Schema
		}
	}
	t.Fatalf("%s has no version %s", file, v1alpha1.GroupVersion.Version)
	return apiextensionsv1.JSONSchemaProps{}
}

// at walks a schema by property names; "[]" steps into a list's items and
// "{}" into a map's values.
func at(t *testing.T, s apiextensionsv1.JSONSchemaProps, path string) apiextensionsv1.JSONSchemaProps {
	t.Helper()
	for _, step := range strings.Split(path, ".") {
		switch step {
		case "[]":
			s = *s.Items.Schema
		case "{}":
			s = *s.AdditionalProperties.Schema
		default:
			next, ok := s.Properties[step]
			if !ok {
				t.Fatalf("the CRD schema has no %s (at %q)", path, step)
			}
			s = next
		}
	}
	return s
}

func TestCRDLimitsMatchAdmission(t *testing.T) {
	persona := crdSpec(t, "prompts.persona-operator.dev_personas.yaml")
	layer := crdSpec(t, "prompts.persona-operator.dev_promptlayers.yaml")
	guardrail := crdSpec(t, "prompts.persona-operator.dev_clusterpromptlayers.yaml")
	source := int64(render.Default().Limits().MaxSourceBytes)
	for _, tc := range []struct {
		path string
		got  *int64
		want int64
	}{
		{"spec.description maxLength", at(t, persona, "spec.description").MaxLength, maxDescriptionBytes},
		{"spec.inherit maxItems", at(t, persona, "spec.inherit").MaxItems, maxInherit},
		{"spec.layers maxItems", at(t, persona, "spec.layers").MaxItems, maxLayers},
		{"spec.variants maxItems", at(t, persona, "spec.variants").MaxItems, maxVariants},
		{"spec.model maxLength", at(t, persona, "spec.model").MaxLength, v1alpha1.MaxModelBytes},
		{"spec.reasoningEffort maxLength", at(t, persona, "spec.reasoningEffort").MaxLength, v1alpha1.MaxReasoningEffortBytes},
		{"spec.variants.model maxLength", at(t, persona, "spec.variants.[].model").MaxLength, v1alpha1.MaxModelBytes},
		{"spec.variants.reasoningEffort maxLength", at(t, persona, "spec.variants.[].reasoningEffort").MaxLength, v1alpha1.MaxReasoningEffortBytes},
		{"spec.systemPrompt.platform maxProperties", at(t, persona, "spec.systemPrompt.platform").MaxProperties, int64(len(render.Catalog))},
		{"spec.systemPrompt.platform.replace maxLength", at(t, persona, "spec.systemPrompt.platform.{}.replace").MaxLength, source},
		{"spec.systemPrompt.extensions.template maxLength", at(t, persona, "spec.systemPrompt.extensions.[].template").MaxLength, source},
		{"PromptLayer spec.template maxLength", at(t, layer, "spec.template").MaxLength, source},
		{"ClusterPromptLayer spec.description maxLength", at(t, guardrail, "spec.description").MaxLength, maxDescriptionBytes},
		{"ClusterPromptLayer spec.template maxLength", at(t, guardrail, "spec.template").MaxLength, source},
	} {
		if tc.got == nil || *tc.got != tc.want {
			t.Errorf("%s: the CRD has %v, admission %d", tc.path, tc.got, tc.want)
		}
	}
}

func TestCRDPatternsMatchAdmission(t *testing.T) {
	persona := crdSpec(t, "prompts.persona-operator.dev_personas.yaml")
	layer := crdSpec(t, "prompts.persona-operator.dev_promptlayers.yaml")
	for _, tc := range []struct {
		path, got, want string
	}{
		{"spec.inherit items", at(t, persona, "spec.inherit.[]").Pattern, namePattern},
		{"spec.variants.name", at(t, persona, "spec.variants.[].name").Pattern, namePattern},
		{"spec.systemPrompt.extensions.id", at(t, persona, "spec.systemPrompt.extensions.[].id").Pattern, extensionIDPattern},
		{"PromptLayer spec.source", at(t, layer, "spec.source").Pattern, namePattern},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: the CRD's pattern is %q, admission's %q", tc.path, tc.got, tc.want)
		}
	}
	// metadata.name has no schema of its own: a CEL rule on the object holds the pattern.
	rules := persona.XValidations
	if !slices.ContainsFunc(rules, func(r apiextensionsv1.ValidationRule) bool {
		return strings.Contains(r.Rule, "self.metadata.name.matches('"+namePattern+"')")
	}) {
		t.Errorf("no rule of the Persona CRD checks metadata.name against %s: %v", namePattern, rules)
	}
}
