package controller_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/test/controlplane"
	"github.com/persona-operator/persona-operator/test/fixtures"
)

// objects decodes a multi-document manifest, in namespace ns.
func objects(ns, manifest string) []*unstructured.Unstructured {
	out, err := controlplane.DecodeManifest(strings.NewReader(manifest))
	Expect(err).NotTo(HaveOccurred())
	for _, u := range out {
		u.SetNamespace(ns)
	}
	return out
}

// apply creates the objects of a manifest in ns, or updates them when they exist.
func apply(ns, manifest string) {
	for _, u := range objects(ns, manifest) {
		Expect(createOrUpdate(u)).To(Succeed(), "apply %s/%s", u.GetKind(), u.GetName())
	}
}

// applySamples applies the Persona and PromptLayer manifests of
// config/samples in ns, and returns their files and the Personas' names.
func applySamples(ns string) (files, personas []string) {
	files, err := filepath.Glob("../../config/samples/prompts_*.yaml")
	Expect(err).NotTo(HaveOccurred())
	Expect(files).NotTo(BeEmpty())
	for _, f := range files {
		raw, err := os.ReadFile(f)
		Expect(err).NotTo(HaveOccurred())
		for _, u := range objects(ns, string(raw)) {
			Expect(createOrUpdate(u)).To(Succeed(), "apply %s from %s", u.GetName(), f)
			if u.GetKind() == "Persona" {
				personas = append(personas, u.GetName())
			}
		}
	}
	Expect(personas).NotTo(BeEmpty())
	return files, personas
}

// tryApply is apply returning the first error, for manifests the webhook refuses.
func tryApply(ns, manifest string) error {
	for _, u := range objects(ns, manifest) {
		if err := createOrUpdate(u); err != nil {
			return err
		}
	}
	return nil
}

// createOrUpdate creates u, or updates it to u; an update that conflicts
// with a write since it read the object (the controller's status patch) is
// tried again, as kubectl apply does.
func createOrUpdate(u *unstructured.Unstructured) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var current unstructured.Unstructured
		current.SetGroupVersionKind(u.GroupVersionKind())
		err := k8s.Get(ctx, client.ObjectKeyFromObject(u), &current)
		if err != nil {
			return k8s.Create(ctx, u)
		}
		u.SetResourceVersion(current.GetResourceVersion())
		return k8s.Update(ctx, u)
	})
}

func getPersona(ns, name string) *v1alpha1.Persona {
	var p v1alpha1.Persona
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &p)).To(Succeed())
	return &p
}

// ready returns the Ready condition's reason, "" while there is none.
func ready(ns, name string) func() string {
	return func() string {
		var p v1alpha1.Persona
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &p); err != nil {
			return "error: " + err.Error()
		}
		c := meta.FindStatusCondition(p.Status.Conditions, "Ready")
		if c == nil || c.ObservedGeneration != p.Generation {
			return ""
		}
		return c.Reason
	}
}

// condition returns the status of the Persona's condition of type t, "" when it has none.
func condition(ns, name, t string) metav1.ConditionStatus {
	c := meta.FindStatusCondition(getPersona(ns, name).Status.Conditions, t)
	if c == nil {
		return ""
	}
	return c.Status
}

func readyMessage(ns, name string) string {
	c := meta.FindStatusCondition(getPersona(ns, name).Status.Conditions, "Ready")
	Expect(c).NotTo(BeNil())
	return c.Message
}

// configMap returns persona-<name>, or nil when it does not exist.
func configMap(ns, persona string) *corev1.ConfigMap {
	var cm corev1.ConfigMap
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "persona-" + persona}, &cm); err != nil {
		return nil
	}
	return &cm
}

// prompt returns system-prompt.md of persona-<name>, or "<missing>".
func prompt(ns, persona string) func() string {
	return func() string {
		cm := configMap(ns, persona)
		if cm == nil {
			return "<missing>"
		}
		return cm.Data["system-prompt.md"]
	}
}

func resourceVersion(ns, persona string) string {
	cm := configMap(ns, persona)
	Expect(cm).NotTo(BeNil())
	return cm.ResourceVersion
}

var bare = fixtures.RemoveAllSections

// barePersona is a persona whose prompt is its one extension's text, with more spec lines.
func barePersona(name, text string, more ...string) string {
	return bareManifest(name, []extension{{"text", text}}, more...)
}

// extension is one entry of spec.systemPrompt.extensions.
type extension struct{ id, template string }

// bareManifest is a Persona with every platform section removed, so its
// prompt is exactly its extensions and layers, plus more spec lines.
func bareManifest(name string, exts []extension, more ...string) string {
	var list strings.Builder
	for _, e := range exts {
		fmt.Fprintf(&list, "\n      - id: %s\n        template: %s", e.id, fixtures.Quote(e.template))
	}
	return `
apiVersion: prompts.persona-operator.dev/v1alpha1
kind: Persona
metadata:
  name: ` + name + `
spec:
  systemPrompt:` + bare + `
    extensions:` + list.String() + "\n" + indentLines(strings.Join(more, "\n"), "  ")
}

func layerManifest(name, source, mode, template string) string {
	return `
apiVersion: prompts.persona-operator.dev/v1alpha1
kind: PromptLayer
metadata:
  name: ` + name + `
spec:
  source: ` + source + `
  mode: ` + mode + `
  template: ` + fixtures.Quote(template) + "\n"
}

// agentsLayer is the ConfigMap agents holding data (a YAML flow mapping) and
// the PromptLayer agents-md, whose template is that ConfigMap's AGENTS.md.
func agentsLayer(data string) string {
	return `
apiVersion: v1
kind: ConfigMap
metadata:
  name: agents
  labels: {prompts.persona-operator.dev/template-source: "true"}
data: ` + data + `
---
apiVersion: prompts.persona-operator.dev/v1alpha1
kind: PromptLayer
metadata: {name: agents-md}
spec:
  source: app
  templateFrom: {configMapKeyRef: {name: agents, key: AGENTS.md}}
`
}

func indentLines(s, prefix string) string {
	if s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n") + "\n"
}
