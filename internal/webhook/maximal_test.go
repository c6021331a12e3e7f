package webhook_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	personaadmission "github.com/persona-operator/persona-operator/internal/admission"
	"github.com/persona-operator/persona-operator/internal/render"
)

// maxRequestBytes is the largest request body the API server accepts
// (k8s.io/apiserver's MaxRequestBodyBytes): with no count on extensions,
// it is what bounds a Persona's templates.
const maxRequestBytes = 3 << 20

// personaSchema is the Persona CRD's schema of spec, where the API types'
// markers put the sizes and counts of personas.md#spec.
func personaSchema() apiextensionsv1.JSONSchemaProps {
	raw, err := os.ReadFile("../../config/crd/bases/prompts.persona-operator.dev_personas.yaml")
	Expect(err).NotTo(HaveOccurred())
	var crd apiextensionsv1.CustomResourceDefinition
	Expect(yaml.Unmarshal(raw, &crd)).To(Succeed())
	return crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
}

// densestTemplate is a template of exactly size bytes of the shape whose
// parse keeps the most memory per byte (nested parentheses, about 80 bytes
// of tree per byte of source), distinct by tag, and valid.
func densestTemplate(tag string, size int) string {
	unit := "{{print " + strings.Repeat("(", 50) + "1" + strings.Repeat(")", 50) + "}}"
	head := tag + "\n"
	body := strings.Repeat(unit, (size-len(head))/len(unit))
	return head + body + strings.Repeat("x", size-len(head)-len(body))
}

// maximalPersona is the largest Persona the API admits: every count and
// size of the CRD at its maximum, every platform section replaced, and as
// many extensions as fit the API server's request limit, every template
// the largest allowed and distinct by tag, the densest as long as the
// object's budget of action bytes lasts (admission.MaxActionBytes), prose
// past it.
func maximalPersona(ns, name, tag string) *v1alpha1.Persona {
	spec := personaSchema()
	sp := spec.Properties["systemPrompt"].Properties
	templateBytes := int(*sp["extensions"].Items.Schema.Properties["template"].MaxLength)
	Expect(templateBytes).To(Equal(render.DefaultLimits.MaxSourceBytes))
	Expect(int(*sp["platform"].AdditionalProperties.Schema.Properties["replace"].MaxLength)).To(Equal(templateBytes))
	Expect(int(*sp["platform"].MaxProperties)).To(Equal(len(render.Catalog)))

	p := &v1alpha1.Persona{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.PersonaKind},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.PersonaSpec{
			Description:  strings.Repeat("d", int(*spec.Properties["description"].MaxLength)),
			SystemPrompt: &v1alpha1.SystemPromptSpec{Platform: map[string]v1alpha1.PlatformOverride{}},
		},
	}
	for i := range *spec.Properties["inherit"].MaxItems {
		p.Spec.Inherit = append(p.Spec.Inherit, v1alpha1.PersonaName(fmt.Sprintf("parent-%02d", i)))
	}
	for i := range *spec.Properties["layers"].MaxItems {
		p.Spec.Layers = append(p.Spec.Layers, v1alpha1.LayerReference{Name: fmt.Sprintf("layer-%02d", i)})
	}
	for i := range *spec.Properties["variants"].MaxItems {
		p.Spec.Variants = append(p.Spec.Variants, v1alpha1.Variant{Name: fmt.Sprintf("variant-%02d", i)})
	}
	actionsLeft := personaadmission.MaxActionBytes
	template := func(tag string) string {
		if actionsLeft >= templateBytes {
			actionsLeft -= templateBytes
			return densestTemplate(tag, templateBytes)
		}
		return tag + "\n" + strings.Repeat("x", templateBytes-len(tag)-1)
	}
	for _, key := range render.Catalog {
		tmpl := template(tag + " " + key)
		p.Spec.SystemPrompt.Platform[key] = v1alpha1.PlatformOverride{Replace: &tmpl}
	}
	for i := 0; ; i++ {
		raw, err := json.Marshal(p)
		Expect(err).NotTo(HaveOccurred())
		if len(raw)+templateBytes+128 > maxRequestBytes {
			break
		}
		p.Spec.SystemPrompt.Extensions = append(p.Spec.SystemPrompt.Extensions, v1alpha1.Extension{
			ID: fmt.Sprintf("ext_%02d", i), Template: template(fmt.Sprintf("%s ext %d", tag, i)),
		})
	}
	return p
}
