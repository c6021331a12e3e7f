package revisions

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/controller/kube"
	"github.com/persona-operator/persona-operator/internal/delivery"
)

// DefaultBytesPerNamespace is --snapshot-bytes-per-namespace's
// default: what the snapshots of one namespace may hold, keys and values.
const DefaultBytesPerNamespace = 64 << 20

// Store keeps each Persona's revisions as snapshots (personas.md#revisions):
// it writes a revision's snapshot, counts what a namespace's snapshots hold
// against the byte cap and evicts to make room, and prunes a Persona's
// snapshots past its spec.revisionHistoryLimit; the snapshots a Persona
// keeps whatever the limit and the cap say are the retention's
// (retention.go). It is the Persona controller's, which calls it from its
// reconciles: every method is safe for concurrent use.
type Store struct {
	// client reads the Personas from the manager's cache and deletes
	// snapshots; apiReader reads from the API server, and freshPods lists
	// the pods' metadata from it; snapshots reads what the cache of the
	// snapshots holds.
	client    client.Client
	apiReader client.Reader
	freshPods *freshPodLists
	snapshots kube.SnapshotReader
	writer    kube.ConfigMapWrites
	scheme    *runtime.Scheme
	// bytesPerNamespace caps a namespace's snapshots; 0 means
	// DefaultBytesPerNamespace.
	bytesPerNamespace int
	// keepers name further revisions whose snapshots are kept
	// (keptRevisions): the revisions injected pods name plug in here.
	keepers []Keeper
	// pruned are the snapshots pruned whose deletion is not yet watched.
	pruned *prunedSnapshots
	// bytes is what each namespace's snapshots hold.
	bytes *snapshotBytes
}

// Config is what a Store reads and writes through.
type Config struct {
	// Client reads Personas from the manager's cache, and deletes.
	Client client.Client
	// APIReader reads from the API server: snapshots' data, a pin set an
	// instant ago.
	APIReader client.Reader
	// FreshPods lists from the API server the pods' metadata, those a prune
	// must not take a snapshot from (kube.PodMetadataReader); nil means
	// APIReader.
	FreshPods client.Reader
	// Snapshots reads the snapshots, as the cache of them holds them.
	Snapshots kube.SnapshotReader
	// Writer creates the snapshots.
	Writer kube.ConfigMapWrites
	// Scheme makes a snapshot's owner reference.
	Scheme *runtime.Scheme
	// BytesPerNamespace caps what one namespace's snapshots hold
	// (--snapshot-bytes-per-namespace); 0 means DefaultBytesPerNamespace.
	BytesPerNamespace int
	// Keepers name further revisions to keep, for reasons of their own.
	Keepers []Keeper
}

// New is a Store that knows of no snapshot yet: a namespace's are counted
// when it is first written to.
func New(cfg Config) *Store {
	pods := cfg.FreshPods
	if pods == nil {
		pods = cfg.APIReader
	}
	s := &Store{client: cfg.Client, apiReader: cfg.APIReader, freshPods: newFreshPodLists(pods), snapshots: cfg.Snapshots, writer: cfg.Writer, scheme: cfg.Scheme,
		bytesPerNamespace: cfg.BytesPerNamespace, keepers: cfg.Keepers, pruned: newPrunedSnapshots()}
	s.bytes = newSnapshotBytes(s.namespaceSnapshots, s.readSnapshots)
	return s
}

// CountBytes keeps what the namespaces' snapshots hold from the events of
// the cache of the snapshots: without them, each write lists its
// namespace's snapshots again.
func (s *Store) CountBytes(snapshots *kube.SnapshotCache) error { return s.bytes.watch(snapshots) }

// TakePruned reports whether the snapshot key was deleted by a prune whose
// deletion had not been watched yet, and forgets it: that watch event needs
// no reconcile, while a snapshot deleted by anyone else is written again.
func (s *Store) TakePruned(key client.ObjectKey) bool { return s.pruned.take(key) }

// Snapshot is one of a Persona's snapshots as the cache of them has it:
// what it keeps of it (shared with the cache, not to be changed), and the
// revision it keeps.
type Snapshot struct {
	Meta   *delivery.SnapshotMeta
	Number int64
}

