package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/manifest"
)

// The cluster-scoped inputs of a render (personas.md#validating-before-apply):
// the ClusterPromptLayers, the PromptPlatform, and the labels of the
// Namespaces the personas are in. A render from manifests alone lacks them
// unless the manifests hold them, so diff --live, and render and validate
// with --cluster-inputs, read them from the cluster. Per kind: when the
// manifests hold objects of a kind they are its whole set (a
// ClusterPromptLayer a change deletes then shows as removed); otherwise the
// cluster's are used.

var (
	clusterPromptLayersResource = v1alpha1.GroupVersion.WithResource("clusterpromptlayers")
	promptPlatformsResource     = v1alpha1.GroupVersion.WithResource("promptplatforms")
)

// clusterInputsUsage is the --cluster-inputs flag's help.
const clusterInputsUsage = "render with the cluster's ClusterPromptLayers, PromptPlatform and Namespace labels, per kind unless the manifests hold that kind (reads the kubeconfig, as diff --live)"

// inputsReport says where each cluster-scoped input came from (notes) and
// which the user may not read (warnings), for standard error.
type inputsReport struct {
	notes, warnings []string
}

func (r inputsReport) write(s *Streams) {
	for _, n := range r.notes {
		fmt.Fprintln(s.Err, n)
	}
	writeWarnings(s, r.warnings)
}

// addClusterInputs adds to set the cluster's objects of each cluster-scoped
// input kind the manifests hold none of. An input the user may not read is
// a warning, and the render goes on without it; a cluster that cannot be
// reached is an error.
func addClusterInputs(ctx context.Context, kube *genericclioptions.ConfigFlags, set *manifest.Set, flag string) (inputsReport, error) {
	var report inputsReport
	cfg, err := kube.ToRESTConfig()
	if err != nil {
		return report, fmt.Errorf("%s: the kubeconfig: %w", flag, err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return report, fmt.Errorf("%s: %w", flag, err)
	}
	core, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return report, fmt.Errorf("%s: %w", flag, err)
	}
	var objs []map[string]any
	for _, in := range []struct {
		kind, plural string
		list         func() ([]map[string]any, error)
	}{
		{v1alpha1.ClusterPromptLayerKind, "ClusterPromptLayers", func() ([]map[string]any, error) {
			return listCluster(ctx, dyn.Resource(clusterPromptLayersResource))
		}},
		{v1alpha1.PromptPlatformKind, "PromptPlatforms", func() ([]map[string]any, error) {
			return listCluster(ctx, dyn.Resource(promptPlatformsResource))
		}},
		{v1alpha1.NamespaceKind, "Namespaces", func() ([]map[string]any, error) {
			return getNamespaces(ctx, core, personaNamespaces(set), &report)
		}},
	} {
		if held := set.Sorted(in.kind); len(held) > 0 {
			report.notes = append(report.notes, fmt.Sprintf("%s: from the manifests (%s)", in.plural, objectNames(held)))
			continue
		}
		got, err := in.list()
		switch {
		case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
			report.warnings = append(report.warnings, fmt.Sprintf("%s: cannot read the cluster's %s, so the render has none: %v", flag, in.plural, err))
			continue
		case apierrors.IsNotFound(err):
			report.warnings = append(report.warnings, fmt.Sprintf("%s: the cluster serves no %s (is persona-operator installed?), so the render has none", flag, in.plural))
			continue
		case err != nil:
			return report, fmt.Errorf("%s: read the cluster's %s: %w", flag, in.plural, err)
		}
		report.notes = append(report.notes, fmt.Sprintf("%s: from the cluster (%s)", in.plural, mapNames(got)))
		objs = append(objs, got...)
	}
	set.AddFromCluster(objs)
	return report, nil
}

// listCluster lists a cluster-scoped resource, each item as the manifests
// would hold it: without status and managedFields.
func listCluster(ctx context.Context, r dynamic.ResourceInterface) ([]map[string]any, error) {
	list, err := r.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]map[string]any, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, asManifest(&list.Items[i]))
	}
	return out, nil
}

// getNamespaces reads each Namespace by name: a tenant may usually get its
// own but list none. One it may not read is a warning, with the Role that
// grants it (docs/cli.md#cluster-inputs); one that does not exist is left out.
func getNamespaces(ctx context.Context, core corev1client.CoreV1Interface, names []string, report *inputsReport) ([]map[string]any, error) {
	var out []map[string]any
	for _, name := range names {
		ns, err := core.Namespaces().Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			continue
		case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
			report.warnings = append(report.warnings, fmt.Sprintf(
				"cannot read Namespace %s, so a ClusterPromptLayer that selects by its labels is left out of the render: %v (a ClusterRole with get on namespaces, bound in %s by a RoleBinding, grants it: docs/cli.md#cluster-inputs)",
				name, err, name))
			continue
		case err != nil:
			return nil, err
		}
		ns.APIVersion, ns.Kind = "v1", v1alpha1.NamespaceKind
		raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ns)
		if err != nil {
			return nil, err
		}
		out = append(out, asManifest(&unstructured.Unstructured{Object: raw}))
	}
	return out, nil
}

