package persona

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/controller/revisions"
	"github.com/persona-operator/persona-operator/internal/delivery"
)

// Each revision the Persona controller delivers is kept as a snapshot by
// the revision store (internal/controller/revisions), after the delivery
// and before the status; the store prunes those past the history limit
// once the status names the new one (Reconcile's defer), in the background
// (background_prunes.go).

// RevisionStore keeps the revisions' snapshots (revisions.Store).
type RevisionStore interface {
	// Snapshots are p's snapshots, oldest first.
	Snapshots(ctx context.Context, p *v1alpha1.Persona) ([]revisions.Snapshot, error)
	// Keep makes sure revision rev of p has its snapshot.
	Keep(ctx context.Context, p *v1alpha1.Persona, rev v1alpha1.RevisionHistoryEntry, c revisions.Content) (*revisions.Failure, error)
	// BeginPrune finds p's snapshots past its limit from the caches, and
	// FinishPrune deletes them but those p's pods name, listed afresh.
	BeginPrune(ctx context.Context, p *v1alpha1.Persona) (*revisions.Pruning, error)
	FinishPrune(ctx context.Context, p *v1alpha1.Persona, pr *revisions.Pruning, patched *metav1.PartialObjectMetadata) error
	// TakePruned reports whether the snapshot key was deleted by a prune
	// not yet watched, and forgets it.
	TakePruned(key client.ObjectKey) bool
}

// prune prunes p's snapshots past its limit once its status is patched
// (patched: p's metadata as the patch answered, nil when it patched
// nothing). The snapshots are found at once; deleting them waits for a
// fresh list of p's pods, which the reconcile does not wait for. A prune
// that fails queues p again, rate-limited, as a failed reconcile would be,
// and the next reconcile prunes again.
func (r *reconciler) prune(ctx context.Context, req ctrl.Request, p *v1alpha1.Persona, patched *metav1.PartialObjectMetadata) error {
	pr, err := r.revisions.BeginPrune(ctx, p)
	if err != nil || pr == nil {
		return err
	}
	r.prunes.start(ctx, req.NamespacedName, func(ctx context.Context) error { return r.revisions.FinishPrune(ctx, p, pr, patched) },
		func(err error) {
			ctrl.LoggerFrom(ctx).Error(err, "prune the snapshots past the history limit")
			if q := r.queue.Load(); q != nil {
				(*q).AddWithOpts(priorityqueue.AddOpts{RateLimited: true}, req)
			}
		})
	return nil
}

// keepSnapshot makes sure the revision attempt delivered has its snapshot,
// after the delivery and before the status, and reports a failure in the
// status (SnapshotFailed); it returns when to reconcile again, sooner than
// retryAfter when the snapshot is to be tried again.
func (r *reconciler) keepSnapshot(ctx context.Context, p *v1alpha1.Persona, attempt outcome, retryAfter time.Duration) (time.Duration, error) {
	if attempt.revision == nil {
		return retryAfter, nil
	}
	failure, err := r.revisions.Keep(ctx, p, *attempt.revision,
		revisions.Content{Data: attempt.written, Guardrails: attempt.guardrails, Live: r.liveConfigMap(p)})
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

// setSnapshotFailed sets the SnapshotFailed condition, with an Event when
// it is set anew or says something else, or clears it when f is nil.
func (r *reconciler) setSnapshotFailed(p *v1alpha1.Persona, f *revisions.Failure) {
	if f == nil {
		meta.RemoveStatusCondition(&p.Status.Conditions, v1alpha1.SnapshotFailedCondition)
		return
	}
	previous := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.SnapshotFailedCondition)
	meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: v1alpha1.SnapshotFailedCondition, Status: metav1.ConditionTrue,
		Reason: f.Reason, Message: f.Message, ObservedGeneration: p.Generation})
	if previous == nil || previous.Message != f.Message {
		r.Recorder.Eventf(p, nil, corev1.EventTypeWarning, v1alpha1.SnapshotFailedCondition, "Snapshot", "%s", f.Message)
	}
}

// liveConfigMap reads p's live ConfigMap from the API server, for a
// snapshot of the revision it holds when the delivery wrote none.
func (r *reconciler) liveConfigMap(p *v1alpha1.Persona) func(context.Context) (*corev1.ConfigMap, error) {
	return func(ctx context.Context) (*corev1.ConfigMap, error) {
		cm, _, err := r.readConfigMap(ctx, client.ObjectKey{Namespace: p.Namespace, Name: delivery.ConfigMapName(p.Name)})
		return cm, err
	}
}
