package controller

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/controller/kube"
	"github.com/persona-operator/persona-operator/internal/delivery"
)

// DefaultSnapshotBytesPerNamespace is --snapshot-bytes-per-namespace's
// default: what the snapshots of one namespace may hold, keys and values.
const DefaultSnapshotBytesPerNamespace = 64 << 20

// snapshotRef is a snapshot of this Persona's as the metadata cache has it.
type snapshotRef struct {
	meta   *metav1.PartialObjectMetadata
	number int64
}

// snapshots are p's snapshots the metadata cache holds, controlled by p,
// oldest first.
func (r *PersonaReconciler) snapshots(ctx context.Context, p *v1alpha1.Persona) ([]snapshotRef, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
	if err := r.configMapMetadata.List(ctx, list, client.InNamespace(p.Namespace), client.MatchingFields{delivery.PersonaIndex: p.Name}); err != nil {
		return nil, fmt.Errorf("list the snapshots of persona %s: %w", p.Name, err)
	}
	var out []snapshotRef
	for i := range list.Items {
		m := &list.Items[i]
		if _, n, ok := delivery.LabelledSnapshot(m); ok && delivery.IsSnapshotOf(p, m, n) {
			out = append(out, snapshotRef{meta: m, number: n})
		}
	}
	slices.SortFunc(out, func(a, b snapshotRef) int { return int(a.number - b.number) })
	return out, nil
}

