package main

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// A scrape with a token the metrics' filter has not seen costs the manager
// a TokenReview: scrapes with random tokens, as fast as one client sends
// them, cost at most scrapesPerSecond a second (past a burst) and are
// answered 429, while the scraper whose token is authorized is answered
// every time.
func TestScrapesWithNewTokensCostBoundedTokenReviews(t *testing.T) {
	var tokenReviews atomic.Int64
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review struct {
			Spec struct {
				Token string `json:"token"`
			} `json:"spec"`
		}
		_ = json.NewDecoder(r.Body).Decode(&review)
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/apis/authentication.k8s.io/v1/tokenreviews":
			tokenReviews.Add(1)
			ok := review.Spec.Token == "prometheus"
			_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
				"status": map[string]any{"authenticated": ok, "user": map[string]any{"username": "system:serviceaccount:monitoring:prometheus"}}})
		case "/apis/authorization.k8s.io/v1/subjectaccessreviews":
			_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
				"status": map[string]any{"allowed": true}})
		default:
			http.NotFound(w, r)
		}
	}))
	defer api.Close()
	cfg := &rest.Config{Host: api.URL}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h, err := authenticatedScrapes(cfg, client, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "metrics") }))
	if err != nil {
		t.Fatal(err)
	}
	scrape := func(token string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.RemoteAddr = "10.0.0.2:40000" // a tenant's pod
		if token == "prometheus" {
			req.RemoteAddr = "10.0.0.1:40000"
		}
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	if rec := scrape("prometheus"); rec.Code != http.StatusOK {
		t.Fatalf("the authorized scraper's first scrape: %d %s, want 200", rec.Code, rec.Body)
	}
	start := time.Now()
	const scrapes = 3000
	var throttled, prometheusRefused int
	for i := range scrapes {
		b := make([]byte, 24)
		_, _ = rand.Read(b)
		rec := scrape(hex.EncodeToString(b))
		if rec.Code == http.StatusTooManyRequests {
			throttled++
			if rec.Header().Get("Retry-After") == "" {
				t.Fatal("a throttled scrape has no Retry-After")
			}
		}
		if i%100 == 0 && scrape("prometheus").Code != http.StatusOK {
			prometheusRefused++
		}
	}
	elapsed := time.Since(start)
	most := int64(scrapeBurst + scrapesPerSecond*elapsed.Seconds() + 2) // +1 for the authorized scraper's first
	t.Logf("%d scrapes with random tokens in %v: %d answered 429, %d TokenReviews (at most %d)", scrapes, elapsed.Round(time.Millisecond), throttled, tokenReviews.Load(), most)
	if tokenReviews.Load() > most {
		t.Errorf("%d TokenReviews for %d scrapes with random tokens in %v, want at most %d", tokenReviews.Load(), scrapes, elapsed, most)
	}
	if throttled < scrapes-int(most) {
		t.Errorf("%d of %d scrapes with new tokens answered 429, want at least %d", throttled, scrapes, scrapes-int(most))
	}
	if prometheusRefused > 0 {
		t.Errorf("the authorized scraper was refused %d times among the others, want never", prometheusRefused)
	}
}

// A scraper is never held up by others' new tokens once it has been
// authorized: not at an interval of a minute or more (its token is known
// for knownScrapeFor), nor when its token rotates (its address takes new
// tokens from a bucket of its own); an address never authorized waits for
// the shared bucket.
func TestAKnownScraperPassesWhileTheSharedBucketIsEmpty(t *testing.T) {
	now := time.Unix(0, 0)
	known := newScrapers(func() time.Time { return now })
	empty := flowcontrol.NewTokenBucketRateLimiter(0.001, 1)
	empty.TryAccept()
	prometheus := scrape{token: sha256.Sum256([]byte("token-1")), address: "10.0.0.1"}
	known.authorized(prometheus)

	now = now.Add(61 * time.Second) // Prometheus's default interval, and a bit
	if !known.admit(prometheus, empty) {
		t.Error("a token authorized 61 s ago waited for the shared bucket, want it known")
	}
	// Its token rotates: new tokens from its address take from that
	// address's bucket (3 at once), not the shared one.
	now = now.Add(knownScrapeFor)
	for i, token := range []string{"token-1", "token-2", "token-3"} {
		if !known.admit(scrape{token: sha256.Sum256([]byte(token)), address: "10.0.0.1"}, empty) {
			t.Errorf("token %d, new to the manager, of a known scraper's address waited for the shared bucket, want its address's own", i+1)
		}
	}
	if known.admit(scrape{token: sha256.Sum256([]byte("token-4")), address: "10.0.0.1"}, empty) {
		t.Error("a known address's fourth new token at once passed, want its own bucket (3 at once) to bound it")
	}
	stranger := scrape{token: sha256.Sum256([]byte("random")), address: "10.0.0.2"}
	if known.admit(stranger, empty) {
		t.Error("a new token of an address never authorized passed with the shared bucket empty")
	}
}
