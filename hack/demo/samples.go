package main

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/test/controlplane"
)

// readSamples decodes every object of the sample manifests but the
// Kustomization.
func readSamples(dir string) ([]*unstructured.Unstructured, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var all []*unstructured.Unstructured
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		objs, err := controlplane.DecodeManifest(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for _, u := range objs {
			if u.GetKind() != "Kustomization" {
				all = append(all, u)
			}
		}
	}
	return all, nil
}

// labelForGuardrails gives the namespace default the labels that each sample
// ClusterPromptLayer's namespaceSelector matches, as a platform team would,
// and prints which guardrail each label selects.
func labelForGuardrails(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) error {
	var ns corev1.Namespace
	if err := c.Get(ctx, client.ObjectKey{Name: corev1.NamespaceDefault}, &ns); err != nil {
		return err
	}
	labels := ns.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	fmt.Println()
	for _, u := range objs {
		if u.GetKind() != "ClusterPromptLayer" {
			continue
		}
		match, _, err := unstructured.NestedStringMap(u.Object, "spec", "namespaceSelector", "matchLabels")
		if err != nil {
			return fmt.Errorf("ClusterPromptLayer %s: %w", u.GetName(), err)
		}
		for _, k := range slices.Sorted(maps.Keys(match)) {
			labels[k] = match[k]
			fmt.Printf("=== Namespace default labelled %s=%s: it selects the guardrail ClusterPromptLayer %s\n", k, match[k], u.GetName())
		}
	}
	ns.SetLabels(labels)
	return c.Update(ctx, &ns)
}

// createSamples creates every object in the namespace default and returns
// the Personas' names, sorted.
func createSamples(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) ([]string, error) {
	var personas []string
	for _, u := range objs {
		u.SetNamespace(corev1.NamespaceDefault) // ignored for cluster-scoped kinds
		if err := c.Create(ctx, u); err != nil {
			return nil, fmt.Errorf("create %s %s: %w", u.GetKind(), u.GetName(), err)
		}
		if u.GetKind() == "Persona" {
			personas = append(personas, u.GetName())
		}
	}
	slices.Sort(personas)
	return personas, nil
}
