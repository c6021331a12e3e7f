package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/promptdiff"
	"github.com/persona-operator/persona-operator/internal/render"
)

type historyOptions struct {
	kube     *genericclioptions.ConfigFlags
	revision int64
	diff     bool
	output   string
	// now is the time ages are counted to.
	now func() time.Time
}

func newHistoryCommand(s *Streams) *cobra.Command {
	o := &historyOptions{kube: genericclioptions.NewConfigFlags(true), now: time.Now}
	cmd := &cobra.Command{
		Use:   "history NAME [--revision N [--diff]] [flags]",
		Short: "List a persona's revisions in the cluster, or print one",
		Long: `List the revisions of the Persona NAME (docs/delivery.md#rolling-back-a-prompt):
for each revision its number, content hash, age, cause (the object whose
change made it, KIND/NAME@GENERATION, or @rvRESOURCEVERSION for a ConfigMap
or Namespace, or operator), the bytes of its snapshot ("-" when it has none
any more) and whether it is the delivered, the latest or the pinned one.
The revisions are those of status.history and of the snapshots
persona-NAME.rN that are left.

--revision N prints revision N from its snapshot: -o prompt its
system-prompt.md, -o configmap the snapshot, -o json its revision.json.
--diff prints instead the unified diff of each prompt key from revision N to
the delivered ConfigMap persona-NAME, with the exit status of kubectl diff:
0 no differences, 1 differences, 2 any error.

It reads the Persona and its ConfigMaps from the cluster of the kubeconfig
context (--kubeconfig, --context, -n and kubectl's other connection flags).`,
		Example: `  kubectl persona history reviewer -n agents
  kubectl persona history reviewer --revision 3
  kubectl persona history reviewer --revision 3 --diff`,
		ValidArgsFunction: completePersonas(o.kube),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError("%s takes one argument, the Persona's NAME", cmd.CommandPath())
			}
			if err := o.check(cmd); err != nil {
				return err
			}
			return o.run(cmd.Context(), s, args[0])
		},
	}
	f := cmd.Flags()
	f.Int64Var(&o.revision, "revision", 0, "print revision `N`")
	f.BoolVar(&o.diff, "diff", false, "with --revision, diff revision N against the delivered ConfigMap")
	f.StringVarP(&o.output, "output", "o", "", "output `FORMAT`: the list text or json; one revision prompt, configmap or json")
	_ = cmd.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if o.revision > 0 {
			return []cobra.Completion{outputPrompt, outputConfigMap, outputJSON}, cobra.ShellCompDirectiveNoFileComp
		}
		return []cobra.Completion{outputText, outputJSON}, cobra.ShellCompDirectiveNoFileComp
	})
	_ = cmd.RegisterFlagCompletionFunc("revision", completeRevisions(o.kube))
	addKubeFlags(cmd, o.kube)
	return cmd
}

func (o *historyOptions) check(cmd *cobra.Command) error {
	switch {
	case cmd.Flags().Changed("revision") && o.revision <= 0:
		return usageError("--revision must be a positive integer, got %d", o.revision)
	case o.diff && o.revision == 0:
		return usageError("--diff needs --revision N: the revision to diff against the delivered one")
	case o.diff && o.output != "":
		return usageError("--diff prints a unified diff: it takes no -o")
	case o.revision > 0 && !slices.Contains([]string{"", outputPrompt, outputConfigMap, outputJSON}, o.output):
		return usageError("-o %q: one revision prints as prompt, configmap or json", o.output)
	case o.revision == 0 && !slices.Contains([]string{"", outputText, outputJSON}, o.output):
		return usageError("-o %q: the list prints as text or json", o.output)
	}
	return nil
}

