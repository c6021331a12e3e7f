package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
)

// The writes of a revision that the floors make beside the ConfigMap's, as
// the controller makes them (personas.md#revisions): the live ConfigMap's
// revision annotation, the immutable snapshot persona-<name>.r<n>, the
// deletion of the snapshot the history limit (0 in the measured world) no
// longer keeps, and the revision fields of the status.

// numberRevision gives r, the render of revision n of the Persona owner
// caused by cause, what the controller adds to it: the number on its
// ConfigMap and in its status, with the history up to n.
func numberRevision(r *rendered, n int64, cause v1alpha1.RevisionInput) (*corev1.ConfigMap, v1alpha1.PersonaStatus) {
	cm := r.configMap.DeepCopy()
	cm.Annotations[delivery.RevisionAnnotation] = strconv.FormatInt(n, 10)
	st := *r.status.DeepCopy()
	st.CurrentRevision, st.LatestRevision = n, n
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	for k := int64(1); k <= n; k++ {
		st.History = append(st.History, v1alpha1.RevisionHistoryEntry{Revision: k, ContentHash: cm.Annotations[delivery.ContentHashAnnotation], Time: now, Cause: cause})
	}
	return cm, st
}

// createSnapshot creates the snapshot of revision n of owner, whose data
// is live's.
func createSnapshot(ctx context.Context, c client.Client, owner *v1alpha1.Persona, live *corev1.ConfigMap, n int64) error {
	size := 0
	for k, v := range live.Data {
		size += len(k) + len(v)
	}
	snap := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: delivery.SnapshotName(owner.Name, n), Namespace: owner.Namespace,
			Labels: delivery.SnapshotLabels(owner.Name, n),
			Annotations: map[string]string{
				delivery.ContentHashAnnotation:   live.Annotations[delivery.ContentHashAnnotation],
				delivery.SnapshotBytesAnnotation: strconv.Itoa(size),
			},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner, v1alpha1.GroupVersion.WithKind("Persona"))}},
		Data:      live.Data,
		Immutable: new(true),
	}
	if err := c.Create(ctx, snap); err != nil {
		return fmt.Errorf("floor: create snapshot %s: %w", snap.Name, err)
	}
	return nil
}

// deleteSnapshot deletes the snapshot of revision n of owner.
func deleteSnapshot(ctx context.Context, c client.Client, owner *v1alpha1.Persona, n int64) error {
	snap := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: delivery.SnapshotName(owner.Name, n), Namespace: owner.Namespace}}
	if err := c.Delete(ctx, snap); err != nil {
		return fmt.Errorf("floor: prune snapshot %s: %w", snap.Name, err)
	}
	return nil
}
