package cli

import (
	"context"
	"fmt"
	"io"
	"maps"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/persona-operator/persona-operator/internal/manifest"
	"github.com/persona-operator/persona-operator/internal/promptdiff"
)

// The exit statuses of diff, those of kubectl diff.
const (
	DiffNone  = 0
	DiffFound = 1
	DiffError = 2
)

// The labels that name the sides in the diff headers.
const (
	labelNew  = "new"
	labelOld  = "old"
	labelLive = "live"
)

type diffOptions struct {
	new, old source
	live     bool
	output   string
	// kube are kubectl's connection flags; only --live reads them.
	kube *genericclioptions.ConfigFlags
	// kubeFlags are the names of those flags.
	kubeFlags []string
}

func newDiffCommand(s *Streams) *cobra.Command {
	o := &diffOptions{kube: genericclioptions.NewConfigFlags(true)}
	cmd := &cobra.Command{
		Use:   "diff (-f PATH... | -k DIR) (--against PATH... | --against-k DIR | --live) [flags]",
		Short: "Show how the rendered prompts of manifests differ from others or from the cluster",
		Long: `Render every persona of two sets of manifests, or of manifests and the
cluster, and print how their prompts differ: for each persona and key
(system-prompt.md, system-prompt.<variant>.md, persona.md) that differs, a
line "persona NAMESPACE/NAME KEY" and a unified diff with 3 lines of context,
whose headers name the side: old/, new/ or live/NAMESPACE/NAME/KEY. A persona
on one side only is listed as "persona NAMESPACE/NAME added" or "removed".
Personas that render the same are not mentioned.

A persona changes through its parents, layers, included layers and
templateFrom ConfigMaps, so an edit of one layer shows in every persona it
reaches.

-f and -k read the new manifests; --against and --against-k the old ones.
Both sides are checked as validate checks them, and every persona that
renders is compared; the problems are printed on standard error. A persona
that renders on the new side only because a problem of the old side is gone
is listed as "persona NAMESPACE/NAME fixed" and diffed against nothing; one
that no longer renders is listed as "broken". Problems of the old side alone
do not change the exit status, so a fix shows as a diff.

--live compares with the ConfigMaps persona-<name> of the cluster of the
kubeconfig context (--kubeconfig, --context, -n and kubectl's other
connection flags): one GET per persona of the new manifests. The new side
is rendered as the cluster renders it, with the cluster's
ClusterPromptLayers, PromptPlatform and the labels of the personas'
Namespaces, per kind unless the manifests hold that kind (then they are its
whole set); standard error says where each came from, and warns of one the
user may not read. A persona whose ConfigMap does not exist shows as added;
one whose ConfigMap a pin holds on an older revision is named. Without --live no
kubeconfig is read; manifests without a namespace are in -n, else default
(with --live, else the context's namespace).

Exit status, as kubectl diff: 0 no differences, 1 differences, 2 any error:
a usage error, a side that cannot be read or built, a cluster that cannot be
reached, or a problem on the new side (the differences of what renders are
still printed).`,
		Example: `  # What a pull request does to the prompts
  git worktree add /tmp/main main
  kubectl persona diff -f deploy/ --against /tmp/main/deploy/

  # A kustomize overlay against the cluster
  kubectl persona diff -k overlays/prod --live --context prod

  # For a CI comment
  kubectl persona diff -f deploy/ --against /tmp/main/deploy/ -o json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.check(cmd, args); err != nil {
				return err
			}
			return o.run(cmd.Context(), s)
		},
	}
	o.new.addFlags(cmd)
	f := cmd.Flags()
	f.StringArrayVar(&o.old.files, "against", nil, "old manifest file or directory `PATH` to compare with, - for standard input (repeatable; a,b for several)")
	f.StringArrayVar(&o.old.kustomizations, "against-k", nil, "compare with what the kustomization in `DIR` builds (repeatable)")
	_ = cmd.MarkFlagDirname("against-k")
	f.BoolVar(&o.live, "live", false, "compare with the personas' ConfigMaps in the cluster")
	f.StringVarP(&o.output, "output", "o", outputText, "output `FORMAT`: text or json")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{outputText, outputJSON}, cobra.ShellCompDirectiveNoFileComp))
	kube := pflag.NewFlagSet("kube", pflag.ContinueOnError)
	o.kube.AddFlags(kube)
	kube.VisitAll(func(fl *pflag.Flag) { o.kubeFlags = append(o.kubeFlags, fl.Name) })
	kube.Lookup("namespace").Usage = "the namespace of manifests that set none: default, or with --live the context's"
	f.AddFlagSet(kube)
	return cmd
}

// check rejects flag combinations that make no sense (status 2).
func (o *diffOptions) check(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError("unexpected arguments %q: give the new manifests with -f PATH or -k DIR, the old with --against PATH or --against-k DIR", args)
	}
	if o.new.empty() {
		return usageError("one of -f PATH and -k DIR is required: the new manifests")
	}
	if err := o.new.check("-f", "-k", nil); err != nil {
		return err
	}
	if err := o.old.check("--against", "--against-k", nil); err != nil {
		return err
	}
	switch {
	case o.live && !o.old.empty():
		return usageError("--live and --against are mutually exclusive: compare with either manifests or the cluster")
	case !o.live && o.old.empty():
		return usageError("one of --against PATH, --against-k DIR and --live is required: what to compare with")
	case o.new.readsStdin() && o.old.readsStdin():
		return usageError("-f - and --against - cannot both read standard input")
	}
	if !o.live {
		for _, name := range o.kubeFlags {
			if name != "namespace" && cmd.Flags().Changed(name) {
				return usageError("--%s applies to --live: without it, diff reads no kubeconfig", name)
			}
		}
	}
	if o.output != outputText && o.output != outputJSON {
		return usageError("--output %q is not one of text, json", o.output)
	}
	return nil
}

func (o *diffOptions) run(ctx context.Context, s *Streams) error {
	ns, err := o.namespace()
	if err != nil {
		return diffFailed(err)
	}
	// The new side as the cluster will render it: with its cluster-scoped
	// inputs, per kind unless the manifests hold that kind.
	var inputs inputsReport
	var withCluster func(*manifest.Set) error
	if o.live {
		withCluster = func(set *manifest.Set) (err error) {
			inputs, err = addClusterInputs(ctx, o.kube, set, "--live")
			return err
		}
	} else {
		withCluster = func(set *manifest.Set) error {
			inputs.warnings = offlineWarnings(set)
			return nil
		}
	}
	newSide, err := readSide(ctx, s, &o.new, ns, o.new.describe("-f", "-k"), withCluster)
	if err != nil {
		return diffFailed(err)
	}
	var oldSide *side
	if o.live {
		// A persona that does not render is looked up too: it shows as
		// broken when the cluster holds its render.
		wanted := maps.Clone(newSide.rendered)
		for r := range newSide.unrendered {
			wanted[r] = nil
		}
		live, notes, err := o.liveSide(ctx, wanted)
		if err != nil {
			return diffFailed(err)
		}
		inputs.notes = append(inputs.notes, notes...)
		oldSide = &side{rendered: live}
	} else if oldSide, err = readSide(ctx, s, &o.old, ns, o.old.describe("--against", "--against-k"), nil); err != nil {
		return diffFailed(err)
	}
	oldLabel := labelOld
	if o.live {
		oldLabel = labelLive
	}
	diffs := promptdiff.Compare(
		promptdiff.Side{Label: oldLabel, Personas: oldSide.rendered, Unrendered: oldSide.unrendered},
		promptdiff.Side{Label: labelNew, Personas: newSide.rendered, Unrendered: newSide.unrendered})
	if err := o.write(s.Out, diffs, oldSide, newSide); err != nil {
		return diffFailed(fmt.Errorf("write output: %w", err))
	}
	// The old side's problems are what a change may fix: they are shown,
	// and do not fail the diff. The new side's are what it brings.
	if o.output != outputJSON {
		inputs.write(s)
		oldSide.summarize(s.Err, "")
		newSide.summarize(s.Err, "; the diff shows the personas that render")
	}
	switch {
	case len(newSide.problems) > 0:
		return reported(DiffError)
	case len(diffs) > 0:
		return reported(DiffFound)
	}
	return nil
}

// diffFailed ends diff with status 2 for anything but a usage error.
func diffFailed(err error) error { return &exitError{code: DiffError, msg: err.Error()} }

// namespace is the namespace of manifests without one: -n, else default;
// with --live, -n, else the kubeconfig context's, else default, as kubectl
// gives it.
func (o *diffOptions) namespace() (string, error) {
	if !o.live {
		if *o.kube.Namespace != "" {
			return *o.kube.Namespace, nil
		}
		return manifest.DefaultNamespace, nil
	}
	ns, _, err := o.kube.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", fmt.Errorf("--live: the kubeconfig: %w", err)
	}
	return ns, nil
}

// write prints the differences: text, or one JSON document with the
// problems of both sides.
func (o *diffOptions) write(w io.Writer, diffs []promptdiff.Persona, oldSide, newSide *side) error {
	if o.output == outputJSON {
		return writeJSON(w, diffResult(diffs, oldSide, newSide))
	}
	for _, p := range diffs {
		ref := p.Namespace + "/" + p.Name
		switch p.Status {
		case promptdiff.Added, promptdiff.Removed:
			if _, err := fmt.Fprintf(w, "persona %s %s\n", ref, p.Status); err != nil {
				return err
			}
			continue
		case promptdiff.Fixed:
			if _, err := fmt.Fprintf(w, "persona %s fixed: it does not render on the old side\n", ref); err != nil {
				return err
			}
		case promptdiff.Broken:
			if _, err := fmt.Fprintf(w, "persona %s broken: it does not render on the new side\n", ref); err != nil {
				return err
			}
			continue
		}
		for _, k := range p.Keys {
			if _, err := fmt.Fprintf(w, "persona %s %s\n%s", ref, k.Key, k.Diff); err != nil {
				return err
			}
		}
	}
	return nil
}