// snapshot makes sure the delivered revision rev has its snapshot: the
// data the delivery wrote (written, nil when it wrote none, with the
// identity of the guardrails it was rendered with) or, read from the live
// ConfigMap, the data it holds while that is still rev. A failure
// to write it is the SnapshotFailed condition, never a failed reconcile:
// the live ConfigMap is delivered whatever becomes of its snapshot.
func (r *PersonaReconciler) snapshot(ctx context.Context, p *v1alpha1.Persona, rev v1alpha1.RevisionHistoryEntry, written map[string]string, guardrails string) (*snapshotFailure, error) {
	key := client.ObjectKey{Namespace: p.Namespace, Name: delivery.SnapshotName(p.Name, rev.Revision)}
	held := kube.ConfigMapMetadata()
	switch err := r.configMapMetadata.Get(ctx, key, held); {
	case err == nil:
		return heldSnapshot(p, held, rev.Revision), nil
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("get snapshot %s: %w", key.Name, err)
	}
	data := written
	if data == nil {
		live, _, err := r.readConfigMap(ctx, client.ObjectKey{Namespace: p.Namespace, Name: delivery.ConfigMapName(p.Name)})
		if err != nil {
			return nil, fmt.Errorf("read ConfigMap %s for its snapshot: %w", delivery.ConfigMapName(p.Name), client.IgnoreNotFound(err))
		}
		if !delivery.Controls(p, live) || delivery.Revision(live.Annotations) != rev.Revision {
			return nil, nil // the live ConfigMap moved on: its own revision's snapshot follows
		}
		data, guardrails = live.Data, live.Annotations[delivery.GuardrailsAnnotation]
	}
	size := dataSize(data)
	if failure, err := r.reserveSnapshotBytes(ctx, p, key.Name, size); failure != nil || err != nil {
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
	if err := controllerutil.SetControllerReference(p, snap, r.Scheme); err != nil {
		return nil, fmt.Errorf("own snapshot: %w", err)
	}
	resourceVersion, err := r.configMapWriter.Create(ctx, snap)
	if err != nil {
		r.snapshotBytes.namespace(p.Namespace).release(key.Name)
	} else {
		r.snapshotBytes.namespace(p.Namespace).wrote(key.Name, resourceVersion, size)
	}
	switch {
	case err == nil:
		return nil, nil
	case !apierrors.IsAlreadyExists(err):
		return nil, fmt.Errorf("create snapshot %s: %w", key.Name, err)
	}
	// Created since the cache last heard of it, by this Persona or another owner.
	var existing corev1.ConfigMap
	if err := r.APIReader.Get(ctx, key, &existing); err != nil {
		return nil, fmt.Errorf("get snapshot %s: %w", key.Name, err)
	}
	return heldSnapshot(p, &existing, rev.Revision), nil
}

// keepSnapshot makes sure the revision attempt delivered has its snapshot,
// after the delivery and before the status, and reports a failure in the
// status (SnapshotFailed); it returns when to reconcile again, sooner than
// retryAfter when the snapshot is to be tried again.
func (r *PersonaReconciler) keepSnapshot(ctx context.Context, p *v1alpha1.Persona, attempt outcome, retryAfter time.Duration) (time.Duration, error) {
	if attempt.revision == nil {
		return retryAfter, nil
	}
	failure, err := r.snapshot(ctx, p, *attempt.revision, attempt.written, attempt.guardrails)
	if err != nil {
		return retryAfter, err
	}
	r.setSnapshotFailed(p, failure)
	if failure != nil && (retryAfter == 0 || retryAfter > snapshotRetry) {
		return snapshotRetry, nil
	}
	return retryAfter, nil
}

// snapshotRetry is how soon a revision whose snapshot failed is tried again.
const snapshotRetry = 30 * time.Second

// snapshotFailure is why a revision has no snapshot (SnapshotFailed).
type snapshotFailure struct{ reason, message string }

// heldSnapshot is the failure when the name of p's snapshot of revision n
// is held by an object that is not that snapshot (another owner's, or one
// without a snapshot's labels), nil when it is.
func heldSnapshot(p *v1alpha1.Persona, held client.Object, n int64) *snapshotFailure {
	if delivery.IsSnapshotOf(p, held, n) {
		return nil
	}
	return &snapshotFailure{reason: v1alpha1.SnapshotNameTakenReason, message: fmt.Sprintf(
		"ConfigMap %s exists and is not this Persona's snapshot (an older Persona of this name not yet deleted, or a ConfigMap without a snapshot's labels?); retrying", held.GetName())}
}

// reserveSnapshotBytes counts size bytes for the snapshot name of p's
// namespace, about to be created, when they fit under the cap, the oldest
// snapshots no Persona keeps evicted to make room if they can; else it is
// the SnapshotBytesExceeded failure. The check, the evictions and the
// reservation hold the namespace's lock, so the cap holds however many
// workers write at once.
func (r *PersonaReconciler) reserveSnapshotBytes(ctx context.Context, p *v1alpha1.Persona, name string, size int) (*snapshotFailure, error) {
	ledger, err := r.snapshotBytes.lock(ctx, p.Namespace)
	if err != nil {
		return nil, err
	}
	defer ledger.unlock()
	used, limit := ledger.used(), r.snapshotBytesLimit()
	if now := time.Now(); used+size > limit && !ledger.evictionExhausted(now, used) {
		if err := r.evict(ctx, p, ledger, used+size-limit); err != nil {
			return nil, err
		}
		if used = ledger.used(); used+size > limit {
			ledger.exhausted(now, used)
		}
	}
	if used+size > limit {
		return &snapshotFailure{reason: v1alpha1.SnapshotBytesExceededReason, message: fmt.Sprintf(
			"snapshot %s not written: the snapshots of namespace %s would hold %d bytes, over the operator's cap of %d (--snapshot-bytes-per-namespace), even without those no Persona keeps; retrying",
			name, p.Namespace, used+size, limit)}, nil
	}
	ledger.reserve(name, size)
	return nil, nil
}

// namespaceSnapshots are the snapshots of every Persona of namespace, as
// the metadata cache has them: shared with the cache, not to be changed.
func (r *PersonaReconciler) namespaceSnapshots(ctx context.Context, namespace string) ([]*metav1.PartialObjectMetadata, error) {
	hasRevision, err := labels.NewRequirement(delivery.RevisionLabel, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
	if err := r.configMapMetadata.List(ctx, list, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: labels.NewSelector().Add(*hasRevision)},
		client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list the snapshots of namespace %s: %w", namespace, err)
	}
	var out []*metav1.PartialObjectMetadata
	for i := range list.Items {
		if _, _, ok := delivery.LabelledSnapshot(&list.Items[i]); ok {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// readSnapshots reads the snapshots of namespace named, their data
// included, from the API server, for the sizes of those written before this
// manager started: one by one when they are few, else the namespace's
// snapshots by pages, so that a namespace of thousands costs a few lists,
// and a page's data at most readSnapshotsPage snapshots.
func (r *PersonaReconciler) readSnapshots(ctx context.Context, namespace string, names []string, each func(*corev1.ConfigMap)) error {
	if len(names) <= readSnapshotsPage {
		for _, name := range names {
			var cm corev1.ConfigMap
			switch err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &cm); {
			case apierrors.IsNotFound(err):
				continue // its deletion's event follows
			case err != nil:
				return err
			}
			each(&cm)
		}
		return nil
	}
	hasRevision, err := labels.NewRequirement(delivery.RevisionLabel, selection.Exists, nil)
	if err != nil {
		return err
	}
	opts := []client.ListOption{client.InNamespace(namespace), client.Limit(readSnapshotsPage),
		client.MatchingLabelsSelector{Selector: labels.NewSelector().Add(*hasRevision)}}
	for page := ""; ; {
		var list corev1.ConfigMapList
		if err := r.APIReader.List(ctx, &list, append(opts, client.Continue(page))...); err != nil {
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

func (r *PersonaReconciler) snapshotBytesLimit() int {
	if r.SnapshotBytesPerNamespace > 0 {
		return r.SnapshotBytesPerNamespace
	}
	return DefaultSnapshotBytesPerNamespace
}

// dataSize is the size of data: every key and value.
func dataSize(data map[string]string) int {
	size := 0
	for k, v := range data {
		size += len(k) + len(v)
	}
	return size
}

// Pruning deletes a Persona's snapshots past spec.revisionHistoryLimit,
// oldest first, besides those keptRevisions keeps. It runs only once the
// status names the current revision: a reconcile begins it before its
// status patch (beginPrune), so that the pods are listed while the status
// is patched, and finishes it after (finishPrune).

// pruning is a prune begun: the snapshots past the limit, and the list of
// the pods that may name some of them, under way.
type pruning struct {
	older []snapshotRef
	over  int
	pods  chan podRevisions
}

type podRevisions struct {
	inUse map[int64]bool
	err   error
}

// beginPrune finds the snapshots past p's limit from p's status as it is to
// be patched and, when there are, lists p's pods afresh in the background:
// a snapshot an injected pod names is kept (revisionsNamedByPods), and one
// admitted an instant ago, which the cache may not hold yet, counts too.
// nil when nothing is past the limit.
func (r *PersonaReconciler) beginPrune(ctx context.Context, p *v1alpha1.Persona) (*pruning, error) {
	// p's snapshots are of revisions 1 to the latest at most: while those
	// are within the limit, there is nothing to list.
	if max(p.Status.CurrentRevision, p.Status.LatestRevision) <= int64(p.Spec.HistoryLimit())+1 {
		return nil, nil
	}
	kept, err := r.keptRevisions(ctx, p)
	if err != nil {
		return nil, err
	}
	snapshots, err := r.snapshots(ctx, p)
	if err != nil {
		return nil, err
	}
	older := slices.DeleteFunc(snapshots, func(s snapshotRef) bool { return kept[s.number] })
	over := len(older) - p.Spec.HistoryLimit()
	if over <= 0 {
		return nil, nil
	}
	pr := &pruning{older: older, over: over, pods: make(chan podRevisions, 1)}
	namespace, name := p.Namespace, p.Name // the pods' list reads no more of p
	go func() {
		inUse, err := revisionsInUse(ctx, r.APIReader, namespace, name)
		pr.pods <- podRevisions{inUse: inUse, err: err}
	}()
	return pr, nil
}

// finishPrune deletes what pr found past the limit, less the snapshots
// the pods name and the one a pin set meanwhile names.
func (r *PersonaReconciler) finishPrune(ctx context.Context, p *v1alpha1.Persona, pr *pruning, patched *metav1.PartialObjectMetadata) error {
	if pr == nil {
		return nil
	}
	pods := <-pr.pods
	if pods.err != nil {
		return pods.err
	}
	// p was read at the start of the reconcile: a pin set since may name one of these.
	pinned, err := r.pinNow(ctx, p, patched)
	if err != nil {
		return err
	}
	older := slices.DeleteFunc(pr.older, func(s snapshotRef) bool { return pods.inUse[s.number] || s.number == pinned })
	over := len(older) - p.Spec.HistoryLimit()
	for _, s := range older[:max(over, 0)] {
		if err := r.deleteSnapshot(ctx, s.meta); err != nil {
			return err
		}
	}
	return nil
}

// pinNow is the revision p's pin annotation names as the API server has
// it now, 0 when none (or p is gone): as this reconcile's status patch
// answered (patched), a moment before the deletes, else read. Either leaves a pin set in the last milliseconds
// before a delete to find its snapshot gone (RevisionNotFound). The read
// lists p's metadata by name: the manager's rights on Personas are list
// and watch.
func (r *PersonaReconciler) pinNow(ctx context.Context, p *v1alpha1.Persona, patched *metav1.PartialObjectMetadata) (int64, error) {
	if patched != nil {
		n, _, _ := v1alpha1.PinnedRevisionOf(patched.Annotations)
		return n, nil
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("PersonaList"))
	if err := r.APIReader.List(ctx, list, client.InNamespace(p.Namespace), client.MatchingFields{"metadata.name": p.Name}); err != nil {
		return 0, fmt.Errorf("read the pin of persona %s: %w", p.Name, err)
	}
	for _, now := range list.Items {
		if now.Name == p.Name {
			n, _, _ := v1alpha1.PinnedRevisionOf(now.Annotations)
			return n, nil
		}
	}
	return 0, nil
}

// deleteSnapshot deletes the snapshot m, noting that the controller did:
// its deletion's event needs no reconcile, and its bytes are freed before
// the cache sees it go. One gone already frees nothing here: whoever
// deleted it, the cache's event counts its bytes off.
func (r *PersonaReconciler) deleteSnapshot(ctx context.Context, m *metav1.PartialObjectMetadata) error {
	key := client.ObjectKeyFromObject(m)
	r.pruned.add(key)
	target := kube.ConfigMapMetadata() // m may be the cache's own
	target.Namespace, target.Name = m.Namespace, m.Name
	err := r.Delete(ctx, target, client.Preconditions{UID: &m.UID})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		r.pruned.remove(key) // deleted before (or another of its name): its event came or comes as anyone's
		return nil
	case err != nil:
		r.pruned.remove(key)
		return fmt.Errorf("delete snapshot %s: %w", m.Name, err)
	}
	r.snapshotBytes.deletedHere(m)
	return nil
}

// setSnapshotFailed sets the SnapshotFailed condition, with an Event when
// it is set anew or says something else, or clears it when f is nil.
func (r *PersonaReconciler) setSnapshotFailed(p *v1alpha1.Persona, f *snapshotFailure) {
	if f == nil {
		meta.RemoveStatusCondition(&p.Status.Conditions, v1alpha1.SnapshotFailedCondition)
		return
	}
	previous := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.SnapshotFailedCondition)
	meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: v1alpha1.SnapshotFailedCondition, Status: metav1.ConditionTrue,
		Reason: f.reason, Message: f.message, ObservedGeneration: p.Generation})
	if previous == nil || previous.Message != f.message {
		r.Recorder.Eventf(p, nil, corev1.EventTypeWarning, v1alpha1.SnapshotFailedCondition, "Snapshot", "%s", f.message)
	}
}
