package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/render"
)

// printPersona waits for a persona to settle and prints its system prompt,
// its persona.md, its variants' prompts and the provenance of each piece
// (status.sections).
func printPersona(ctx context.Context, c client.Client, name string) error {
	key := client.ObjectKey{Namespace: corev1.NamespaceDefault, Name: name}
	var p v1alpha1.Persona
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := c.Get(ctx, key, &p); err != nil {
			return err
		}
		if cond := meta.FindStatusCondition(p.Status.Conditions, "Ready"); cond != nil && cond.ObservedGeneration == p.Generation {
			if cond.Status != "True" {
				fmt.Printf("\n=== Persona %s: Ready=%s (%s)\n%s\n", name, cond.Status, cond.Reason, cond.Message)
				return nil
			}
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("persona %s did not settle in 30s", name)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: p.Status.ConfigMapName}, &cm); err != nil {
		return err
	}
	b, err := render.UnmarshalBundle([]byte(cm.Data[render.BundleKey]))
	if err != nil {
		return fmt.Errorf("ConfigMap %s: %w", cm.Name, err)
	}
	harness := b.Persona.Harness
	if harness == "" {
		harness = string(v1alpha1.HarnessClaude)
	}
	fmt.Printf("\n=== Persona %s: Ready=True, harness %s, ConfigMap %s, content hash %s\n", name, harness, cm.Name, p.Status.ContentHash)

	prompt := cm.Data[render.SystemPromptKey]
	fmt.Printf("--- %s (%d bytes), the system prompt:\n%s", render.SystemPromptKey, len(prompt), prompt)
	body := cm.Data[render.PersonaKey]
	what := "the persona's own body, which the persona section of system-prompt.md carries"
	if harness == string(v1alpha1.HarnessClaude) {
		what = "Claude's agent definition, which no claude system prompt holds"
	}
	fmt.Printf("--- %s (%d bytes), %s:\n%s", render.PersonaKey, len(body), what, orNone(body))
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range cm.Data {
			if strings.HasPrefix(k, "system-prompt.") && k != render.SystemPromptKey && !yield(k) {
				return
			}
		}
	}) {
		fmt.Printf("--- %s (%d bytes):\n%s", k, len(cm.Data[k]), cm.Data[k])
	}

	fmt.Println("--- status.sections, where each piece of system-prompt.md came from:")
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "    PIECE\tORIGIN\tBYTES")
	for _, s := range p.Status.Sections {
		fmt.Fprintf(w, "    %s\t%s\t%d\n", s.Name, s.Origin, s.Bytes)
	}
	return w.Flush()
}

func orNone(s string) string {
	if s == "" {
		return "(empty: no persona in the chain has a prompt)\n"
	}
	return s
}
