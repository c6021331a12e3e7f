package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/release"
)

// releaseOptions are promote's and abort's.
type releaseOptions struct {
	kube    *genericclioptions.ConfigFlags
	full    bool
	timeout time.Duration
}

func newPromoteCommand(s *Streams) *cobra.Command {
	o := &releaseOptions{kube: genericclioptions.NewConfigFlags(true)}
	cmd := &cobra.Command{
		Use:   "promote NAME [--full] [flags]",
		Short: "Move a persona's canary past the step it waits at, or promote it at once",
		Long: `Move the canary of the Persona NAME (docs/spec/v1alpha1/personas.md#prompt-releases)
past the step it waits at: a pause, or an analysis whose AnalysisRun is
Inconclusive. With --full, promote it at once: every new pod gets it, and
the live ConfigMap persona-NAME holds it.

It sets the annotation prompts.persona-operator.dev/promote to
"REVISION:STEP" (or "REVISION:full") for the canary's revision and step,
so that an annotation left over never acts on another step or canary,
waits until the status shows the canary moved on, and prints the unified
diff of each prompt key from the stable revision to the canary ("stable/"
and "canary/" in the headers).

It fails (status 1) when no canary runs, when the canary is at an analysis
step whose run is still going (wait for it, or use --full), or when the
operator has not moved it within --timeout. Status 2 is a usage error.`,
		Example: `  kubectl persona promote reviewer -n agents
  kubectl persona promote reviewer --full -n agents`,
		ValidArgsFunction: completePersonas(o.kube),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.check(cmd, args); err != nil {
				return err
			}
			return o.promote(cmd.Context(), s, args[0])
		},
	}
	cmd.Flags().BoolVar(&o.full, "full", false, "promote the canary at once, past every step left")
	o.addFlags(cmd)
	return cmd
}

func newAbortCommand(s *Streams) *cobra.Command {
	o := &releaseOptions{kube: genericclioptions.NewConfigFlags(true)}
	cmd := &cobra.Command{
		Use:   "abort NAME [flags]",
		Short: "Abort a persona's canary: new pods get the stable revision",
		Long: `Abort the canary of the Persona NAME (docs/spec/v1alpha1/personas.md#prompt-releases):
new pods get the stable revision; pods that run the canary keep it until
they end or restart. The canary stays Aborted until a newer revision.

It sets the annotation prompts.persona-operator.dev/abort to the canary's
revision, so that an annotation left over never aborts another canary,
waits until the status shows the canary Aborted, and prints the unified
diff of each prompt key from the stable revision to the canary.

It fails (status 1) when no canary runs, or when the operator has not
aborted it within --timeout. Status 2 is a usage error.`,
		Example:           `  kubectl persona abort reviewer -n agents`,
		ValidArgsFunction: completePersonas(o.kube),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.check(cmd, args); err != nil {
				return err
			}
			return o.abort(cmd.Context(), s, args[0])
		},
	}
	o.addFlags(cmd)
	return cmd
}

func (o *releaseOptions) addFlags(cmd *cobra.Command) {
	cmd.Flags().DurationVar(&o.timeout, "timeout", time.Minute, "how long to wait for the operator to act on it")
	addKubeFlags(cmd, o.kube)
}

func (o *releaseOptions) check(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return usageError("%s takes one argument, the Persona's NAME", cmd.CommandPath())
	}
	if o.timeout <= 0 {
		return usageError("--timeout must be positive, got %s", o.timeout)
	}
	return nil
}

// runningCanary reads the Persona name and its canary, or the error that
// says none runs.
func (o *releaseOptions) runningCanary(ctx context.Context, name string) (*cluster, *v1alpha1.Persona, v1alpha1.CanaryStatus, error) {
	c, p, err := connectTo(ctx, o.kube, name)
	if err != nil {
		return nil, nil, v1alpha1.CanaryStatus{}, failed("%v", err)
	}
	switch canary := p.Status.Canary; {
	case canary == nil:
		return nil, nil, v1alpha1.CanaryStatus{}, failed("persona %s/%s has no canary: its revision %d is delivered to every new pod", c.namespace, p.Name, p.Status.CurrentRevision)
	case canary.Phase == v1alpha1.CanaryAborted:
		return nil, nil, v1alpha1.CanaryStatus{}, failed("persona %s/%s: the canary of revision %d was aborted (%s); a newer revision starts another", c.namespace, p.Name, canary.Revision, canary.Message)
	default:
		return c, p, *canary, nil
	}
}

