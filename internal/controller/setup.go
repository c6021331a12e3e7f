package controller

import (
	"context"
	"fmt"
	"time"

	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/internal/controller/agents"
	"github.com/persona-operator/persona-operator/internal/controller/kube"
	"github.com/persona-operator/persona-operator/internal/controller/layers"
	"github.com/persona-operator/persona-operator/internal/controller/persona"
	"github.com/persona-operator/persona-operator/internal/controller/restarts"
	"github.com/persona-operator/persona-operator/internal/controller/revisions"
)

// The defaults of Options' fields, which the manager's flags show.
const (
	// DefaultAgentsInterval is the shortest time between two writes of one
	// Persona's status.agents.
	DefaultAgentsInterval = agents.DefaultInterval
	// DefaultMaxConcurrentRestarts is how many workloads may be rolling
	// out at once; DefaultRestartDeadline how long a rollout may take
	// before it counts as failed.
	DefaultMaxConcurrentRestarts = restarts.DefaultMaxConcurrent
	DefaultRestartDeadline       = restarts.DefaultDeadline
	// DefaultSnapshotBytesPerNamespace is what the snapshots of one
	// namespace may hold, keys and values.
	DefaultSnapshotBytesPerNamespace = revisions.DefaultBytesPerNamespace
	// DefaultGuardrailDeadline is how long new ClusterPromptLayers wait for
	// a Persona's render in time before they are delivered alone.
	DefaultGuardrailDeadline = persona.DefaultGuardrailDeadline
)

// RestartOptions tune the restarts on change (--restart-workloads).
type RestartOptions = restarts.Options

// RestartCacheObjects are the manager's cache options for the workloads
// with --restart-workloads: those of opts' kinds that opt in, alone.
func RestartCacheObjects(opts RestartOptions) map[client.Object]cache.ByObject {
	return restarts.CacheObjects(opts)
}

// RolloutsRestartable reports whether Argo Rollouts' Rollouts can be
// restart targets (RestartOptions.Rollouts), and if not, why.
func RolloutsRestartable(ctx context.Context, cfg *rest.Config) (bool, string, error) {
	return restarts.RolloutsRestartable(ctx, cfg)
}

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
	// ReadUnlabelledSources reads templateFrom ConfigMaps that lack the
	// template-source label, with a Warning Event on each PromptLayer that
	// reads one (--template-source-label=warn, for a migration).
	ReadUnlabelledSources bool
	// SnapshotBytesPerNamespace caps the bytes of one namespace's revision
	// snapshots (--snapshot-bytes-per-namespace); 0 means DefaultSnapshotBytesPerNamespace.
	SnapshotBytesPerNamespace int
	// GuardrailDeadline is how long new ClusterPromptLayers wait for a
	// Persona's render in time before they are delivered alone
	// (--guardrail-deadline); 0 means DefaultGuardrailDeadline.
	GuardrailDeadline time.Duration
	// AgentsInterval is the shortest time between two writes of a
	// Persona's status.agents; 0 means DefaultAgentsInterval.
	AgentsInterval time.Duration
	// Restarts, when set, restarts the workloads that opt in onto each
	// revision their Persona delivers (--restart-workloads); the manager's
	// cache must then hold them (RestartCacheObjects).
	Restarts *RestartOptions
}

// Parts are what the rest of the manager uses of the controllers: the
// ConfigMap metadata caches the webhooks read, and the Event recorder.
type Parts struct {
	// TemplateSources holds the template sources' metadata, which the
	// validating webhook's warnings read.
	TemplateSources cache.Cache
	// Delivered holds the metadata of the operator's own ConfigMaps but the
	// snapshots, and Snapshots the snapshots, which the pod injection reads.
	Delivered cache.Cache
	Snapshots *kube.SnapshotCache
	// Events writes the controllers' Events: stop it once the manager has
	// stopped, so that the Events of the last reconciles are written.
	Events *kube.EventRecorder
}

// newEventRecorder is the controllers' Event recorder, writing until it is
// stopped.
func newEventRecorder(mgr ctrl.Manager) (*kube.EventRecorder, error) {
	c, err := eventsv1client.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("create the Events client: %w", err)
	}
	r, err := kube.NewEventRecorder(mgr.GetScheme(), &events.EventSinkImpl{Interface: c}, "persona-operator")
	if err != nil {
		return nil, fmt.Errorf("make the Event recorder: %w", err)
	}
	return r, nil
}

