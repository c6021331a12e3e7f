package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/manifest"
)

type validateOptions struct {
	files     []string
	namespace string
}

func newValidateCommand(s *Streams) *cobra.Command {
	o := &validateOptions{}
	cmd := &cobra.Command{
		Use:   "validate -f PATH... [flags]",
		Short: "Check manifests as the admission webhook and the operator would",
		Long: `Validate Persona and PromptLayer manifests offline, for the CI of a GitOps
repository: every check of the admission webhook (unknown or misspelled keys,
names, enums, sizes, templates that do not parse or name unknown variables),
then what the operator checks when it renders: parents, layers, included
layers and templateFrom ConfigMaps that are missing among the manifests,
inheritance cycles, templates that fail to render, and ConfigMaps over the
size limit.

Paths are files, directories (searched recursively for *.yaml, *.yml and
*.json, skipping hidden ones) or - for standard input. Kinds other than
Persona, PromptLayer and ConfigMap are ignored.

Each problem is printed on standard output as

  FILE:DOC Kind/name: field: message

where DOC is the 1-based index of the YAML document in the file. The exit
status is 1 when there is any problem.`,
		Example: `  # Validate a GitOps directory
  kubectl persona validate -f deploy/

  # Validate what kustomize builds
  kustomize build overlays/prod | kubectl persona validate -f -`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(o.files) == 0 {
				if len(args) > 0 {
					return usageError("unexpected arguments %q: give manifests with -f PATH", args)
				}
				return usageError("-f PATH is required")
			}
			return o.run(cmd, s, append(splitPaths(o.files), args...))
		},
	}
	cmd.Flags().StringArrayVarP(&o.files, "filename", "f", nil, filenameUsage)
	cmd.Flags().StringVarP(&o.namespace, "namespace", "n", manifest.DefaultNamespace, "the `NAMESPACE` of manifests that set none")
	return cmd
}

func (o *validateOptions) run(cmd *cobra.Command, s *Streams, paths []string) error {
	set, err := manifest.Read(paths, manifest.Options{Namespace: o.namespace, Stdin: s.In})
	if err != nil {
		return failed("%v", err)
	}
	ps := problems(set.Problems)
	admitted := admit(set, &ps)
	personas, layers := 0, 0
	for _, obj := range set.Objects() {
		switch obj.Kind {
		case v1alpha1.PersonaKind:
			personas++
		case v1alpha1.PromptLayerKind:
			layers++
		}
		// A duplicate is reported as such; the first definition is checked.
		if !admitted[obj] || !set.Indexed(obj) {
			continue
		}
		switch obj.Kind {
		case v1alpha1.PersonaKind:
			checkPersona(cmd.Context(), set, obj, &ps)
		case v1alpha1.PromptLayerKind:
			checkLayer(set, obj, &ps)
		}
	}
	ps.write(s.Out)
	if len(ps) > 0 {
		fmt.Fprintf(s.Err, "%s found\n", plural(len(ps), "problem"))
		return reported(ExitInvalid)
	}
	if personas == 0 && layers == 0 {
		fmt.Fprintf(s.Err, "no Persona or PromptLayer found in %s\n", plural(set.Documents, "document"))
	}
	return nil
}
