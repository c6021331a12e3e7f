package controller

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/persona-operator/persona-operator/internal/controller/agents"
	"github.com/persona-operator/persona-operator/internal/controller/kube"
	"github.com/persona-operator/persona-operator/internal/controller/layers"
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
)

// RestartOptions tune the restarts on change (--restart-workloads).
type RestartOptions = restarts.Options

// RestartCacheObjects are the manager's cache options for the workloads
// with --restart-workloads: those that opt in, alone.
func RestartCacheObjects() map[client.Object]cache.ByObject { return restarts.CacheObjects() }

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

// Caches are the controllers' ConfigMap metadata caches the webhooks read.
type Caches struct {
	// TemplateSources holds the template sources' metadata, which the
	// validating webhook's warnings read.
	TemplateSources cache.Cache
	// Delivered holds the metadata of the operator's own ConfigMaps, the
	// snapshots among them, which the pod injection reads.
	Delivered cache.Cache
}

// Setup registers the field indexes and the four controllers with the
// manager, and returns the caches the webhooks read.
func Setup(ctx context.Context, mgr ctrl.Manager, opts Options) (caches Caches, err error) {
	if err := kube.SetupIndexes(ctx, mgr); err != nil {
		return Caches{}, fmt.Errorf("register field indexes: %w", err)
	}
	own, err := newConfigMapMetadataCache(mgr, opts.WatchNamespaces, ownSelector, trimConfigMapMetadata)
	if err != nil {
		return Caches{}, fmt.Errorf("create the cache of the operator's ConfigMaps: %w", err)
	}
	if err := kube.SetupOwnIndexes(ctx, own); err != nil {
		return Caches{}, fmt.Errorf("index the operator's ConfigMaps: %w", err)
	}
	// With unlabelled sources read, every ConfigMap may be one: all are watched.
	var sourceSelector labels.Selector = templateSourceSelector
	if opts.ReadUnlabelledSources {
		sourceSelector = nil
	}
	sourceMetadata, err := newConfigMapMetadataCache(mgr, opts.WatchNamespaces, sourceSelector, trimSourceMetadata)
	if err != nil {
		return Caches{}, fmt.Errorf("create the cache of the template sources: %w", err)
	}
	if err := registerInformers(ctx, mgr.GetCache(), own, sourceMetadata); err != nil {
		return Caches{}, err
	}
	for _, c := range []cache.Cache{own, sourceMetadata} {
		if err := mgr.Add(kube.StartedWithCaches{Cache: c}); err != nil {
			return Caches{}, fmt.Errorf("run a ConfigMap metadata cache: %w", err)
		}
	}
	sources := kube.NewSourceReader(sourceMetadata, mgr.GetAPIReader(), opts.ReadUnlabelledSources)
	if err := metrics.Registry.Register(readyReasons{cache: mgr.GetCache()}); err != nil {
		return Caches{}, fmt.Errorf("register the Personas by Ready reason: %w", err)
	}
	recorder := kube.CuttingRecorder{EventRecorder: mgr.GetEventRecorder("persona-operator")}
	writer, err := kube.NewConfigMapWriter(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return Caches{}, fmt.Errorf("create the ConfigMap writer: %w", err)
	}
	pods, err := newAgentPodsCache(ctx, mgr, opts.WatchNamespaces)
	if err != nil {
		return Caches{}, err
	}
	store := revisions.New(revisions.Config{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Metadata: own, Writer: writer,
		Scheme: mgr.GetScheme(), BytesPerNamespace: opts.SnapshotBytesPerNamespace, Keepers: []revisions.Keeper{revisions.NamedByPods(pods)}})
	informer, err := own.GetInformer(ctx, kube.ConfigMapMetadata(), cache.BlockUntilSynced(false))
	if err != nil {
		return Caches{}, fmt.Errorf("the informer of the operator's ConfigMaps: %w", err)
	}
	if err := store.CountBytes(informer); err != nil {
		return Caches{}, fmt.Errorf("count the snapshots' bytes: %w", err)
	}
	personas := newPersonaReconciler(mgr.GetClient(), mgr.GetScheme(), recorder, mgr.GetAPIReader(), own, sources, writer,
		personaOptions{Workers: opts.PersonaWorkers, ReferenceGracePeriod: opts.ReferenceGracePeriod, GuardrailDeadline: opts.GuardrailDeadline,
			Gate: newRenderGate(opts.PersonaWorkers), Revisions: store})
	if err := personas.SetupWithManager(mgr, own, sourceMetadata); err != nil {
		return Caches{}, fmt.Errorf("set up the Persona controller: %w", err)
	}
	promptLayers := layers.NewPromptLayerReconciler(mgr.GetClient(), recorder, sources, sourceMetadata, opts.ReferenceGracePeriod)
	if err := promptLayers.SetupWithManager(mgr, sourceMetadata); err != nil {
		return Caches{}, fmt.Errorf("set up the PromptLayer controller: %w", err)
	}
	if err := agents.NewReconciler(mgr.GetClient(), pods, opts.AgentsInterval).SetupWithManager(mgr, pods); err != nil {
		return Caches{}, fmt.Errorf("set up the agents controller: %w", err)
	}
	if err := (&layers.ClusterPromptLayerReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		return Caches{}, fmt.Errorf("set up the ClusterPromptLayer controller: %w", err)
	}
	if err := (&layers.PromptPlatformReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		return Caches{}, fmt.Errorf("set up the PromptPlatform controller: %w", err)
	}
	if opts.Restarts != nil {
		if err := restarts.Setup(ctx, mgr, recorder, *opts.Restarts, personas.halts); err != nil {
			return Caches{}, fmt.Errorf("set up the workload restarts: %w", err)
		}
		misplaced, err := restarts.NewMisplacedLabels(mgr, opts.WatchNamespaces, recorder)
		if err != nil {
			return Caches{}, err
		}
		if err := mgr.Add(misplaced); err != nil {
			return Caches{}, fmt.Errorf("add the misplaced restart labels' check: %w", err)
		}
	} else if err := mgr.Add(restarts.NewOffCheck(mgr.GetClient(), mgr.GetAPIReader())); err != nil {
		return Caches{}, fmt.Errorf("add the restarts check: %w", err)
	}
	return Caches{TemplateSources: sourceMetadata, Delivered: own}, nil
}

// newAgentPodsCache is the cache of the agent pods' metadata, run with the
// manager's caches: status.agents and the snapshots' retention read it.
func newAgentPodsCache(ctx context.Context, mgr ctrl.Manager, namespaces []string) (cache.Cache, error) {
	pods, err := newPodMetadataCache(mgr, namespaces)
	if err != nil {
		return nil, fmt.Errorf("create the cache of the agent pods: %w", err)
	}
	if _, err := pods.GetInformer(ctx, kube.PodMetadata(), cache.BlockUntilSynced(false)); err != nil {
		return nil, fmt.Errorf("register the informer of the agent pods: %w", err)
	}
	if err := mgr.Add(kube.StartedWithCaches{Cache: pods}); err != nil {
		return nil, fmt.Errorf("run the cache of the agent pods: %w", err)
	}
	return pods, nil
}