func (o *releaseOptions) promote(ctx context.Context, s *Streams, name string) error {
	c, p, canary, err := o.runningCanary(ctx, name)
	if err != nil {
		return err
	}
	stable := p.Status.CurrentRevision
	value := release.PromoteFullValue(canary.Revision)
	if !o.full {
		if canary.AnalysisRun != "" && canary.Phase != v1alpha1.CanaryPaused {
			return failed("persona %s/%s: the canary of revision %d is at step %d, whose AnalysisRun %s is still going; wait for it, or promote it at once with --full",
				c.namespace, name, canary.Revision, canary.Step, canary.AnalysisRun)
		}
		value = release.PromoteValue(canary.Revision, canary.Step)
	}
	moved := func(p *v1alpha1.Persona) bool {
		now := p.Status.Canary
		if now == nil || now.Revision != canary.Revision {
			return p.Status.CurrentRevision >= canary.Revision
		}
		return !o.full && now.Step > canary.Step
	}
	if p, err = o.command(ctx, c, name, v1alpha1.PromoteAnnotation, value, moved); err != nil {
		return err
	}
	if err := o.printDiff(ctx, s, c, p, stable, canary.Revision); err != nil {
		return err
	}
	if now := p.Status.Canary; now != nil && now.Revision == canary.Revision {
		fmt.Fprintf(s.Err, "persona %s/%s: the canary of revision %d is at step %d, %d%% of new pods (%s)\n", c.namespace, name, now.Revision, now.Step, now.Weight, now.Phase)
		return nil
	}
	fmt.Fprintf(s.Err, "persona %s/%s: revision %d promoted: it is delivered to every new pod\n", c.namespace, name, p.Status.CurrentRevision)
	return nil
}

func (o *releaseOptions) abort(ctx context.Context, s *Streams, name string) error {
	c, p, canary, err := o.runningCanary(ctx, name)
	if err != nil {
		return err
	}
	stable := p.Status.CurrentRevision
	aborted := func(p *v1alpha1.Persona) bool {
		now := p.Status.Canary
		return now == nil || now.Revision != canary.Revision || now.Phase == v1alpha1.CanaryAborted
	}
	if p, err = o.command(ctx, c, name, v1alpha1.AbortAnnotation, release.AbortValue(canary.Revision), aborted); err != nil {
		return err
	}
	if err := o.printDiff(ctx, s, c, p, stable, canary.Revision); err != nil {
		return err
	}
	fmt.Fprintf(s.Err, "persona %s/%s: the canary of revision %d was aborted: new pods get revision %d\n", c.namespace, name, canary.Revision, p.Status.CurrentRevision)
	return nil
}

// command sets the annotation key to value on the Persona name, and waits
// until done says the operator acted on it.
func (o *releaseOptions) command(ctx context.Context, c *cluster, name, key, value string, done func(*v1alpha1.Persona) bool) (*v1alpha1.Persona, error) {
	if _, err := c.annotate(ctx, name, key, value); err != nil {
		return nil, failed("%v", err)
	}
	var p *v1alpha1.Persona
	var last error
	err := wait.PollUntilContextTimeout(ctx, rollbackPoll, o.timeout, true, func(ctx context.Context) (bool, error) {
		p, last = c.persona(ctx, name)
		return last == nil && done(p), nil
	})
	if err == nil {
		return p, nil
	}
	if last != nil {
		return nil, failed("persona %s/%s: %v", c.namespace, name, last)
	}
	why := "no canary"
	if now := p.Status.Canary; now != nil {
		why = fmt.Sprintf("the canary of revision %d at step %d (%s): %s", now.Revision, now.Step, now.Phase, now.Message)
	}
	return nil, failed("persona %s/%s: the operator did not act on %s=%q within %s; the status shows %s", c.namespace, name, key, value, o.timeout, why)
}

// printDiff prints the diff from the stable revision to canary's.
func (o *releaseOptions) printDiff(ctx context.Context, s *Streams, c *cluster, p *v1alpha1.Persona, stable, canary int64) error {
	from, err := c.snapshot(ctx, p, stable)
	if err != nil {
		return failed("%v", err)
	}
	to, err := c.snapshot(ctx, p, canary)
	if err != nil {
		return failed("%v", err)
	}
	if _, err := writeRevisionDiff(s.Out, c.namespace, p.Name, "stable", dataOf(from), "canary", dataOf(to)); err != nil {
		return failed("write the output: %v", err)
	}
	return nil
}
