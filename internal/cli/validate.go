package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/persona-operator/persona-operator/internal/manifest"
)

// The output formats of validate and diff.
const (
	outputText = "text"
	outputJSON = "json"
)

type validateOptions struct {
	source    source
	namespace string
	output    string
	cluster   clusterInputsFlags
}

func newValidateCommand(s *Streams) *cobra.Command {
	o := &validateOptions{}
	cmd := &cobra.Command{
		Use:   "validate (-f PATH... | -k DIR) [flags]",
		Short: "Check manifests as the admission webhook and the operator would",
		Long: `Validate Persona and PromptLayer manifests offline, for the CI of a GitOps
repository: every check of the admission webhook (unknown or misspelled keys,
names, enums, sizes, templates that do not parse or name unknown variables),
then what the operator checks when it renders: parents, layers, included
layers and templateFrom ConfigMaps that are missing among the manifests,
inheritance cycles, templates that fail to render, and ConfigMaps over the
size limit.

Paths are files, directories (searched recursively for *.yaml, *.yml and
*.json, skipping hidden ones) or - for standard input; -k DIR reads what the
kustomization in DIR builds. Personas, PromptLayers, ClusterPromptLayers,
ConfigMaps and Namespaces are read (a Namespace's labels select the
ClusterPromptLayers of its personas); other kinds are ignored.

Each problem is printed on standard output as

  FILE:DOC Kind/name: field: message

where DOC is the 1-based index of the YAML document in the file (with -k,
FILE is the file kustomize read the object from, or the kustomization that
generated it). The exit status is 1 when there is any problem. Manifests
without problems print one line with what was checked, for example
"3 Personas, 2 PromptLayers, 1 ClusterPromptLayer, 1 ConfigMap: valid".

What admission admits with a warning (a layer source one slip from a
built-in one, template braces in a persona's prompt) is printed on standard
error as "Warning: FILE:DOC Kind/name: field: message"; warnings do not
change the exit status.

-o json prints one JSON document instead (docs/cli.md#validate).`,
		Example: `  # Validate a GitOps directory
  kubectl persona validate -f deploy/

  # Validate what a kustomize overlay builds
  kubectl persona validate -k overlays/prod

  # For a CI report
  kubectl persona validate -f deploy/ -o json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.source.empty() && len(args) == 0 {
				return usageError("one of -f PATH and -k DIR is required")
			}
			if err := o.source.check("-f", "-k", args); err != nil {
				return err
			}
			if o.output != outputText && o.output != outputJSON {
				return usageError("--output %q is not one of text, json", o.output)
			}
			if err := o.cluster.check(cmd); err != nil {
				return err
			}
			return o.run(cmd, s)
		},
	}
	o.source.addFlags(cmd)
	cmd.Flags().StringVarP(&o.namespace, "namespace", "n", manifest.DefaultNamespace, "the `NAMESPACE` of manifests that set none")
	cmd.Flags().StringVarP(&o.output, "output", "o", outputText, "output `FORMAT`: text or json")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{outputText, outputJSON}, cobra.ShellCompDirectiveNoFileComp))
	o.cluster.addFlags(cmd)
	return cmd
}

func (o *validateOptions) run(cmd *cobra.Command, s *Streams) error {
	set, err := o.source.read(o.namespace, s.In)
	if err != nil {
		return failed("%v", err)
	}
	if err := o.cluster.add(cmd.Context(), s, set); err != nil {
		return failed("%v", err)
	}
	c := checkSet(cmd.Context(), set)
	if o.output == outputJSON {
		if err := writeJSON(s.Out, validateResult(c.problems, c.warnings, c.counts)); err != nil {
			return failed("write output: %v", err)
		}
		if len(c.problems) > 0 {
			return reported(ExitInvalid)
		}
		return nil
	}
	c.problems.write(s.Out)
	for _, w := range c.warnings.sorted() {
		fmt.Fprintln(s.Err, "Warning: "+oneLine(w.String()))
	}
	if len(c.problems) > 0 {
		fmt.Fprintf(s.Err, "%s found\n", plural(len(c.problems), "problem"))
		return reported(ExitInvalid)
	}
	n := c.counts
	kinds := []string{plural(n.Personas, "Persona"), plural(n.PromptLayers, "PromptLayer")}
	if n.ClusterPromptLayers > 0 {
		kinds = append(kinds, plural(n.ClusterPromptLayers, "ClusterPromptLayer"))
	}
	if n.PromptPlatforms > 0 {
		kinds = append(kinds, plural(n.PromptPlatforms, "PromptPlatform"))
	}
	kinds = append(kinds, plural(n.ConfigMaps, "ConfigMap"))
	if n.Namespaces > 0 {
		kinds = append(kinds, plural(n.Namespaces, "Namespace"))
	}
	fmt.Fprintf(s.Out, "%s: valid\n", strings.Join(kinds, ", "))
	if n.Personas == 0 && n.PromptLayers == 0 {
		fmt.Fprintf(s.Err, "no Persona or PromptLayer found in %s\n", plural(set.Documents, "document"))
	}
	return nil
}
