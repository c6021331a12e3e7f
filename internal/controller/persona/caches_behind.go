package persona

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/controller/kube"
)

// A manager's caches follow the API server's watches, which may lag the
// latest writes by a moment, more on an API server that fell behind, and a
// replica that becomes the leader renders from caches it filled while
// another one wrote: a render from them could
// deliver content older than what the live ConfigMap holds, as a revision
// of its own, and roll the workloads that follow it twice. So before a
// render that differs from the live ConfigMap is delivered, every input of
// this API that it read at a lower generation than the live revision names
// is looked up on the API server; if it is newer there, the caches are
// behind and nothing is written until they have caught up. An input at a
// lower generation that is no newer on the API server was deleted and made
// again, and is delivered as it is.

// cachesBehindRetry is when a delivery held back for the caches is tried
// again, should the watch event that brings them up to date not come first.
const cachesBehindRetry = 100 * time.Millisecond

// cachesBehindError is a delivery held back because the caches hold an
// object older than the API server does: nothing is written, the status
// neither, until they catch up.
type cachesBehindError struct {
	// held says what the caches hold that the API server no longer does.
	held string
}

func (e *cachesBehindError) Error() string { return e.held + ": waiting for the cache" }

// olderInput is the delivery held back for input in, which the caches hold
// at a lower generation than the API server (live; 0 when it is gone there).
func olderInput(in v1alpha1.RevisionInput, live int64) *cachesBehindError {
	return &cachesBehindError{held: fmt.Sprintf("the cache holds %s %s at generation %d, the API server at %d",
		in.Kind, client.ObjectKey{Namespace: in.Namespace, Name: in.Name}, in.Generation, live)}
}

// cachesBehind is the input of read, when there is one, that the caches
// hold older than the API server does and older than the revision current
// (the Persona's live ConfigMap, which it controls) read it: a delivery
// from them waits. The error is a failure to read.
func (r *reconciler) cachesBehind(ctx context.Context, current *corev1.ConfigMap, read []v1alpha1.RevisionInput) (*cachesBehindError, error) {
	previous, err := r.recordOf(ctx, current)
	if err != nil || !previous.readable {
		return nil, err
	}
	delivered := previous.values()
	for _, in := range read {
		if in.Generation == 0 || !slices.ContainsFunc(delivered, func(d v1alpha1.RevisionInput) bool { return newerOf(d, in) }) {
			continue
		}
		live, err := r.liveGeneration(ctx, in)
		if err != nil {
			return nil, err
		}
		if live == 0 || live > in.Generation {
			return olderInput(in, live), nil
		}
	}
	return nil, nil
}

// newerOf reports whether d names the object that in names, of this API, at a
// higher generation.
func newerOf(d, in v1alpha1.RevisionInput) bool {
	return d.Kind == in.Kind && d.Namespace == in.Namespace && d.Name == in.Name && d.Generation > in.Generation &&
		isAPIKind(in.Kind)
}

// isAPIKind reports whether kind is one of this API's kinds, whose
// generations the revisions record.
func isAPIKind(kind string) bool {
	switch kind {
	case v1alpha1.PersonaKind, v1alpha1.PromptLayerKind, v1alpha1.ClusterPromptLayerKind, v1alpha1.PromptPlatformKind:
		return true
	}
	return false
}

// liveGeneration is in's generation on the API server, 0 when it is gone.
func (r *reconciler) liveGeneration(ctx context.Context, in v1alpha1.RevisionInput) (int64, error) {
	m, err := kube.LiveMetadata(ctx, r.APIReader, v1alpha1.GroupVersion.WithKind(in.Kind), client.ObjectKey{Namespace: in.Namespace, Name: in.Name})
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("see whether the cache is behind: %w", err)
	}
	return m.Generation, nil
}
