package persona

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/controller/kube"
)

// Config is what the Persona controller reads and writes through, and how
// it is tuned.
type Config struct {
	// Workers is the number of concurrent reconciles; 0 means 1. The
	// renders share the CPUs fairly between namespaces (render_gate.go).
	Workers int
	// ReferenceGracePeriod is how long a missing reference is awaited
	// before the Persona is stalled; 0 means status.DefaultReferenceGracePeriod.
	ReferenceGracePeriod time.Duration
	// GuardrailDeadline is how long new ClusterPromptLayers wait for a
	// render in time before they are delivered alone; 0 means
	// DefaultGuardrailDeadline.
	GuardrailDeadline time.Duration
	// Recorder records the Events.
	Recorder events.EventRecorder
	// Own is the metadata cache of the operator's ConfigMaps but the
	// snapshots; SourceMetadata that of the template sources, which Sources
	// reads them by; Snapshots the cache of the snapshots, which Revisions
	// reads too.
	Own, SourceMetadata cache.Cache
	Sources             *kube.SourceReader
	Snapshots           *kube.SnapshotCache
	// Writer creates and updates the ConfigMaps.
	Writer kube.ConfigMapWrites
	// Revisions keeps the delivered revisions' snapshots (revisions.Store).
	Revisions RevisionStore
	// Halts are the RolloutHalted conditions the restarts decide.
	Halts *RolloutHalts
}

// Setup registers the Persona controller with mgr, and the metric of the
// Personas by Ready reason. The field indexes must be registered first
// (kube.SetupIndexes).
func Setup(ctx context.Context, mgr ctrl.Manager, cfg Config) error {
	reasons := newReadyReasons()
	// Before the cache starts this only registers the informer, and the
	// handler hears of every Persona of its first list.
	informer, err := mgr.GetCache().GetInformer(ctx, &v1alpha1.Persona{}, cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("the Persona informer, for the Personas by Ready reason: %w", err)
	}
	if _, err := informer.AddEventHandler(reasons.handler()); err != nil {
		return fmt.Errorf("count the Personas by Ready reason: %w", err)
	}
	if err := metrics.Registry.Register(reasons); err != nil {
		return fmt.Errorf("register the Personas by Ready reason: %w", err)
	}
	r := newReconciler(mgr.GetClient(), mgr.GetScheme(), cfg.Recorder, mgr.GetAPIReader(), cfg.Own, cfg.Sources, cfg.Writer,
		options{Workers: cfg.Workers, ReferenceGracePeriod: cfg.ReferenceGracePeriod, GuardrailDeadline: cfg.GuardrailDeadline,
			Gate: newRenderGate(cfg.Workers), Revisions: cfg.Revisions, Halts: cfg.Halts})
	return r.SetupWithManager(mgr, cfg.Own, cfg.SourceMetadata, cfg.Snapshots)
}
