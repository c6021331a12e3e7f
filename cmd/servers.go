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

// Scrapes with a token not authorized lately are authenticated at most
// scrapesPerSecond a second (scrapeBurst at once), and answered 429 past
// that: each costs a TokenReview (and a SubjectAccessReview when the token
// is a real one), sent as the manager in its own API Priority and Fairness
// flow, beside its deliveries and status writes, and anyone who reaches
// the port may send a new token every time. A token authorized within
// knownScrapeFor passes at once (the filter still checks it, from its cache
// of a minute); a new token from an address that scraped with an
// authorized one within knownScraperFor (a scraper whose token rotated)
// takes from a bucket of that address's own. So once authorized, a scraper
// is never held up by others' new tokens; its first scrape after a start
// shares the bucket with them (the metrics NetworkPolicy closes that).
const (
	scrapesPerSecond = 5
	scrapeBurst      = 10
	knownScrapeFor   = 10 * time.Minute
	knownScraperFor  = 24 * time.Hour
	knownScrapers    = 64 // tokens and addresses each
)

// authenticatedScrapes is handler behind the Kubernetes authentication and
// authorization of a scraper, as controller-runtime's metrics server does,
// with the bound above.
func authenticatedScrapes(cfg *rest.Config, client *http.Client, handler http.Handler) (http.Handler, error) {
	filter, err := filters.WithAuthenticationAndAuthorization(cfg, client)
	if err != nil {
		return nil, fmt.Errorf("authenticate and authorize the metrics' scrapers: %w", err)
	}
	known := newScrapers(time.Now)
	// The filter takes the Authorization header off the request it passes
	// on: what the scrape is known by goes in the context.
	filtered, err := filter(ctrl.Log.WithName("metrics").WithValues("path", "/metrics"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s, ok := r.Context().Value(scrapeKey{}).(scrape); ok {
			known.authorized(s)
		}
		handler.ServeHTTP(w, r)
	}))
	if err != nil {
		return nil, fmt.Errorf("authenticate and authorize the metrics' scrapers: %w", err)
	}
	newTokens := flowcontrol.NewTokenBucketRateLimiter(scrapesPerSecond, scrapeBurst)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := scrapeOf(r)
		if !known.admit(s, newTokens) {
			w.Header().Set("Retry-After", "1")
			http.Error(w, fmt.Sprintf("too many scrapes with new tokens: at most %d a second are authenticated", scrapesPerSecond), http.StatusTooManyRequests)
			return
		}
		filtered.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), scrapeKey{}, s)))
	}), nil
}

type scrapeKey struct{}

// scrape is what a scrape is known by: its bearer token's digest (zero:
// none) and its source address.
type scrape struct {
	token   [sha256.Size]byte
	address string
}

func scrapeOf(r *http.Request) scrape {
	var s scrape
	if token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && token != "" {
		s.token = sha256.Sum256([]byte(token))
	}
	s.address = r.RemoteAddr
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		s.address = host
	}
	return s
}

// scrapers are the tokens and the addresses of the scrapes authorized
// lately, at most knownScrapers of each, the oldest forgotten first.
type scrapers struct {
	now       func() time.Time
	mu        sync.Mutex
	tokens    map[[sha256.Size]byte]time.Time
	addresses map[string]*knownAddress
}

// knownAddress is when an address last scraped with an authorized token,
// and its own bucket for new tokens.
type knownAddress struct {
	at        time.Time
	newTokens flowcontrol.RateLimiter
}

func newScrapers(now func() time.Time) *scrapers {
	return &scrapers{now: now, tokens: map[[sha256.Size]byte]time.Time{}, addresses: map[string]*knownAddress{}}
}

// admit reports whether s may be authenticated now: its token is known, or
// a bucket has room for it, its address's when known, else newTokens.
func (k *scrapers) admit(s scrape, newTokens flowcontrol.RateLimiter) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.now()
	if at, ok := k.tokens[s.token]; ok && s.token != ([sha256.Size]byte{}) && now.Sub(at) < knownScrapeFor {
		return true
	}
	if a, ok := k.addresses[s.address]; ok && now.Sub(a.at) < knownScraperFor {
		return a.newTokens.TryAccept()
	}
	return newTokens.TryAccept()
}

// authorized remembers s, forgetting the oldest token or address past the
// bound.
func (k *scrapers) authorized(s scrape) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.now()
	if s.token != ([sha256.Size]byte{}) {
		if _, ok := k.tokens[s.token]; !ok && len(k.tokens) >= knownScrapers {
			delete(k.tokens, oldestKey(k.tokens, func(at time.Time) time.Time { return at }))
		}
		k.tokens[s.token] = now
	}
	a, ok := k.addresses[s.address]
	if !ok {
		if len(k.addresses) >= knownScrapers {
			delete(k.addresses, oldestKey(k.addresses, func(a *knownAddress) time.Time { return a.at }))
		}
		a = &knownAddress{newTokens: flowcontrol.NewTokenBucketRateLimiter(1, 3)}
		k.addresses[s.address] = a
	}
	a.at = now
}

// oldestKey is the key of m whose value is oldest by at.
func oldestKey[K comparable, V any](m map[K]V, at func(V) time.Time) K {
	var oldest K
	var oldestAt time.Time
	first := true
	for key, v := range m {
		if first || at(v).Before(oldestAt) {
			oldest, oldestAt, first = key, at(v), false
		}
	}
	return oldest
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
