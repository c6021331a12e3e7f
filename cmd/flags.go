package main

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/persona-operator/persona-operator/internal/controller"
	"github.com/persona-operator/persona-operator/internal/inject"
	"github.com/persona-operator/persona-operator/internal/status"
)

// managerFlags are the manager's command line: kubebuilder's flags plus the
// operator's own (docs/install.md#manager-flags).
type managerFlags struct {
	metricsAddr, probeAddr, pprofAddr string
	secureMetrics, enableHTTP2        bool
	leaderElect                       bool

	webhookCertPath, webhookCertName, webhookCertKey         string
	webhookSecretMountPath                                   string
	webhookPort                                              int
	webhookSecretName, webhookServiceName, webhookConfigName string
	injectWebhookConfigName                                  string
	// The control plane's connections to the webhooks: from these
	// networks, from the addresses the API servers prove by their checks
	// (controlPlaneChecks), or with a client certificate of webhookClientCA.
	controlPlaneNetworks []netip.Prefix
	controlPlaneChecks   bool
	webhookClientCA      string

	watchNamespaces      []string
	personaWorkers       int
	shutdownDelay        time.Duration
	referenceGracePeriod time.Duration
	guardrailDeadline    time.Duration
	apiQPS               float64
	apiBurst             int
	// readUnlabelledSources is --template-source-label=warn.
	readUnlabelledSources bool
	// snapshotBytesPerNamespace caps one namespace's revision snapshots.
	snapshotBytesPerNamespace int
	// agentsInterval paces the writes of status.agents.
	agentsInterval time.Duration
	// restartWorkloads turns on the restarts on change, paced by
	// maxConcurrentRestarts and restartDeadline.
	restartWorkloads      bool
	maxConcurrentRestarts int
	restartDeadline       time.Duration
	// injection is the platform's part of the pod injection.
	injection inject.Config
}

// restartOptions are the restarts' options, nil when they are off.
func (f *managerFlags) restartOptions() *controller.RestartOptions {
	if !f.restartWorkloads {
		return nil
	}
	return &controller.RestartOptions{MaxConcurrent: f.maxConcurrentRestarts, Deadline: f.restartDeadline}
}

func parseFlags() (*managerFlags, *zap.Options) {
	f, logOpts := registerFlags(flag.CommandLine)
	flag.Parse()
	if err := f.check(); err != nil {
		fmt.Fprintln(flag.CommandLine.Output(), err)
		flag.Usage()
		os.Exit(2)
	}
	return f, logOpts
}

// check says why flags that are each valid do not go together.
func (f *managerFlags) check() error {
	if err := f.injection.Check(); err != nil {
		return fmt.Errorf("--mount-paths, --image-symlinks: %w", err)
	}
	return nil
}

// symlinkList is links as --image-symlinks takes them.
func symlinkList(links map[string]string) string {
	var out []string
	for _, l := range slices.Sorted(maps.Keys(links)) {
		out = append(out, l+"="+links[l])
	}
	return strings.Join(out, ",")
}

