package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	certutil "k8s.io/client-go/util/cert"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"

	"github.com/persona-operator/persona-operator/internal/serving"
)

// The manager serves its probes and metrics itself, as it does its
// webhooks (serving.WebhookServer), within serving.DefaultLimits:
// controller-runtime's servers hold a megabyte of headers per connection,
// with no bound on connections, and every pod may reach these ports.

// probes are the checks of the health probe server.
type probes struct {
	healthz, readyz map[string]healthz.Checker
}

// addProbes serves /healthz and /readyz (and /readyz/<check>) on addr
// ("0" or "": none), started before the caches, as the manager's own
// probe server is.
func addProbes(mgr ctrl.Manager, addr string, p probes) error {
	if addr == "" || addr == "0" {
		return nil
	}
	mux := http.NewServeMux()
	for path, checks := range map[string]map[string]healthz.Checker{"/healthz": p.healthz, "/readyz": p.readyz} {
		h := http.StripPrefix(path, &healthz.Handler{Checks: checks})
		mux.Handle(path, h)
		mux.Handle(path+"/", h)
	}
	ln, err := serving.Listen(context.Background(), addr, nil, serving.DefaultLimits)
	if err != nil {
		return fmt.Errorf("listen for the health probes on %s: %w", addr, err)
	}
	return mgr.Add(&manager.Server{Name: "health probe", Server: serving.NewHTTPServer(context.Background(), mux, serving.DefaultLimits), Listener: ln})
}

// addMetrics serves /metrics on f.metricsAddr ("0": none): over HTTPS with
// a self-signed certificate and the Kubernetes authentication and
// authorization of a scraper when f.secureMetrics, as controller-runtime's
// metrics server does.
func addMetrics(mgr ctrl.Manager, f *managerFlags) error {
	if f.metricsAddr == "" || f.metricsAddr == "0" {
		return nil
	}
	handler := promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError})
	var cfg *tls.Config
	if f.secureMetrics {
		filter, err := filters.WithAuthenticationAndAuthorization(mgr.GetConfig(), mgr.GetHTTPClient())
		if err != nil {
			return fmt.Errorf("authenticate and authorize the metrics' scrapers: %w", err)
		}
		if handler, err = filter(ctrl.Log.WithName("metrics").WithValues("path", "/metrics"), handler); err != nil {
			return fmt.Errorf("authenticate and authorize the metrics' scrapers: %w", err)
		}
		if cfg, err = selfSignedTLS(f); err != nil {
			return err
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", handler)
	ln, err := serving.Listen(context.Background(), f.metricsAddr, cfg, serving.DefaultLimits)
	if err != nil {
		return fmt.Errorf("listen for the metrics on %s: %w", f.metricsAddr, err)
	}
	shutdown := time.Minute
	return mgr.Add(&manager.Server{Name: "metrics", Server: serving.NewHTTPServer(context.Background(), mux, serving.DefaultLimits), Listener: ln, ShutdownTimeout: &shutdown})
}

// selfSignedTLS is the metrics' TLS: the servers' (serverTLS) with a
// certificate made at start; scrapers verify the token, not the server.
func selfSignedTLS(f *managerFlags) (*tls.Config, error) {
	cert, key, err := certutil.GenerateSelfSignedCertKeyWithFixtures("localhost", []net.IP{{127, 0, 0, 1}}, nil, "")
	if err != nil {
		return nil, fmt.Errorf("make the metrics' self-signed certificate: %w", err)
	}
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		return nil, fmt.Errorf("make the metrics' self-signed certificate: %w", err)
	}
	cfg := &tls.Config{NextProtos: []string{"h2"}, Certificates: []tls.Certificate{pair}}
	for _, op := range serverTLS(f) {
		op(cfg)
	}
	return cfg, nil
}
