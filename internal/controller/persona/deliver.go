package persona

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/delivery"
	"github.com/persona-operator/persona-operator/internal/render"
)

// deliver makes persona-<name> hold the render: created when missing,
// updated when it differs, left alone when it is current, and never touched
// when another owner controls it.
func (r *reconciler) deliver(ctx context.Context, p *v1alpha1.Persona, attempt outcome, announce bool) (outcome, error) {
	rendered(ctx)
	desired := delivery.ConfigMap(p.Name, p.Namespace, attempt.output)
	delivery.SetGuardrails(desired, attempt.guardrails)
	setIfNotEmpty(desired.Annotations, delivery.FallbackAnnotation, attempt.fallback)
	if err := controllerutil.SetControllerReference(p, desired, r.Scheme); err != nil {
		return outcome{}, fmt.Errorf("own ConfigMap: %w", err)
	}
	key := client.ObjectKeyFromObject(desired)
	hash := desired.Annotations[delivery.ContentHashAnnotation]
	current, currentHash, err := r.currentConfigMap(ctx, key)
	if apierrors.IsNotFound(err) {
		rev, stampErr := r.stamp(ctx, p, attempt, nil, "")
		if stampErr != nil {
			return outcome{}, fmt.Errorf("number the revision of ConfigMap %s: %w", desired.Name, stampErr)
		}
		// A new ConfigMap's revision always comes with its revision.json.
		created := desired.DeepCopy()
		created.Annotations[delivery.RevisionAnnotation] = strconv.FormatInt(rev.entry.Revision, 10)
		created.Data[render.RevisionKey] = string(rev.record)
		switch err = r.write(ctx, key, hash, r.configMapWriter.Create, created, rev); {
		case err == nil:
			attempt.wrote, attempt.revision, attempt.written = true, &rev.entry, created.Data
			return attempt, nil
		case !apierrors.IsAlreadyExists(err):
			return outcome{}, fmt.Errorf("create ConfigMap %s: %w", desired.Name, err)
		}
		// It was created since the cache last heard of it.
		current, currentHash, err = r.readConfigMap(ctx, key)
	}
	if err != nil {
		return outcome{}, fmt.Errorf("get ConfigMap %s: %w", desired.Name, err)
	}
	if !delivery.Controls(p, current) {
		adopted, err := r.adoptOrphan(ctx, p, key)
		if err != nil {
			return outcome{}, err
		}
		if adopted == nil {
			return failed(v1alpha1.ConfigMapConflictReason, fmt.Errorf("ConfigMap %s exists and is not controlled by this Persona; delete or rename it", desired.Name)), nil
		}
		// The adoption is written, whatever the data.
		current, currentHash = adopted, ""
	}
	rev, err := r.stamp(ctx, p, attempt, current, currentHash)
	if err != nil {
		return outcome{}, fmt.Errorf("number the revision of ConfigMap %s: %w", desired.Name, err)
	}
	desired.Annotations[delivery.RevisionAnnotation] = strconv.FormatInt(rev.entry.Revision, 10)
	attempt.revision = &rev.entry
	stale := staleAnnotations(current, desired)
	// A snapshot's revision label takes the live ConfigMap out of the
	// watch of the operator's ConfigMaps (kube.NotSnapshotSelector): it is
	// taken off, as a missing managed-by label is put back.
	_, snapshotLabelled := current.Labels[delivery.RevisionLabel]
	if isCurrent(current, currentHash, desired) && len(stale) == 0 && !snapshotLabelled {
		return attempt, nil
	}
	if announce && currentHash != hash {
		// nil when it cannot be read, which only makes the Event say less.
		attempt.previous, _ = r.configMapData(ctx, current)
	}
	if err := r.applyRevision(ctx, rev, desired, current); err != nil {
		return outcome{}, fmt.Errorf("read ConfigMap %s: %w", desired.Name, err)
	}
	// current is this reconcile's own copy, with all of the metadata: the
	// update replaces the whole ConfigMap.
	current.Data = desired.Data
	current.BinaryData = nil
	for k, v := range desired.Labels {
		metav1.SetMetaDataLabel(&current.ObjectMeta, k, v)
	}
	for k, v := range desired.Annotations {
		metav1.SetMetaDataAnnotation(&current.ObjectMeta, k, v)
	}
	for _, k := range stale {
		delete(current.Annotations, k)
	}
	delete(current.Labels, delivery.RevisionLabel)
	if err := r.write(ctx, key, hash, r.configMapWriter.Update, current, rev); err != nil {
		return outcome{}, fmt.Errorf("update ConfigMap %s: %w", desired.Name, err)
	}
	attempt.wrote, attempt.written = true, current.Data
	return attempt, nil
}

// write writes cm, of content hash hash, with do, and records the version
// written. When someone else wrote the ConfigMap while the write was under
// way, it fails, for the Persona to be reconciled again.
func (r *reconciler) write(ctx context.Context, key client.ObjectKey, hash string,
	do func(context.Context, *corev1.ConfigMap) (string, error), cm *corev1.ConfigMap, rev *revision) error {
	r.writes.writing(key, hash, rev.kept(cm.Data))
	version, err := do(ctx, cm)
	if err != nil {
		r.writes.forget(key)
		return err
	}
	if r.writes.wrote(key, version) {
		return fmt.Errorf("ConfigMap %s was also written by someone else before this write's answer came back; reading it again", key.Name)
	}
	return nil
}

// isCurrent reports whether the ConfigMap, whose data has content hash
// currentHash, holds the desired data (compared by the content hash the
// desired ConfigMap carries), labels and annotations; other labels and
// annotations are left to their owners.
func isCurrent(current *corev1.ConfigMap, currentHash string, desired *corev1.ConfigMap) bool {
	if currentHash == "" || currentHash != desired.Annotations[delivery.ContentHashAnnotation] {
		return false
	}
	for k, v := range desired.Labels {
		if current.Labels[k] != v {
			return false
		}
	}
	for k, v := range desired.Annotations {
		if current.Annotations[k] != v {
			return false
		}
	}
	return true
}

func setIfNotEmpty(m map[string]string, key, value string) {
	if value != "" {
		m[key] = value
	}
}

// staleAnnotations are the operator's annotations that current has and
// desired does not: a good render clears a fallback's, a render without
// guardrails their identity.
func staleAnnotations(current, desired *corev1.ConfigMap) []string {
	var stale []string
	for _, k := range delivery.OperatorAnnotations {
		if _, ok := desired.Annotations[k]; ok {
			continue
		}
		if _, ok := current.Annotations[k]; ok {
			stale = append(stale, k)
		}
	}
	return stale
}