// registerFlags defines the manager's flags on fs.
func registerFlags(fs *flag.FlagSet) (*managerFlags, *zap.Options) {
	f := &managerFlags{}
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", "0", "The address the metrics endpoint binds to, e.g. :8443 (HTTPS) or :8080 (HTTP); 0 disables it.")
	fs.StringVar(&f.pprofAddr, "pprof-bind-address", "0", "The address Go's pprof endpoints (/debug/pprof) bind to, e.g. 127.0.0.1:8082; 0 disables them.")
	fs.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "The address the health and readiness probes bind to.")
	fs.BoolVar(&f.leaderElect, "leader-elect", false, "Elect a leader, so that only one manager replica is active.")
	fs.BoolVar(&f.secureMetrics, "metrics-secure", true, "Serve metrics over HTTPS with authentication and authorization.")
	fs.StringVar(&f.webhookCertPath, "webhook-cert-path", "", "The directory holding a webhook certificate to serve, e.g. cert-manager's; empty: the manager makes, injects and rotates its own, in the Secret --webhook-secret-name of its namespace (POD_NAMESPACE), mounted at --webhook-secret-mount-path.")
	fs.StringVar(&f.webhookSecretMountPath, "webhook-secret-mount-path", managedCertDir, "Where the pod mounts the Secret --webhook-secret-name, whose certificate the manager makes (without --webhook-cert-path).")
	fs.StringVar(&f.webhookCertName, "webhook-cert-name", "tls.crt", "The webhook certificate's file name.")
	fs.StringVar(&f.webhookCertKey, "webhook-cert-key", "tls.key", "The webhook key's file name.")
	fs.IntVar(&f.webhookPort, "webhook-port", 9443, "The port the webhook server listens on.")
	fs.StringVar(&f.webhookSecretName, "webhook-secret-name", "persona-operator-webhook-server-cert", "The Secret holding the webhook certificate the manager makes (without --webhook-cert-path).")
	fs.StringVar(&f.webhookServiceName, "webhook-service-name", "persona-operator-webhook-service", "The webhook's Service, whose DNS name the certificate the manager makes is for.")
	fs.StringVar(&f.webhookConfigName, "webhook-config-name", "persona-operator-validating-webhook-configuration", "The ValidatingWebhookConfiguration the manager injects its CA into.")
	fs.StringVar(&f.injectWebhookConfigName, "inject-webhook-config-name", "persona-operator-mutating-webhook-configuration", "The MutatingWebhookConfiguration of the pod injection the manager injects its CA into.")
	fs.Func("watch-namespaces", "Comma-separated namespaces whose Personas, PromptLayers and ConfigMaps the manager reads, caches and writes; empty: all.",
		func(v string) error { f.watchNamespaces = splitList(v); return nil })
	fs.IntVar(&f.personaWorkers, "persona-workers", 16, "Concurrent Persona reconciles.")
	fs.DurationVar(&f.shutdownDelay, "shutdown-delay", 5*time.Second, "How long a replica serves on after SIGTERM, no longer ready, before it stops: the time the API server and kube-proxy take to stop sending it admission requests. Keep it below the pod's terminationGracePeriodSeconds.")
	// A fan-out writes one ConfigMap per dependent at once; a client-side
	// limit would pace it, and grow its time per Persona with N, where the
	// API server's Priority and Fairness already protects it.
	fs.Float64Var(&f.apiQPS, "kube-api-qps", -1, "Queries per second the manager may make to the API server, sustained, for each kind of object (controller-runtime keeps one rate limiter per kind); negative: no client-side limit, so the API server's Priority and Fairness paces the manager, whose concurrent requests --persona-workers bounds.")
	fs.IntVar(&f.apiBurst, "kube-api-burst", 600, "Queries the manager may make to the API server in a burst, for each kind of object, when --kube-api-qps is not negative.")
	fs.DurationVar(&f.referenceGracePeriod, "reference-grace-period", status.DefaultReferenceGracePeriod,
		"How long a missing reference is awaited (Reconciling) before the object is stalled (Stalled), so that objects applied in any order, or in the next sync, are not reported as failed.")
	fs.DurationVar(&f.guardrailDeadline, "guardrail-deadline", controller.DefaultGuardrailDeadline,
		"How long new ClusterPromptLayers wait for a Persona's render that runs out of wall time to succeed (they are then delivered with its text) before they are delivered alone (GuardrailsOnly).")
	fs.IntVar(&f.snapshotBytesPerNamespace, "snapshot-bytes-per-namespace", controller.DefaultSnapshotBytesPerNamespace,
		"The bytes (keys and values) the revision snapshots (ConfigMaps persona-<name>.r<n>) of one namespace may hold; past it a Persona's new revision gets no snapshot (SnapshotFailed), its ConfigMap is delivered all the same.")
	fs.DurationVar(&f.agentsInterval, "agents-status-interval", controller.DefaultAgentsInterval,
		"The shortest time between two writes of one Persona's status.agents, the count of its injected pods by revision.")
	fs.Func("template-source-label", `Whether a templateFrom ConfigMap must be labelled prompts.persona-operator.dev/template-source: "true": require (an unlabelled one is reported like a missing one), or warn (it is read, with a Warning Event on each PromptLayer that reads one; for a migration). Default require.`,
		func(v string) error {
			switch v {
			case "require":
				f.readUnlabelledSources = false
			case "warn":
				f.readUnlabelledSources = true
			default:
				return fmt.Errorf("%q is neither require nor warn", v)
			}
			return nil
		})
	fs.BoolVar(&f.restartWorkloads, "restart-workloads", false, `Restart the Deployments, StatefulSets, DaemonSets and Argo Rollouts labelled prompts.persona-operator.dev/restart-on-change: "true" onto each revision their Persona delivers, in paced waves; needs the opt-in RBAC of the restart-workloads component or the chart's restartWorkloads.enabled.`)
	fs.IntVar(&f.maxConcurrentRestarts, "max-concurrent-restarts", controller.DefaultMaxConcurrentRestarts, "With --restart-workloads: how many workloads may be rolling out onto a new revision at once, shared round-robin between namespaces.")
	fs.DurationVar(&f.restartDeadline, "restart-deadline", controller.DefaultRestartDeadline, "With --restart-workloads: how long a workload's rollout may take before it counts as failed and halts its namespace's waiting restarts of the same cause.")
	f.injection = inject.Config{MountPaths: []string{inject.DefaultMountPath}, ImageSymlinks: inject.DefaultImageSymlinks}
	fs.Func("mount-paths", "Comma-separated paths where the pod injection may mount the prompt: the first without the annotation "+inject.MountPathAnnotation+", which may choose another. The runtime resolves a path through the image's symlinks, so list only paths that no symlink of the agent images leads through. Default "+inject.DefaultMountPath+".",
		func(v string) error {
			if f.injection.MountPaths = splitList(v); len(f.injection.MountPaths) == 0 {
				return errors.New("names no path")
			}
			return nil
		})
	fs.Func("image-symlinks", "Comma-separated PATH=TARGET: the agent images' symlinks to directories, through which the pod injection judges where a container's mounts land; empty: none. Default "+symlinkList(inject.DefaultImageSymlinks)+".",
		func(v string) error {
			f.injection.ImageSymlinks = map[string]string{}
			for _, entry := range splitList(v) {
				link, target, ok := strings.Cut(entry, "=")
				if !ok {
					return fmt.Errorf("%q is not PATH=TARGET", entry)
				}
				f.injection.ImageSymlinks[link] = target
			}
			return nil
		})
	fs.Func("webhook-control-plane-networks", "Comma-separated CIDRs the API servers call the webhooks from (theirs, or their network proxy's): those connections keep their places when the webhook's connections are at their bound. Empty: none but those the checks prove (--webhook-control-plane-checks).",
		func(v string) error {
			f.controlPlaneNetworks = nil
			for _, s := range splitList(v) {
				n, err := netip.ParsePrefix(s)
				if err != nil {
					return err
				}
				f.controlPlaneNetworks = append(f.controlPlaneNetworks, n.Masked())
			}
			return nil
		})
	fs.BoolVar(&f.controlPlaneChecks, "webhook-control-plane-checks", true, "Every 30s, have each API server (of the kubernetes Service's EndpointSlice in default) prove the address it calls the webhooks from, by a dry-run create of a Persona in the manager's namespace (POD_NAMESPACE): connections from it keep their places when the webhook's connections are at their bound.")
	fs.StringVar(&f.webhookClientCA, "webhook-client-ca", "", "A PEM file of the CA whose client certificates the API servers present to the webhooks (their admission configuration's kubeconfig): the webhooks then take no connection without one, and those keep their places. Empty: no client certificate is asked for.")
	fs.BoolVar(&f.enableHTTP2, "enable-http2", false, "Serve HTTP/2 on the webhook and metrics servers (off: HTTP/2 Rapid Reset).")
	// --kubeconfig is registered by controller-runtime's config package.
	logOpts := &zap.Options{}
	logOpts.BindFlags(fs)
	return f, logOpts
}

// splitList splits a comma-separated flag value, dropping empty entries.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
