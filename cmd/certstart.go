package main

import (
	"context"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// rotatorGate holds the rotator back until its Secret exists. The rotator
// stops the manager when its first read of the Secret fails, so a replica
// started while the Secret is missing (every replica down, or restarting,
// when it was deleted) would never make it again.
type rotatorGate struct {
	// before returns once the Secret exists; nil lets the rotator start at once.
	before func(context.Context) error
}

// gatedRotator is the rotator, started once its gate opens.
type gatedRotator struct {
	*rotator.CertRotator
	gate *rotatorGate
}

func (g gatedRotator) Start(ctx context.Context) error {
	if g.gate.before != nil {
		if err := g.gate.before(ctx); err != nil {
			return nil // stopped before the Secret existed
		}
	}
	return g.CertRotator.Start(ctx)
}

// Add adds the rotator behind the gate, and any other runnable as it is.
func (m namedObjectsManager) Add(r manager.Runnable) error {
	if cr, ok := r.(*rotator.CertRotator); ok && m.gate != nil {
		return m.Manager.Add(gatedRotator{cr, m.gate})
	}
	return m.Manager.Add(r)
}

// secretExists returns once the Secret is in the cache (synced once synced
// returns true), creating it,
// filled, whenever it is missing. Nothing is known then of the deleted
// Secret's labels and annotations: the replacement has none.
func (r *webhookCertificateReconciler) secretExists(synced func(context.Context) bool) func(context.Context) error {
	return func(ctx context.Context) error {
		if !synced(ctx) {
			return ctx.Err()
		}
		log := logf.FromContext(ctx).WithValues("secret", r.key)
		return wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
			err := r.reader.Get(ctx, r.key, &corev1.Secret{})
			switch {
			case err == nil:
				return true, nil
			case !apierrors.IsNotFound(err):
				log.Error(err, "read the webhook certificate Secret")
			default:
				if err := r.replace(ctx, secretMetadata{}); err != nil {
					log.Error(err, "create the missing webhook certificate Secret")
				}
			}
			return false, nil
		})
	}
}