func (o *historyOptions) run(ctx context.Context, s *Streams, name string) error {
	fail := failed
	if o.diff {
		fail = func(format string, args ...any) error { return diffFailed(fmt.Errorf(format, args...)) }
	}
	// A failed write of the output is a failure, not a usage error.
	written := func(err error) error {
		if err != nil {
			return fail("write the output: %v", err)
		}
		return nil
	}
	c, p, err := connectTo(ctx, o.kube, name)
	if err != nil {
		return fail("%v", err)
	}
	if o.revision == 0 {
		h, err := c.history(ctx, p)
		if err != nil {
			return fail("%v", err)
		}
		if o.output == outputJSON {
			return written(writeJSON(s.Out, h))
		}
		return written(h.writeTable(s.Out, o.now()))
	}
	snap, err := c.snapshot(ctx, p, o.revision)
	if err != nil {
		return fail("%v", err)
	}
	if snap == nil {
		return fail("persona %s/%s: revision %d has no snapshot %s (never kept, or pruned); 'kubectl persona history %s' lists those left",
			c.namespace, name, o.revision, delivery.SnapshotName(name, o.revision), name)
	}
	if o.diff {
		live, err := c.live(ctx, name)
		if err != nil {
			return fail("%v", err)
		}
		if found, err := writeRevisionDiff(s.Out, c.namespace, name, "r"+strconv.FormatInt(o.revision, 10), snap.Data, "live", dataOf(live)); err != nil {
			return fail("%v", err)
		} else if found {
			return reported(DiffFound)
		}
		return nil
	}
	switch o.output {
	case outputConfigMap:
		snap.ManagedFields = nil
		raw, err := configMapYAML(snap)
		if err != nil {
			return fail("%v", err)
		}
		_, err = s.Out.Write(raw)
		return written(err)
	case outputJSON:
		var rec any
		if err := json.Unmarshal([]byte(snap.Data[render.RevisionKey]), &rec); err != nil {
			return fail("snapshot %s: revision.json: %v", snap.Name, err)
		}
		return written(writeJSON(s.Out, rec))
	}
	_, err = io.WriteString(s.Out, snap.Data[render.SystemPromptKey])
	return written(err)
}

// writeRevisionDiff prints the unified diff of each prompt key from the
// data before (labelled from) to after (to), as diff does; found reports a
// difference.
func writeRevisionDiff(w io.Writer, namespace, name, from string, before map[string]string, to string, after map[string]string) (found bool, _ error) {
	ref := promptdiff.Ref{Namespace: namespace, Name: name}
	diffs := promptdiff.Compare(
		promptdiff.Side{Label: from, Personas: map[promptdiff.Ref]map[string]string{ref: before}},
		promptdiff.Side{Label: to, Personas: map[promptdiff.Ref]map[string]string{ref: after}})
	for _, d := range diffs {
		for _, k := range d.Keys {
			if _, err := fmt.Fprintf(w, "persona %s %s\n%s", ref, k.Key, k.Diff); err != nil {
				return true, err
			}
		}
	}
	return len(diffs) > 0, nil
}

// history is what history NAME prints, and its -o json.
type history struct {
	Namespace       string            `json:"namespace"`
	Persona         string            `json:"persona"`
	CurrentRevision int64             `json:"currentRevision"`
	LatestRevision  int64             `json:"latestRevision"`
	PinnedRevision  int64             `json:"pinnedRevision,omitempty"`
	Revisions       []historyRevision `json:"revisions"`
}

type historyRevision struct {
	Revision    int64                  `json:"revision"`
	ContentHash string                 `json:"contentHash"`
	Time        metav1.Time            `json:"time"`
	Cause       v1alpha1.RevisionInput `json:"cause"`
	// Bytes is the size of its snapshot's data; 0 without a snapshot.
	Bytes     int    `json:"bytes,omitempty"`
	Snapshot  string `json:"snapshot,omitempty"`
	Delivered bool   `json:"delivered,omitempty"`
	Latest    bool   `json:"latest,omitempty"`
	Pinned    bool   `json:"pinned,omitempty"`
	// Release is what became of it as a canary of spec.rollout.
	Release *v1alpha1.RevisionRelease `json:"release,omitempty"`
}

// history is p's revisions, read from the snapshots' metadata, and the
// data of only those snapshots whose revisions status.history no longer
// names (their revision.json tells their time and cause).
func (c *cluster) history(ctx context.Context, p *v1alpha1.Persona) (history, error) {
	snapshots, err := c.snapshots(ctx, p)
	if err != nil {
		return history{}, err
	}
	records := map[int64]*delivery.Record{}
	for n := range snapshots {
		if slices.ContainsFunc(p.Status.History, func(e v1alpha1.RevisionHistoryEntry) bool { return e.Revision == n }) {
			continue
		}
		snap, err := c.snapshot(ctx, p, n)
		if err != nil {
			return history{}, err
		}
		var rec delivery.Record
		if snap != nil && json.Unmarshal([]byte(snap.Data[render.RevisionKey]), &rec) == nil && rec.Revision == n {
			records[n] = &rec
		}
	}
	return historyOf(p, snapshots, records), nil
}

