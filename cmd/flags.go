package main

import (
	"flag"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/persona-operator/persona-operator/internal/status"
)

// managerFlags are the manager's command line: kubebuilder's flags plus the
// operator's own (README.md#development).
type managerFlags struct {
	metricsAddr, probeAddr, pprofAddr string
	secureMetrics, enableHTTP2        bool
	leaderElect                       bool

	webhookCertPath, webhookCertName, webhookCertKey string
	webhookPort                                      int

	personaWorkers       int
	referenceGracePeriod time.Duration
	apiQPS               float64
	apiBurst             int
}

func parseFlags() (*managerFlags, *zap.Options) {
	f := &managerFlags{}
	flag.StringVar(&f.metricsAddr, "metrics-bind-address", "0", "The address the metrics endpoint binds to, e.g. :8443 (HTTPS) or :8080 (HTTP); 0 disables it.")
	flag.StringVar(&f.pprofAddr, "pprof-bind-address", "0", "The address Go's pprof endpoints (/debug/pprof) bind to, e.g. 127.0.0.1:8082; 0 disables them.")
	flag.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "The address the health and readiness probes bind to.")
	flag.BoolVar(&f.leaderElect, "leader-elect", false, "Elect a leader, so that only one manager replica is active.")
	flag.BoolVar(&f.secureMetrics, "metrics-secure", true, "Serve metrics over HTTPS with authentication and authorization.")
	flag.StringVar(&f.webhookCertPath, "webhook-cert-path", "", "The directory holding the webhook certificate; empty uses the webhook server's default.")
	flag.StringVar(&f.webhookCertName, "webhook-cert-name", "tls.crt", "The webhook certificate's file name.")
	flag.StringVar(&f.webhookCertKey, "webhook-cert-key", "tls.key", "The webhook key's file name.")
	flag.IntVar(&f.webhookPort, "webhook-port", 9443, "The port the webhook server listens on.")
	flag.IntVar(&f.personaWorkers, "persona-workers", 16, "Concurrent Persona reconciles.")
	flag.Float64Var(&f.apiQPS, "kube-api-qps", 300, "Queries per second the manager may make to the API server, sustained, for each kind of object (controller-runtime keeps one rate limiter per kind).")
	flag.IntVar(&f.apiBurst, "kube-api-burst", 600, "Queries the manager may make to the API server in a burst, for each kind of object.")
	flag.DurationVar(&f.referenceGracePeriod, "reference-grace-period", status.DefaultReferenceGracePeriod,
		"How long a missing reference is awaited (Reconciling) before the object is stalled (Stalled), so that objects applied in any order, or in the next sync, are not reported as failed.")
	flag.BoolVar(&f.enableHTTP2, "enable-http2", false, "Serve HTTP/2 on the webhook and metrics servers (off: HTTP/2 Rapid Reset).")
	// --kubeconfig is registered by controller-runtime's config package.
	logOpts := &zap.Options{}
	logOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	return f, logOpts
}