// Setup registers the field indexes, the caches and the controllers with
// the manager (the Persona controller, with its revision store; the
// PromptLayer, ClusterPromptLayer and PromptPlatform controllers; the
// agents controller; the workload restarts, or the check that tells they
// are off), and returns the parts the rest of the manager uses.
func Setup(ctx context.Context, mgr ctrl.Manager, opts Options) (Parts, error) {
	c, err := setupCaches(ctx, mgr, opts.WatchNamespaces, opts.ReadUnlabelledSources)
	if err != nil {
		return Parts{}, err
	}
	sources := kube.NewSourceReader(c.sourceMetadata, mgr.GetAPIReader(), opts.ReadUnlabelledSources)
	eventRecorder, err := newEventRecorder(mgr)
	if err != nil {
		return Parts{}, err
	}
	recorder := kube.CuttingRecorder{EventRecorder: eventRecorder}
	writer, err := kube.NewConfigMapWriter(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return Parts{}, fmt.Errorf("create the ConfigMap writer: %w", err)
	}
	store, err := newRevisionStore(mgr, c, writer, opts.SnapshotBytesPerNamespace)
	if err != nil {
		return Parts{}, err
	}
	halts := persona.NewRolloutHalts()
	if err := persona.Setup(ctx, mgr, persona.Config{Workers: opts.PersonaWorkers, ReferenceGracePeriod: opts.ReferenceGracePeriod,
		GuardrailDeadline: opts.GuardrailDeadline, Recorder: recorder, Own: c.own, SourceMetadata: c.sourceMetadata, Sources: sources, Snapshots: c.snapshots,
		Writer: writer, Revisions: store, Halts: halts}); err != nil {
		return Parts{}, fmt.Errorf("set up the Persona controller: %w", err)
	}
	promptLayers := layers.NewPromptLayerReconciler(mgr.GetClient(), recorder, sources, c.sourceMetadata, opts.ReferenceGracePeriod)
	if err := promptLayers.SetupWithManager(mgr, c.sourceMetadata); err != nil {
		return Parts{}, fmt.Errorf("set up the PromptLayer controller: %w", err)
	}
	if err := agents.NewReconciler(mgr.GetClient(), c.pods, opts.AgentsInterval).SetupWithManager(mgr, c.pods); err != nil {
		return Parts{}, fmt.Errorf("set up the agents controller: %w", err)
	}
	if err := (&layers.ClusterPromptLayerReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		return Parts{}, fmt.Errorf("set up the ClusterPromptLayer controller: %w", err)
	}
	if err := (&layers.PromptPlatformReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		return Parts{}, fmt.Errorf("set up the PromptPlatform controller: %w", err)
	}
	if err := setupRestarts(ctx, mgr, recorder, opts, halts); err != nil {
		return Parts{}, err
	}
	return Parts{TemplateSources: c.sourceMetadata, Delivered: c.own, Snapshots: c.snapshots, Events: eventRecorder}, nil
}

// newRevisionStore is the Persona controller's revision store, counting the
// snapshots' bytes from the events of the cache of the snapshots, and
// keeping the revisions the agent pods name.
func newRevisionStore(mgr ctrl.Manager, c controllerCaches, writer kube.ConfigMapWrites, bytesPerNamespace int) (*revisions.Store, error) {
	freshPods, err := kube.NewPodMetadataReader(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("set up the Persona controller: the reader of the pods' metadata: %w", err)
	}
	store := revisions.New(revisions.Config{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), FreshPods: freshPods, Snapshots: c.snapshots, Writer: writer,
		Scheme: mgr.GetScheme(), BytesPerNamespace: bytesPerNamespace, Keepers: []revisions.Keeper{revisions.NamedByPods(c.pods)}})
	if err := store.CountBytes(c.snapshots); err != nil {
		return nil, fmt.Errorf("set up the Persona controller: count the snapshots' bytes: %w", err)
	}
	return store, nil
}

// setupRestarts registers the workload restarts and the check of restart
// labels put on other kinds when opts asks for restarts, else the check
// that tells, at start, of workloads that opt in all the same.
func setupRestarts(ctx context.Context, mgr ctrl.Manager, recorder kube.CuttingRecorder, opts Options, halts restarts.Halts) error {
	if opts.Restarts == nil {
		if err := mgr.Add(restarts.NewOffCheck(mgr.GetClient(), mgr.GetAPIReader())); err != nil {
			return fmt.Errorf("add the restarts check: %w", err)
		}
		return nil
	}
	if err := restarts.Setup(ctx, mgr, recorder, *opts.Restarts, halts); err != nil {
		return fmt.Errorf("set up the workload restarts: %w", err)
	}
	misplaced, err := restarts.NewMisplacedLabels(mgr, opts.WatchNamespaces, recorder)
	if err != nil {
		return err
	}
	if err := mgr.Add(misplaced); err != nil {
		return fmt.Errorf("add the misplaced restart labels' check: %w", err)
	}
	return nil
}