// historyOf is p's revisions: those of status.history, and those of the
// snapshots left, which status.history (the last 10) may no longer name;
// records are the revision.json of those.
func historyOf(p *v1alpha1.Persona, snapshots map[int64]*metav1.PartialObjectMetadata, records map[int64]*delivery.Record) history {
	byNumber := map[int64]*historyRevision{}
	for _, e := range p.Status.History {
		byNumber[e.Revision] = &historyRevision{Revision: e.Revision, ContentHash: e.ContentHash, Time: e.Time, Cause: e.Cause, Release: e.Release}
	}
	for n, cm := range snapshots {
		r, ok := byNumber[n]
		if !ok {
			r = &historyRevision{Revision: n, ContentHash: cm.Annotations[delivery.ContentHashAnnotation], Time: cm.CreationTimestamp}
			if rec, ok := records[n]; ok {
				r.Time, r.Cause = rec.RenderedAt, rec.Cause
			}
			byNumber[n] = r
		}
		r.Snapshot = cm.Name
		r.Bytes, _ = strconv.Atoi(cm.Annotations[delivery.SnapshotBytesAnnotation])
	}
	st := p.Status
	h := history{Namespace: p.Namespace, Persona: p.Name, CurrentRevision: st.CurrentRevision, LatestRevision: st.LatestRevision,
		PinnedRevision: st.PinnedRevision, Revisions: []historyRevision{}}
	for _, n := range slices.Sorted(maps.Keys(byNumber)) {
		r := byNumber[n]
		r.Delivered, r.Latest, r.Pinned = n == st.CurrentRevision, n == st.LatestRevision, n == st.PinnedRevision
		h.Revisions = append(h.Revisions, *r)
	}
	return h
}

// writeTable prints h as kubectl prints a table, ages counted to now.
func (h history) writeTable(w io.Writer, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	// RELEASE only when a revision was released as a canary: a Persona
	// without spec.rollout keeps the table it always had.
	released := slices.ContainsFunc(h.Revisions, func(r historyRevision) bool { return r.Release != nil })
	header := "REVISION\tHASH\tAGE\tCAUSE\tBYTES\tSTATUS"
	if released {
		header += "\tRELEASE"
	}
	fmt.Fprintln(tw, header)
	for _, r := range h.Revisions {
		bytes := "-"
		if r.Snapshot != "" {
			bytes = strconv.Itoa(r.Bytes)
		}
		age := "<unknown>"
		if !r.Time.IsZero() {
			age = duration.HumanDuration(now.Sub(r.Time.Time))
		}
		row := fmt.Sprintf("%d\t%s\t%s\t%s\t%s\t%s", r.Revision, shortHash(r.ContentHash), age, causeText(r.Cause, h.Namespace), bytes, r.marks())
		if released {
			row += "\t" + r.releaseText()
		}
		fmt.Fprintln(tw, row)
	}
	return tw.Flush()
}

// marks are delivered, latest and pinned, as they apply; "" for none.
func (r historyRevision) marks() string {
	var out []string
	if r.Delivered {
		out = append(out, "delivered")
	}
	if r.Latest {
		out = append(out, "latest")
	}
	if r.Pinned {
		out = append(out, "pinned")
	}
	return strings.Join(out, ",")
}

// releaseText is what became of the revision as a canary, and why, "-"
// for a revision delivered at once.
func (r historyRevision) releaseText() string {
	if r.Release == nil {
		return "-"
	}
	if r.Release.Message == "" {
		return r.Release.Outcome
	}
	return r.Release.Outcome + ": " + r.Release.Message
}

// shortHash is sha256: and the first 12 hex digits of hash, as short as a
// git abbreviation and as unambiguous within one Persona's history.
func shortHash(hash string) string {
	if hex, ok := strings.CutPrefix(hash, "sha256:"); ok && len(hex) > 12 {
		return "sha256:" + hex[:12]
	}
	return hash
}

// causeText is KIND/NAME@GENERATION, KIND/NAME@rvVERSION or operator; the
// namespace is named when it is not the Persona's.
func causeText(c v1alpha1.RevisionInput, namespace string) string {
	if c.Kind == v1alpha1.RevisionCauseOperator || c.Kind == "" {
		return cmp.Or(c.Kind, "-")
	}
	name := c.Name
	if c.Namespace != "" && c.Namespace != namespace {
		name = c.Namespace + "/" + name
	}
	version := "@" + strconv.FormatInt(c.Generation, 10)
	if c.Generation == 0 {
		version = "@rv" + c.ResourceVersion
	}
	return c.Kind + "/" + name + version
}

// completeRevisions completes the numbers of the revisions of the Persona
// the command line names.
func completeRevisions(kube *genericclioptions.ConfigFlags) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) != 1 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, err := connect(kube)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		p, err := c.persona(cmd.Context(), args[0])
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		snapshots, err := c.snapshots(cmd.Context(), p)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, n := range slices.Sorted(maps.Keys(snapshots)) {
			out = append(out, strconv.FormatInt(n, 10))
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}
