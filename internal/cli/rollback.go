package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
)

type rollbackOptions struct {
	kube     *genericclioptions.ConfigFlags
	revision int64
	clear    bool
	timeout  time.Duration
}

// rollbackPoll is how often rollback reads the Persona while it waits.
const rollbackPoll = 250 * time.Millisecond

func newRollbackCommand(s *Streams) *cobra.Command {
	o := &rollbackOptions{kube: genericclioptions.NewConfigFlags(true)}
	cmd := &cobra.Command{
		Use:   "rollback NAME (--to-revision N | --clear) [flags]",
		Short: "Pin a persona to an earlier revision, or remove the pin",
		Long: `Deliver an earlier revision of the Persona NAME
(docs/delivery.md#rolling-back-a-prompt). --to-revision N checks that
revision N still has its snapshot, sets the annotation
prompts.persona-operator.dev/pin-revision: "N" on the Persona, waits until
its status.pinnedRevision is N, and prints the unified diff of each prompt
key that the pin made to the delivered ConfigMap persona-NAME ("before/"
and "after/" in the headers; nothing when it changed none). Renders go on
under a pin: 'kubectl persona history NAME' shows the latest revision.

--clear removes the annotation, waits until the operator delivers the
latest render again, and prints the diff that made.

It fails (status 1) when the revision has no snapshot, when the pin is
refused, or when the operator has not honoured it within --timeout; the
Persona's Pinned condition then says why. Status 2 is a usage error.`,
		Example: `  kubectl persona rollback reviewer --to-revision 3 -n agents
  kubectl persona rollback reviewer --clear -n agents`,
		ValidArgsFunction: completePersonas(o.kube),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError("%s takes one argument, the Persona's NAME", cmd.CommandPath())
			}
			switch {
			case o.clear && cmd.Flags().Changed("to-revision"):
				return usageError("--to-revision and --clear are mutually exclusive: pin a revision or remove the pin")
			case !o.clear && o.revision <= 0:
				return usageError("one of --to-revision N (a positive integer) and --clear is required")
			case o.timeout <= 0:
				return usageError("--timeout must be positive, got %s", o.timeout)
			}
			return o.run(cmd.Context(), s, args[0])
		},
	}
	f := cmd.Flags()
	f.Int64Var(&o.revision, "to-revision", 0, "pin revision `N`")
	f.BoolVar(&o.clear, "clear", false, "remove the pin: deliver the latest render")
	f.DurationVar(&o.timeout, "timeout", time.Minute, "how long to wait for the operator to deliver it")
	_ = cmd.RegisterFlagCompletionFunc("to-revision", completeRevisions(o.kube))
	addKubeFlags(cmd, o.kube)
	return cmd
}

func (o *rollbackOptions) run(ctx context.Context, s *Streams, name string) error {
	c, p, err := connectTo(ctx, o.kube, name)
	if err != nil {
		return failed("%v", err)
	}
	if !o.clear {
		snap, err := c.snapshot(ctx, p, o.revision)
		if err != nil {
			return failed("%v", err)
		}
		if snap == nil {
			return failed("persona %s/%s: revision %d has no snapshot %s (never kept, or pruned); 'kubectl persona history %s' lists those left",
				c.namespace, name, o.revision, delivery.SnapshotName(name, o.revision), name)
		}
	}
	before, err := c.live(ctx, name)
	if err != nil {
		return failed("%v", err)
	}
	value := ""
	if !o.clear {
		value = strconv.FormatInt(o.revision, 10)
	}
	patched, err := c.annotate(ctx, name, v1alpha1.PinRevisionAnnotation, value)
	if err != nil {
		return failed("%v", err)
	}
	var last error
	err = wait.PollUntilContextTimeout(ctx, rollbackPoll, o.timeout, true, func(ctx context.Context) (bool, error) {
		p, last = c.persona(ctx, name)
		if last == nil && o.refused(p, patched) {
			return false, errPinRefused
		}
		return last == nil && o.done(p), nil
	})
	if errors.Is(err, errPinRefused) {
		cond := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.PinnedCondition)
		return failed("persona %s/%s: the operator does not honour the pin of revision %d: Pinned=%s %s: %s; the pin stays until 'kubectl persona rollback %s --clear'",
			c.namespace, name, o.revision, cond.Status, cond.Reason, cond.Message, name)
	}
	if err != nil {
		return failed("persona %s/%s: %s", c.namespace, name, o.notDone(p, last))
	}
	after, err := c.live(ctx, name)
	if err != nil {
		return failed("%v", err)
	}
	if _, err := writeRevisionDiff(s.Out, c.namespace, name, "before", dataOf(before), "after", dataOf(after)); err != nil {
		return failed("write the output: %v", err)
	}
	if o.clear {
		fmt.Fprintf(s.Err, "persona %s/%s unpinned: revision %d is delivered\n", c.namespace, name, p.Status.CurrentRevision)
		return nil
	}
	fmt.Fprintf(s.Err, "persona %s/%s pinned to revision %d: revision %d is delivered; the latest is %d\n",
		c.namespace, name, o.revision, p.Status.CurrentRevision, p.Status.LatestRevision)
	return nil
}

// done reports whether the operator honours what rollback asked of p: the
// pin of the revision, or no pin and the latest revision delivered.
func (o *rollbackOptions) done(p *v1alpha1.Persona) bool {
	if p.Status.ObservedGeneration != p.Generation {
		return false
	}
	if o.clear {
		return p.Status.PinnedRevision == 0 && meta.FindStatusCondition(p.Status.Conditions, v1alpha1.PinnedCondition) == nil
	}
	return p.Status.PinnedRevision == o.revision
}

// errPinRefused stops the wait: the operator reported it will not honour the pin.
var errPinRefused = errors.New("the pin is refused")

// refused reports whether p's status, written since the pin's patch (at
// resourceVersion patched), says the pin of the revision is not honoured:
// Pinned=False, its message naming that revision.
func (o *rollbackOptions) refused(p *v1alpha1.Persona, patched string) bool {
	if o.clear || p.ResourceVersion == patched {
		return false
	}
	c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.PinnedCondition)
	if c == nil || c.Status != metav1.ConditionFalse {
		return false
	}
	named := fmt.Sprintf("revision %d", o.revision)
	rest, ok := strings.CutPrefix(c.Message, named)
	return ok && (rest == "" || rest[0] == ' ' || rest[0] == ':')
}

// notDone says why rollback stopped waiting: the Persona's Pinned
// condition when it has one, or the last error reading it.
func (o *rollbackOptions) notDone(p *v1alpha1.Persona, last error) string {
	if last != nil {
		return last.Error()
	}
	what := fmt.Sprintf("status.pinnedRevision is not %d", o.revision)
	if o.clear {
		what = "the pin is still reported"
	}
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.PinnedCondition); c != nil {
		return fmt.Sprintf("%s after %s: Pinned=%s %s: %s", what, o.timeout, c.Status, c.Reason, c.Message)
	}
	return fmt.Sprintf("%s after %s", what, o.timeout)
}

// dataOf is cm's data; nil without a ConfigMap.
func dataOf(cm *corev1.ConfigMap) map[string]string {
	if cm == nil {
		return nil
	}
	return cm.Data
}
