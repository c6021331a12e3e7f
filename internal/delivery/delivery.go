// Package delivery builds the ConfigMap a Persona is delivered in (personas.md#delivery):
// its name, labels, content-hash annotation and data. The controller and
// kubectl-persona both build it here, so what the CLI prints is what the
// operator writes.
package delivery

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/render"
)

// The labels and annotation of a persona's ConfigMap.
const (
	// ManagedByLabel is app.kubernetes.io/managed-by, set to ManagedBy.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// ManagedBy is the value of ManagedByLabel.
	ManagedBy = "persona-operator"
	// PersonaLabel names the Persona the ConfigMap renders.
	PersonaLabel = "prompts.persona-operator.dev/persona"
	// ContentHashAnnotation is sha256:<hex> of the ConfigMap data (the
	// Persona's status.contentHash).
	ContentHashAnnotation = "prompts.persona-operator.dev/content-hash"
	// GuardrailsAnnotation is the identity of the ClusterPromptLayers the
	// data was rendered with (resolve.GuardrailsIdentity); absent when none
	// was. The operator sets it: offline, UIDs are unknown.
	GuardrailsAnnotation = "prompts.persona-operator.dev/guardrails"
	// FallbackAnnotation says that a failed render left the data to the
	// guardrails: FallbackLastGoodInputs or FallbackGuardrailsOnly.
	// Absent after a good render.
	FallbackAnnotation = "prompts.persona-operator.dev/fallback"
)

// The values of FallbackAnnotation (clusterpromptlayers.md#kept-through-failures).
const (
	// FallbackLastGoodInputs: the last good inputs rendered with the
	// current ClusterPromptLayers.
	FallbackLastGoodInputs = "last-good-inputs"
	// FallbackGuardrailsOnly: the ClusterPromptLayers alone.
	FallbackGuardrailsOnly = "guardrails-only"
)

// OperatorAnnotations are the annotations only the operator sets, each
// removed when a render does not set it.
var OperatorAnnotations = []string{GuardrailsAnnotation, FallbackAnnotation, RevisionAnnotation}

// ConfigMapPrefix is the prefix of every persona ConfigMap's name.
const ConfigMapPrefix = "persona-"

// ConfigMapName is the name of the ConfigMap of the Persona named persona.
func ConfigMapName(persona string) string { return ConfigMapPrefix + persona }

// Labels are the labels of the ConfigMap of the Persona named persona. It
// is a template source: another PromptLayer's templateFrom may read a
// rendered prompt.
func Labels(persona string) map[string]string {
	return map[string]string{
		ManagedByLabel:               ManagedBy,
		PersonaLabel:                 persona,
		v1alpha1.TemplateSourceLabel: "true",
	}
}

// ConfigMap is the ConfigMap of the Persona named persona in namespace with
// the rendered output out. It has no owner reference: the controller adds
// its own.
func ConfigMap(persona, namespace string, out *render.Output) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        ConfigMapName(persona),
			Namespace:   namespace,
			Labels:      Labels(persona),
			Annotations: map[string]string{ContentHashAnnotation: out.Hash},
		},
		Data: maps.Clone(out.Data),
	}
}

// SetGuardrails records on cm the identity of the ClusterPromptLayers it
// was rendered with (GuardrailsAnnotation); none without guardrails.
func SetGuardrails(cm *corev1.ConfigMap, identity string) {
	if identity != "" {
		cm.Annotations[GuardrailsAnnotation] = identity
	}
}
