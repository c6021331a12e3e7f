package main

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/flowcontrol"
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
	return mgr.Add(&manager.Server{Name: "health probe", Server: serving.NewHTTPServer(context.Background(), ln, mux, serving.DefaultLimits), Listener: ln})
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
		var err error
		if handler, err = authenticatedScrapes(mgr.GetConfig(), mgr.GetHTTPClient(), handler); err != nil {
			return err
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
	return mgr.Add(&manager.Server{Name: "metrics", Server: serving.NewHTTPServer(context.Background(), ln, mux, serving.DefaultLimits), Listener: ln, ShutdownTimeout: &shutdown})
}

// Scrapes with a token not seen authorized lately are authenticated at
// most scrapesPerSecond a second (scrapeBurst at once), and answered 429
// past that: each costs a TokenReview, sent as the manager in its own API
// Priority and Fairness flow, beside its deliveries and status writes, and
// anyone who reaches the port may send a new token every time. A token
// authorized within the filter's cache time (a minute) passes at once, so a
// Prometheus, which scrapes a few times a minute, is never held up by them.
const (
	scrapesPerSecond  = 5
	scrapeBurst       = 10
	knownScrapeTokens = 64
	knownScrapeFor    = time.Minute
)

// authenticatedScrapes is handler behind the Kubernetes authentication and
// authorization of a scraper, as controller-runtime's metrics server does,
// with the bound above.
func authenticatedScrapes(cfg *rest.Config, client *http.Client, handler http.Handler) (http.Handler, error) {
	filter, err := filters.WithAuthenticationAndAuthorization(cfg, client)
	if err != nil {
		return nil, fmt.Errorf("authenticate and authorize the metrics' scrapers: %w", err)
	}
	known := &scrapeTokens{seen: map[[sha256.Size]byte]time.Time{}}
	// The filter takes the Authorization header off the request it passes
	// on: its digest goes in the context.
	filtered, err := filter(ctrl.Log.WithName("metrics").WithValues("path", "/metrics"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if digest, ok := r.Context().Value(scrapeTokenKey{}).([sha256.Size]byte); ok {
			known.authorized(digest, time.Now())
		}
		handler.ServeHTTP(w, r)
	}))
	if err != nil {
		return nil, fmt.Errorf("authenticate and authorize the metrics' scrapers: %w", err)
	}
	limiter := flowcontrol.NewTokenBucketRateLimiter(scrapesPerSecond, scrapeBurst)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		digest := sha256.Sum256([]byte(token))
		authorizedLately := ok && known.recent(digest, time.Now())
		if !authorizedLately && !limiter.TryAccept() {
			w.Header().Set("Retry-After", "1")
			http.Error(w, fmt.Sprintf("too many scrapes with new tokens: at most %d a second are authenticated", scrapesPerSecond), http.StatusTooManyRequests)
			return
		}
		if ok {
			r = r.WithContext(context.WithValue(r.Context(), scrapeTokenKey{}, digest))
		}
		filtered.ServeHTTP(w, r)
	}), nil
}

type scrapeTokenKey struct{}

// scrapeTokens are the digests of the bearer tokens authorized to scrape
// within knownScrapeFor, at most knownScrapeTokens of them.
type scrapeTokens struct {
	mu   sync.Mutex
	seen map[[sha256.Size]byte]time.Time
}

// authorized remembers a token's digest, forgetting the oldest past the
// bound.
func (k *scrapeTokens) authorized(digest [sha256.Size]byte, now time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, seen := k.seen[digest]; !seen && len(k.seen) >= knownScrapeTokens {
		var oldest [sha256.Size]byte
		first := true
		for d, at := range k.seen {
			if first || at.Before(k.seen[oldest]) {
				oldest, first = d, false
			}
		}
		delete(k.seen, oldest)
	}
	k.seen[digest] = now
}

// recent reports whether a token of digest was authorized within
// knownScrapeFor.
func (k *scrapeTokens) recent(digest [sha256.Size]byte, now time.Time) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	at, seen := k.seen[digest]
	return seen && now.Sub(at) < knownScrapeFor
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
