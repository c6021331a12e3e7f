// Package controllers holds the Persona and PromptLayer reconcilers.
package controllers

import (
	"context"
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// Options tune the controllers.
type Options struct {
	// PersonaWorkers is the number of concurrent Persona reconciles.
	PersonaWorkers int
	// ReferenceGracePeriod is how long a missing reference is awaited
	// before the object is stalled (personas.md#conditions); 0 means status.DefaultReferenceGracePeriod.
	ReferenceGracePeriod time.Duration
}

// Setup registers the field indexes and both controllers with the manager.
func Setup(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	if err := setupIndexes(ctx, mgr); err != nil {
		return fmt.Errorf("register field indexes: %w", err)
	}
	personas := &PersonaReconciler{
		Client:                  mgr.GetClient(),
		Scheme:                  mgr.GetScheme(),
		Recorder:                mgr.GetEventRecorder("persona-operator"),
		APIReader:               mgr.GetAPIReader(),
		MaxConcurrentReconciles: opts.PersonaWorkers,
		ReferenceGracePeriod:    opts.ReferenceGracePeriod,
	}
	if err := personas.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up the Persona controller: %w", err)
	}
	if err := (&PromptLayerReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), ReferenceGracePeriod: opts.ReferenceGracePeriod,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up the PromptLayer controller: %w", err)
	}
	return nil
}
