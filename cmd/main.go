// Command manager runs the persona-operator: the Persona and PromptLayer
// controllers and the validating webhook.
package main

import (
	"crypto/tls"
	"flag"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/controllers"
	"github.com/persona-operator/persona-operator/internal/status"
	personawebhook "github.com/persona-operator/persona-operator/internal/webhook"
)

func main() {
	var (
		metricsAddr, probeAddr, pprofAddr   string
		webhookCertPath, webhookCertName    string
		webhookCertKey                      string
		webhookPort, personaWorkers         int
		enableLeaderElection, secureMetrics bool
		enableHTTP2                         bool
		apiQPS                              float64
		apiBurst                            int
		referenceGracePeriod                time.Duration
	)
	flag.StringVar(&metricsAddr, "metrics-bind-address", "0", "The address the metrics endpoint binds to, e.g. :8443 (HTTPS) or :8080 (HTTP); 0 disables it.")
	flag.StringVar(&pprofAddr, "pprof-bind-address", "0", "The address Go's pprof endpoints (/debug/pprof) bind to, e.g. 127.0.0.1:8082; 0 disables them.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "The address the health and readiness probes bind to.")
	flag.BoolVar(&enableLeaderElection, "leader-elect", false, "Elect a leader, so that only one manager replica is active.")
	flag.BoolVar(&secureMetrics, "metrics-secure", true, "Serve metrics over HTTPS with authentication and authorization.")
	flag.StringVar(&webhookCertPath, "webhook-cert-path", "", "The directory holding the webhook certificate; empty uses the webhook server's default.")
	flag.StringVar(&webhookCertName, "webhook-cert-name", "tls.crt", "The webhook certificate's file name.")
	flag.StringVar(&webhookCertKey, "webhook-cert-key", "tls.key", "The webhook key's file name.")
	flag.IntVar(&webhookPort, "webhook-port", 9443, "The port the webhook server listens on.")
	flag.IntVar(&personaWorkers, "persona-workers", 16, "Concurrent Persona reconciles.")
	flag.Float64Var(&apiQPS, "kube-api-qps", 300, "Queries per second the manager may make to the API server, sustained, for each kind of object (controller-runtime keeps one rate limiter per kind).")
	flag.IntVar(&apiBurst, "kube-api-burst", 600, "Queries the manager may make to the API server in a burst, for each kind of object.")
	flag.DurationVar(&referenceGracePeriod, "reference-grace-period", status.DefaultReferenceGracePeriod,
		"How long a missing reference is awaited (Reconciling) before the object is stalled (Stalled), so that objects applied in any order, or in the next sync, are not reported as failed.")
	flag.BoolVar(&enableHTTP2, "enable-http2", false, "Serve HTTP/2 on the webhook and metrics servers (off: HTTP/2 Rapid Reset).")
	// --kubeconfig is registered by controller-runtime's config package.
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	log := ctrl.Log.WithName("setup")

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))

	var tlsOpts []func(*tls.Config)
	if !enableHTTP2 {
		tlsOpts = append(tlsOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	webhookOpts := webhook.Options{Port: webhookPort, TLSOpts: tlsOpts}
	var certWatcher *certwatcher.CertWatcher
	if webhookCertPath != "" {
		var err error
		certWatcher, err = certwatcher.New(filepath.Join(webhookCertPath, webhookCertName), filepath.Join(webhookCertPath, webhookCertKey))
		if err != nil {
			log.Error(err, "load the webhook certificate")
			os.Exit(1)
		}
		webhookOpts.TLSOpts = append(webhookOpts.TLSOpts, func(c *tls.Config) { c.GetCertificate = certWatcher.GetCertificate })
	}
	metricsOpts := metricsserver.Options{BindAddress: metricsAddr, SecureServing: secureMetrics, TLSOpts: tlsOpts}
	if secureMetrics {
		metricsOpts.FilterProvider = filters.WithAuthenticationAndAuthorization
	}

	cfg := ctrl.GetConfigOrDie()
	cfg.QPS, cfg.Burst = float32(apiQPS), apiBurst
	// The API server gzips every watch flush for clients that accept it:
	// CPU on both sides, per event, for traffic that stays in the cluster.
	cfg.DisableCompression = true
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme,
		// Nothing reads managedFields, nor the data of the ConfigMaps the
		// operator writes: the cache keeps neither (controllers.TrimConfigMaps).
		Cache: cache.Options{
			DefaultTransform: cache.TransformStripManagedFields(),
			ByObject:         map[client.Object]cache.ByObject{&corev1.ConfigMap{}: {Transform: controllers.TrimConfigMaps}},
		},
		Metrics:                metricsOpts,
		WebhookServer:          webhook.NewServer(webhookOpts),
		HealthProbeBindAddress: probeAddr,
		PprofBindAddress:       pprofAddr,
		LeaderElection:         enableLeaderElection,
		LeaderElectionID:       "persona-operator.prompts.persona-operator.dev",
	})
	if err != nil {
		log.Error(err, "create the manager")
		os.Exit(1)
	}
	ctx := ctrl.SetupSignalHandler()
	if err := controllers.Setup(ctx, mgr, controllers.Options{
		PersonaWorkers: personaWorkers, ReferenceGracePeriod: referenceGracePeriod,
	}); err != nil {
		log.Error(err, "set up the controllers")
		os.Exit(1)
	}
	personawebhook.Register(mgr)
	if certWatcher != nil {
		if err := mgr.Add(certWatcher); err != nil {
			log.Error(err, "watch the webhook certificate")
			os.Exit(1)
		}
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		log.Error(err, "add the health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("readyz", mgr.GetWebhookServer().StartedChecker()); err != nil {
		log.Error(err, "add the readiness check")
		os.Exit(1)
	}
	log.Info("starting the manager")
	if err := mgr.Start(ctx); err != nil {
		log.Error(err, "run the manager")
		os.Exit(1)
	}
}
