// Package controllers holds the Persona and PromptLayer reconcilers.
package controllers

import (
	"context"
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Options tune the controllers.
type Options struct {
	// PersonaWorkers is the number of concurrent Persona reconciles.
	PersonaWorkers int
	// ReferenceGracePeriod is how long a missing reference is awaited
	// before the object is stalled (personas.md#conditions); 0 means status.DefaultReferenceGracePeriod.
	ReferenceGracePeriod time.Duration
	// WatchNamespaces limits the namespaces whose objects the controllers
	// read and write; none means all. The manager's cache must be limited
	// alike (CacheOptions).
	WatchNamespaces []string
}

// Setup registers the field indexes and both controllers with the manager.
func Setup(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	if err := setupIndexes(ctx, mgr); err != nil {
		return fmt.Errorf("register field indexes: %w", err)
	}
	configMaps, err := newConfigMapMetadataCache(mgr, opts.WatchNamespaces)
	if err != nil {
		return fmt.Errorf("create the ConfigMap metadata cache: %w", err)
	}
	if err := mgr.Add(configMaps); err != nil {
		return fmt.Errorf("run the ConfigMap metadata cache: %w", err)
	}
	sources := newTemplateSources(configMaps, mgr.GetAPIReader())
	if err := metrics.Registry.Register(readyReasons{cache: mgr.GetCache()}); err != nil {
		return fmt.Errorf("register the Personas by Ready reason: %w", err)
	}
	recorder := cuttingRecorder{mgr.GetEventRecorder("persona-operator")}
	personas := &PersonaReconciler{
		Client:                  mgr.GetClient(),
		Scheme:                  mgr.GetScheme(),
		Recorder:                recorder,
		APIReader:               mgr.GetAPIReader(),
		MaxConcurrentReconciles: opts.PersonaWorkers,
		ReferenceGracePeriod:    opts.ReferenceGracePeriod,
	}
	if err := personas.SetupWithManager(mgr, configMaps, sources); err != nil {
		return fmt.Errorf("set up the Persona controller: %w", err)
	}
	if err := (&PromptLayerReconciler{
		Client: mgr.GetClient(), ReferenceGracePeriod: opts.ReferenceGracePeriod,
	}).SetupWithManager(mgr, configMaps, sources); err != nil {
		return fmt.Errorf("set up the PromptLayer controller: %w", err)
	}
	if err := (&ClusterPromptLayerReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up the ClusterPromptLayer controller: %w", err)
	}
	return nil
}