// asManifest is u as a manifest holds it: what the API server adds to an
// object (status, managedFields) is no input of a render.
func asManifest(u *unstructured.Unstructured) map[string]any {
	u.SetManagedFields(nil)
	unstructured.RemoveNestedField(u.Object, "status")
	return u.Object
}

// personaNamespaces are the namespaces of set's Personas, sorted.
func personaNamespaces(set *manifest.Set) []string {
	var out []string
	for _, p := range set.Personas() {
		if !slices.Contains(out, p.Namespace) {
			out = append(out, p.Namespace)
		}
	}
	slices.Sort(out)
	return out
}

func objectNames(objs []*manifest.Object) string {
	names := make([]string, len(objs))
	for i, o := range objs {
		names[i] = o.Name
	}
	return namesOrNone(names)
}

func mapNames(objs []map[string]any) string {
	names := make([]string, 0, len(objs))
	for _, o := range objs {
		names = append(names, (&unstructured.Unstructured{Object: o}).GetName())
	}
	slices.Sort(names)
	return namesOrNone(names)
}

func namesOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// clusterInputsFlags are --cluster-inputs and kubectl's connection flags
// for render and validate. Their -n stays the namespace of manifests that
// set none, so it is not among the connection flags.
type clusterInputsFlags struct {
	enabled bool
	kube    *genericclioptions.ConfigFlags
	// names are the connection flags' names.
	names []string
}

func (c *clusterInputsFlags) addFlags(cmd *cobra.Command) {
	c.kube = genericclioptions.NewConfigFlags(true)
	c.kube.Namespace = nil
	kube := pflag.NewFlagSet("kube", pflag.ContinueOnError)
	c.kube.AddFlags(kube)
	kube.VisitAll(func(fl *pflag.Flag) { c.names = append(c.names, fl.Name) })
	cmd.Flags().AddFlagSet(kube)
	cmd.Flags().BoolVar(&c.enabled, "cluster-inputs", false, clusterInputsUsage)
}

// check refuses connection flags without --cluster-inputs: nothing else
// reads a kubeconfig.
func (c *clusterInputsFlags) check(cmd *cobra.Command) error {
	if c.enabled {
		return nil
	}
	for _, name := range c.names {
		if !cmd.Flags().Changed(name) {
			continue
		}
		if name == "context" {
			return usageError("--context is a kubeconfig context, which applies to --cluster-inputs; the turn context is --turn FILE")
		}
		return usageError("--%s applies to --cluster-inputs: without it, no kubeconfig is read", name)
	}
	return nil
}

// add adds the cluster's inputs to set when asked for, and tells where
// each came from on standard error; without them, it warns of what the
// manifests lack.
func (c *clusterInputsFlags) add(ctx context.Context, s *Streams, set *manifest.Set) error {
	if !c.enabled {
		writeWarnings(s, offlineWarnings(set))
		return nil
	}
	report, err := addClusterInputs(ctx, c.kube, set, "--cluster-inputs")
	if err != nil {
		return err
	}
	report.write(s)
	return nil
}

// offlineWarnings are what a render from the manifests alone lacks of the
// cluster's inputs, each by name: the PromptPlatform (without one the
// shipped sections stand, which describe one particular platform), and the
// Namespace of a persona that a ClusterPromptLayer selecting by namespace
// labels would need the labels of.
func offlineWarnings(set *manifest.Set) []string {
	var out []string
	if len(set.Sorted(v1alpha1.PromptPlatformKind)) == 0 && len(set.Personas()) > 0 {
		out = append(out, "the manifests hold no PromptPlatform, so the shipped platform sections are rendered, which describe one particular platform (a git wrapper, a dashboard, a parent agent): add the cluster's PromptPlatform to the manifests, or read it with --cluster-inputs")
	}
	for _, cpl := range set.Sorted(v1alpha1.ClusterPromptLayerKind) {
		if _, ok, _ := unstructured.NestedFieldNoCopy(cpl.Raw, "spec", "namespaceSelector"); !ok {
			continue
		}
		var missing []string
		for _, ns := range personaNamespaces(set) {
			if set.Find(v1alpha1.NamespaceKind, "", ns) == nil {
				missing = append(missing, ns)
			}
		}
		if len(missing) > 0 {
			out = append(out, fmt.Sprintf("ClusterPromptLayer %s selects by namespace labels, and the manifests hold no Namespace %s: it is rendered as if %s had no labels; add the Namespace to the manifests, or read it with --cluster-inputs",
				cpl.Name, strings.Join(missing, ", "), plural(len(missing), "namespace")))
		}
	}
	return out
}

func writeWarnings(s *Streams, warnings []string) {
	for _, w := range warnings {
		fmt.Fprintln(s.Err, "Warning: "+w)
	}
}