// Snapshots are p's snapshots the cache holds, controlled by p, oldest
// first.
func (s *Store) Snapshots(ctx context.Context, p *v1alpha1.Persona) ([]Snapshot, error) {
	all, err := s.snapshots.SnapshotsOf(ctx, p.Namespace, p.Name)
	if err != nil {
		return nil, fmt.Errorf("list the snapshots of persona %s: %w", p.Name, err)
	}
	var out []Snapshot
	for _, m := range all {
		if m.IsSnapshotOf(p, m.Revision) {
			out = append(out, Snapshot{Meta: m, Number: m.Revision})
		}
	}
	slices.SortFunc(out, func(a, b Snapshot) int { return cmp.Compare(a.Number, b.Number) })
	return out, nil
}

// Content is what a revision's snapshot is written from.
type Content struct {
	// Data is the data the delivery wrote, nil when it wrote none: then it
	// is the live ConfigMap's, read by Live, while that still holds the
	// revision.
	Data map[string]string
	// Guardrails is the identity of the guardrails Data was rendered with.
	Guardrails string
	// Live reads the Persona's live ConfigMap, its data included.
	Live func(ctx context.Context) (*corev1.ConfigMap, error)
}

// Failure is why a revision has no snapshot: the reason and message of the
// SnapshotFailed condition.
type Failure struct{ Reason, Message string }

// Keep makes sure the delivered revision rev has its snapshot, written
// from c. A failure to write it is a Failure (the SnapshotFailed
// condition), never an error: the live ConfigMap is delivered whatever
// becomes of its snapshot. Only a failure to read or write is an error.
func (s *Store) Keep(ctx context.Context, p *v1alpha1.Persona, rev v1alpha1.RevisionHistoryEntry, c Content) (*Failure, error) {
	key := client.ObjectKey{Namespace: p.Namespace, Name: delivery.SnapshotName(p.Name, rev.Revision)}
	switch held, err := s.snapshots.Snapshot(ctx, key.Namespace, key.Name); {
	case err != nil:
		return nil, fmt.Errorf("get snapshot %s: %w", key.Name, err)
	case held != nil:
		return heldSnapshotFailure(held.IsSnapshotOf(p, rev.Revision), key.Name), nil
	}
	data, guardrails := c.Data, c.Guardrails
	if data == nil {
		live, err := c.Live(ctx)
		if err != nil {
			return nil, fmt.Errorf("read ConfigMap %s for its snapshot: %w", delivery.ConfigMapName(p.Name), client.IgnoreNotFound(err))
		}
		if !delivery.Controls(p, live) || delivery.Revision(live.Annotations) != rev.Revision {
			return nil, nil // the live ConfigMap moved on: its own revision's snapshot follows
		}
		data, guardrails = live.Data, live.Annotations[delivery.GuardrailsAnnotation]
	}
	size := delivery.DataSize(data)
	if failure, err := s.reserveBytes(ctx, p, key.Name, size); failure != nil || err != nil {
		return failure, err
	}
	snap := &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace, Labels: delivery.SnapshotLabels(p.Name, rev.Revision),
			Annotations: map[string]string{
				delivery.ContentHashAnnotation:   rev.ContentHash,
				delivery.SnapshotBytesAnnotation: strconv.Itoa(size),
			}},
		Data:      data,
		Immutable: new(true),
	}
	// The guardrails it was rendered with, which a pin compares with the current ones.
	delivery.SetGuardrails(snap, guardrails)
	if err := controllerutil.SetControllerReference(p, snap, s.scheme); err != nil {
		return nil, fmt.Errorf("own snapshot: %w", err)
	}
	resourceVersion, err := s.writer.Create(ctx, snap)
	if err != nil {
		s.bytes.namespace(p.Namespace).release(key.Name)
	} else {
		s.bytes.namespace(p.Namespace).wrote(key.Name, resourceVersion, size)
	}
	switch {
	case err == nil:
		return nil, nil
	case !apierrors.IsAlreadyExists(err):
		return nil, fmt.Errorf("create snapshot %s: %w", key.Name, err)
	}
	// Created since the cache last heard of it, by this Persona or another owner.
	var existing corev1.ConfigMap
	if err := s.apiReader.Get(ctx, key, &existing); err != nil {
		return nil, fmt.Errorf("get snapshot %s: %w", key.Name, err)
	}
	return heldSnapshotFailure(delivery.IsSnapshotOf(p, &existing, rev.Revision), key.Name), nil
}

