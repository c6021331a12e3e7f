package persona

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/controller/kube"
	"github.com/persona-operator/persona-operator/internal/delivery"
)

// adoptOrphan makes p the controller of its ConfigMap key when that is an
// orphan of the operator's: labelled as its own, with no controller, as
// kubectl delete persona --cascade=orphan leaves it. The ConfigMap policy
// lets only the operator write a persona- name, but whoever may delete
// ConfigMaps may delete an orphan, so it is taken back at once. It returns the
// ConfigMap, read from the API server, with p as its controller, for the
// delivery to write back whole with the render; nil when it is no orphan of
// the operator's (a conflict), or when p is being deleted: a Persona
// deleted with --cascade=orphan keeps its finalizer until the garbage
// collector has taken it off the ConfigMap's owners, and adopting it then
// would leave an owner reference to a deleted Persona, which has the
// garbage collector delete the ConfigMap. The cache may not have heard of
// that deletion yet, so the API server is asked before an adoption, as
// Kubernetes' own controllers recheck an owner's deletion before adopting:
// a p it holds as being deleted, or no longer holds, is a cachesBehindError.
func (r *reconciler) adoptOrphan(ctx context.Context, p *v1alpha1.Persona, key client.ObjectKey) (*corev1.ConfigMap, error) {
	if !p.DeletionTimestamp.IsZero() {
		return nil, nil
	}
	cm, _, err := r.readConfigMap(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("get ConfigMap %s: %w", key.Name, err)
	}
	if !isOperatorsOrphan(cm) {
		return nil, nil
	}
	if err := r.stillThere(ctx, p); err != nil {
		return nil, err
	}
	if err := controllerutil.SetControllerReference(p, cm, r.Scheme); err != nil {
		return nil, fmt.Errorf("adopt ConfigMap %s: %w", key.Name, err)
	}
	return cm, nil
}

// isOperatorsOrphan reports whether cm is labelled as the operator's and
// has no controller.
func isOperatorsOrphan(cm *corev1.ConfigMap) bool {
	return cm.Labels[delivery.ManagedByLabel] == delivery.ManagedBy && metav1.GetControllerOfNoCopy(cm) == nil
}

// stillThere is a cachesBehindError when the API server holds p as being
// deleted, or no longer holds it: gone, or made again under another UID.
func (r *reconciler) stillThere(ctx context.Context, p *v1alpha1.Persona) error {
	m, err := kube.LiveMetadata(ctx, r.APIReader, v1alpha1.GroupVersion.WithKind(v1alpha1.PersonaKind), client.ObjectKeyFromObject(p))
	switch {
	case apierrors.IsNotFound(err):
		return &cachesBehindError{held: fmt.Sprintf("the cache holds Persona %s, which the API server no longer does", p.Name)}
	case err != nil:
		return fmt.Errorf("ask the API server for Persona %s: %w", p.Name, err)
	case m.UID != p.UID:
		return &cachesBehindError{held: fmt.Sprintf("the cache holds Persona %s of UID %s, the API server one made again, of UID %s", p.Name, p.UID, m.UID)}
	case !m.DeletionTimestamp.IsZero():
		return &cachesBehindError{held: fmt.Sprintf("the cache holds Persona %s, which the API server holds as being deleted", p.Name)}
	}
	return nil
}

// errBeingDeleted is a reconcile held back because the Persona is being
// deleted and its ConfigMap is gone: the garbage collector deletes it first
// in a foreground deletion, and making it again, or a snapshot, would only
// have it deleted again. Nothing is written, the status neither.
var errBeingDeleted = errors.New("the Persona is being deleted: its ConfigMap is not made again")

// stillDelivered is errBeingDeleted, or a cachesBehindError, when the cache
// holds no live ConfigMap of p's, p has had one, and p is being deleted or
// the API server no longer holds p as it is. The garbage collector deletes
// the ConfigMap of a deleted Persona, and a reconcile from a cache that has
// not heard of the deletion yet would make it again, and its snapshots,
// under an owner that is gone, in the way of a Persona made again under
// that name. p has had one when its status names a revision or this
// process wrote it: the cache's status may be older than the deletion, and
// than the status patch that named the revision. A Persona that never had
// one and is not being deleted, as every new one, looks at no cache and
// asks nothing.
func (r *reconciler) stillDelivered(ctx context.Context, p *v1alpha1.Persona) error {
	key := client.ObjectKey{Namespace: p.Namespace, Name: delivery.ConfigMapName(p.Name)}
	deleting := !p.DeletionTimestamp.IsZero()
	hadOne := p.Status.LatestRevision != 0 || p.Status.CurrentRevision != 0 || r.writes.wroteBefore(key)
	if !deleting && !hadOne {
		return nil
	}
	switch err := r.configMapMetadata.Get(ctx, key, kube.ConfigMapMetadata(), client.UnsafeDisableDeepCopy); {
	case err == nil:
		return nil
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("get ConfigMap %s: %w", key.Name, err)
	case deleting:
		return errBeingDeleted
	}
	return r.stillThere(ctx, p)
}
