package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/controller"
	"github.com/persona-operator/persona-operator/internal/serving"
	personawebhook "github.com/persona-operator/persona-operator/internal/webhook"
)

// newManager creates the manager: its API client, cache, metrics and
// webhook servers, serving certs (certs.go), which it runs. The webhook's
// handlers are behind shutdown's (shutdown.go). With restarts, it decides
// whether Argo Rollouts' Rollouts are restart targets too.
func newManager(f *managerFlags, restarts *controller.RestartOptions, shutdown *drain, certs certificateSource) (ctrl.Manager, error) {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))

	tlsOpts := serverTLS(f)
	webhookOpts := webhook.Options{Port: f.webhookPort, TLSOpts: tlsOpts}
	if certs != nil {
		webhookOpts.TLSOpts = append(webhookOpts.TLSOpts, func(c *tls.Config) { c.GetCertificate = certs.GetCertificate })
	}
	if f.webhookClientCA != "" {
		requireClientCert, err := serving.RequireClientCertificate(f.webhookClientCA)
		if err != nil {
			return nil, fmt.Errorf("--webhook-client-ca: %w", err)
		}
		webhookOpts.TLSOpts = append(webhookOpts.TLSOpts, requireClientCert)
	}
	webhookLimits := serving.DefaultLimits
	webhookLimits.ControlPlane = serving.NewControlPlane(f.controlPlaneNetworks)
	cfg := restConfig(f)
	cacheOpts := controller.CacheOptions(f.watchNamespaces)
	if restarts != nil {
		rollouts, why, err := controller.RolloutsRestartable(context.Background(), cfg)
		if err != nil {
			return nil, fmt.Errorf("tell whether Argo Rollouts' Rollouts can be restarted: %w", err)
		}
		restarts.Rollouts = rollouts
		if !rollouts {
			ctrl.Log.WithName("restarts").Info("Argo Rollouts' Rollouts are not restarted on change", "why", why)
		}
		cacheOpts.ByObject = controller.RestartCacheObjects(*restarts)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:   scheme,
		Cache:    cacheOpts,
		NewCache: controller.NewCache,
		Client:   controller.ClientOptions(),
		// The metrics and the probes are served by addMetrics and
		// addProbes, within serving.DefaultLimits, as the webhooks are.
		Metrics:                metricsserver.Options{BindAddress: "0"},
		WebhookServer:          drainingWebhookServer{serving.NewWebhookServer(webhookOpts, webhookLimits), shutdown},
		HealthProbeBindAddress: "0",
		PprofBindAddress:       f.pprofAddr,
		LeaderElection:         f.leaderElect,
		LeaderElectionID:       "persona-operator.prompts.persona-operator.dev",
		// The manager's namespace, from the downward API; empty falls back
		// to the in-cluster ServiceAccount's (which a manager run outside
		// the cluster lacks).
		LeaderElectionNamespace: os.Getenv("POD_NAMESPACE"),
		// The process ends once the manager stops, so the Lease can go at
		// once: the other replica takes over without waiting for it to expire.
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		return nil, err
	}
	if certs != nil {
		if err := mgr.Add(certs); err != nil {
			return nil, fmt.Errorf("watch the webhook certificate: %w", err)
		}
	}
	if f.controlPlaneChecks {
		namespace := os.Getenv("POD_NAMESPACE")
		if namespace == "" {
			namespace = "default"
		}
		checks := &personawebhook.ControlPlaneChecks{Config: cfg, Scheme: scheme, Mapper: mgr.GetRESTMapper(), Reader: mgr.GetAPIReader(),
			Namespace: namespace, ControlPlane: webhookLimits.ControlPlane, Every: 30 * time.Second}
		if err := mgr.Add(checks); err != nil {
			return nil, fmt.Errorf("check the API servers' addresses: %w", err)
		}
	}
	if err := addMetrics(mgr, f); err != nil {
		return nil, err
	}
	return mgr, nil
}

// serverTLS is the TLS of the webhook and metrics servers: HTTP/1.1 only
// unless HTTP/2 is asked for (HTTP/2 Rapid Reset).
func serverTLS(f *managerFlags) []func(*tls.Config) {
	if f.enableHTTP2 {
		return nil
	}
	return []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
}

func restConfig(f *managerFlags) *rest.Config {
	cfg := ctrl.GetConfigOrDie()
	cfg.QPS, cfg.Burst = float32(f.apiQPS), f.apiBurst
	// The API server gzips every watch flush for clients that accept it:
	// CPU on both sides, per event, for traffic that stays in the cluster.
	cfg.DisableCompression = true
	return cfg
}