// heldSnapshotFailure is the failure when the name of p's snapshot is held
// by a ConfigMap that is not that snapshot (another owner's, or one without
// a snapshot's labels), nil when it is.
func heldSnapshotFailure(isTheSnapshot bool, name string) *Failure {
	if isTheSnapshot {
		return nil
	}
	return &Failure{Reason: v1alpha1.SnapshotNameTakenReason, Message: fmt.Sprintf(
		"ConfigMap %s exists and is not this Persona's snapshot (an older Persona of this name not yet deleted, or a ConfigMap without a snapshot's labels?); retrying", name)}
}

// reserveBytes counts size bytes for the snapshot name of p's
// namespace, about to be created, when they fit under the cap, the oldest
// snapshots no Persona keeps evicted to make room if they can; else it is
// the SnapshotBytesExceeded failure. The check, the evictions and the
// reservation hold the namespace's lock, so the cap holds however many
// workers write at once.
func (s *Store) reserveBytes(ctx context.Context, p *v1alpha1.Persona, name string, size int) (*Failure, error) {
	ledger, err := s.bytes.lock(ctx, p.Namespace)
	if err != nil {
		return nil, err
	}
	defer ledger.unlock()
	used, limit := ledger.used(), s.bytesLimit()
	if now := time.Now(); used+size > limit && !ledger.evictionExhausted(now, used) {
		if err := s.evict(ctx, p, ledger, used+size-limit); err != nil {
			return nil, err
		}
		if used = ledger.used(); used+size > limit {
			ledger.exhausted(now, used)
		}
	}
	if used+size > limit {
		return &Failure{Reason: v1alpha1.SnapshotBytesExceededReason, Message: fmt.Sprintf(
			"snapshot %s not written: the snapshots of namespace %s would hold %d bytes, over the operator's cap of %d (--snapshot-bytes-per-namespace), even without those no Persona keeps; retrying",
			name, p.Namespace, used+size, limit)}, nil
	}
	ledger.reserve(name, size)
	return nil, nil
}

// namespaceSnapshots are the snapshots of every Persona of namespace, as
// the cache of them holds them: shared with the cache, not to be changed.
func (s *Store) namespaceSnapshots(ctx context.Context, namespace string) ([]*delivery.SnapshotMeta, error) {
	all, err := s.snapshots.SnapshotsIn(ctx, namespace)
	if err != nil {
		return nil, fmt.Errorf("list the snapshots of namespace %s: %w", namespace, err)
	}
	return slices.DeleteFunc(all, func(m *delivery.SnapshotMeta) bool { return !m.IsSnapshot() }), nil
}

// readSnapshots reads the snapshots of namespace named, their data
// included, from the API server, for the sizes of those written before this
// manager started: one by one when they are few, else the namespace's
// snapshots by pages, so that a namespace of thousands costs a few lists,
// and a page's data at most readSnapshotsPage snapshots.
func (s *Store) readSnapshots(ctx context.Context, namespace string, names []string, each func(*corev1.ConfigMap)) error {
	if len(names) <= readSnapshotsPage {
		for _, name := range names {
			var cm corev1.ConfigMap
			switch err := s.apiReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &cm); {
			case apierrors.IsNotFound(err):
				continue // its deletion's event follows
			case err != nil:
				return err
			}
			each(&cm)
		}
		return nil
	}
	opts := []client.ListOption{client.InNamespace(namespace), client.Limit(readSnapshotsPage),
		client.MatchingLabelsSelector{Selector: kube.SnapshotSelector}}
	for page := ""; ; {
		var list corev1.ConfigMapList
		if err := s.apiReader.List(ctx, &list, append(opts, client.Continue(page))...); err != nil {
			return err
		}
		for i := range list.Items {
			each(&list.Items[i])
		}
		if page = list.Continue; page == "" {
			return nil
		}
	}
}

// readSnapshotsPage is how many snapshots readSnapshots reads one by one at
// most, and by page.
const readSnapshotsPage = 16

func (s *Store) bytesLimit() int {
	if s.bytesPerNamespace > 0 {
		return s.bytesPerNamespace
	}
	return DefaultBytesPerNamespace
}
