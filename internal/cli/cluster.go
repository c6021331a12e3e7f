package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
)

// The commands that read a Persona's revisions from a cluster (history,
// rollback) share this: the Persona through the dynamic client, its
// ConfigMaps through the core API, so the binary carries no generated
// client of the operator's group.

var personasResource = v1alpha1.GroupVersion.WithResource("personas")

// cluster is a connection to the cluster of kubectl's flags, in one namespace.
type cluster struct {
	namespace string
	core      corev1client.CoreV1Interface
	// configMapMetadata lists ConfigMaps without their data.
	configMapMetadata metadata.ResourceInterface
	personas          dynamic.ResourceInterface
}

// addKubeFlags adds kubectl's connection flags (--kubeconfig, --context,
// -n, ...) to cmd.
func addKubeFlags(cmd *cobra.Command, kube *genericclioptions.ConfigFlags) {
	flags := pflag.NewFlagSet("kube", pflag.ContinueOnError)
	kube.AddFlags(flags)
	cmd.Flags().AddFlagSet(flags)
}

// connect connects to the cluster of kube, in -n or the context's namespace.
func connect(kube *genericclioptions.ConfigFlags) (*cluster, error) {
	ns, _, err := kube.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, fmt.Errorf("the kubeconfig: %w", err)
	}
	cfg, err := kube.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("the kubeconfig: %w", err)
	}
	core, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &cluster{namespace: ns, core: core, personas: dyn.Resource(personasResource).Namespace(ns),
		configMapMetadata: meta.Resource(corev1.SchemeGroupVersion.WithResource("configmaps")).Namespace(ns)}, nil
}

// connectTo connects to the cluster of kube and reads the Persona name
// there.
func connectTo(ctx context.Context, kube *genericclioptions.ConfigFlags, name string) (*cluster, *v1alpha1.Persona, error) {
	c, err := connect(kube)
	if err != nil {
		return nil, nil, err
	}
	p, err := c.persona(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	return c, p, nil
}

// persona reads the Persona name.
func (c *cluster) persona(ctx context.Context, name string) (*v1alpha1.Persona, error) {
	u, err := c.personas.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get persona %s/%s: %w", c.namespace, name, err)
	}
	var p v1alpha1.Persona
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p); err != nil {
		return nil, fmt.Errorf("persona %s/%s: %w", c.namespace, name, err)
	}
	return &p, nil
}

// personaNames are the names of the Personas of the namespace, for completion.
func (c *cluster) personaNames(ctx context.Context) ([]string, error) {
	list, err := c.personas.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, u := range list.Items {
		names = append(names, u.GetName())
	}
	return names, nil
}

// snapshotsPage is how many ConfigMaps' metadata one list request reads.
const snapshotsPage = 500

// snapshots are the metadata of p's snapshots persona-<name>.r<n>, by
// number: those p controls that carry a snapshot's labels. Their data is
// read only for what is printed (snapshot).
func (c *cluster) snapshots(ctx context.Context, p *v1alpha1.Persona) (map[int64]*metav1.PartialObjectMetadata, error) {
	out := map[int64]*metav1.PartialObjectMetadata{}
	opts := metav1.ListOptions{LabelSelector: delivery.PersonaLabel + "=" + p.Name + "," + delivery.RevisionLabel, Limit: snapshotsPage}
	for {
		list, err := c.configMapMetadata.List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list the snapshots of persona %s/%s: %w", c.namespace, p.Name, err)
		}
		for i := range list.Items {
			m := &list.Items[i]
			if name, n, ok := delivery.LabelledSnapshot(m); ok && name == p.Name && metav1.IsControlledBy(m, p) {
				out[n] = m
			}
		}
		if opts.Continue = list.Continue; opts.Continue == "" {
			return out, nil
		}
	}
}

// snapshot is p's snapshot of revision n; nil when there is none.
func (c *cluster) snapshot(ctx context.Context, p *v1alpha1.Persona, n int64) (*corev1.ConfigMap, error) {
	name := delivery.SnapshotName(p.Name, n)
	cm, err := c.core.ConfigMaps(c.namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get snapshot %s/%s: %w", c.namespace, name, err)
	}
	if persona, m, ok := delivery.LabelledSnapshot(cm); !ok || persona != p.Name || m != n || !metav1.IsControlledBy(cm, p) {
		return nil, nil // not the operator's snapshot: another owner's, or without a snapshot's labels
	}
	return cm, nil
}

// live is the live ConfigMap persona-<name>; nil when there is none.
func (c *cluster) live(ctx context.Context, name string) (*corev1.ConfigMap, error) {
	cm, err := c.core.ConfigMaps(c.namespace).Get(ctx, delivery.ConfigMapName(name), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get ConfigMap %s/%s: %w", c.namespace, delivery.ConfigMapName(name), err)
	}
	return cm, nil
}

// annotate sets the annotation key of the Persona name to value, or
// removes it when value is "", by a merge patch that touches nothing else,
// and returns the resourceVersion it wrote.
func (c *cluster) annotate(ctx context.Context, name, key, value string) (string, error) {
	v := any(value)
	if value == "" {
		v = nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: v}}})
	if err != nil {
		return "", err
	}
	patched, err := c.personas.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return "", fmt.Errorf("annotate persona %s/%s: %w", c.namespace, name, err)
	}
	return patched.GetResourceVersion(), nil
}

// completePersonas completes the Persona names of the namespace of kube's flags.
func completePersonas(kube *genericclioptions.ConfigFlags) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, err := connect(kube)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		names, err := c.personaNames(cmd.Context())
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		slices.Sort(names)
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}
