package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/persona-operator/persona-operator/internal/render"
)

// DefaultInflightBytes bounds the memory the webhook lets its requests take
// at once, by requestWeight: one maximal Persona (3 MiB of templates, with
// the densest template) at a time beside a few dozen ordinary requests.
const DefaultInflightBytes = 24 << 20

// maxRequestBytes is the largest admission request controller-runtime
// reads; a request of unknown length weighs as much.
const maxRequestBytes = 7 << 20

// inflight lets a request in only when the memory it may take, by
// requestWeight, fits beside the requests being validated, before its body
// is read: so a waiting request holds no memory, and concurrent heavy
// requests never exhaust the heap. A request that cannot get in within
// half its timeout is denied with the reason.
type inflight struct {
	sem    *semaphore.Weighted
	limit  int64
	limits render.Limits
	// held is the weight of the requests being validated, for the denial.
	held atomic.Int64
}

func newInflight(limit int64, limits render.Limits) *inflight {
	return &inflight{sem: semaphore.NewWeighted(limit), limit: limit, limits: limits}
}

// wrap serves next under the bound.
func (l *inflight) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { l.serve(next, w, r) })
}

// requestWeight is what a request of n body bytes may take while it is
// validated: its body and the copies decoding makes (the AdmissionReview's
// raw object, the decoded map and the typed object), and the parse tree of
// its largest template, which is at most n bytes of source. Templates are
// parsed one at a time, so one tree is live at once.
func (l *inflight) requestWeight(n int64) int64 {
	if n < 0 || n > maxRequestBytes {
		n = maxRequestBytes
	}
	return min(4*n+int64(l.limits.MaxParsedBytes(int(n))), l.limit)
}

func (l *inflight) serve(next http.Handler, w http.ResponseWriter, r *http.Request) {
	weight := l.requestWeight(r.ContentLength)
	ctx, cancel := context.WithTimeout(r.Context(), waitFor(r))
	err := l.sem.Acquire(ctx, weight)
	cancel()
	if err != nil {
		l.deny(w, r)
		return
	}
	l.held.Add(weight)
	defer func() {
		l.held.Add(-weight)
		l.sem.Release(weight)
	}()
	next.ServeHTTP(w, r)
}

// waitFor is how long a request may wait to be let in: half the timeout
// the API server gives the webhook (the timeout query parameter), leaving
// the other half to validate it.
func waitFor(r *http.Request) time.Duration {
	timeout, err := time.ParseDuration(r.URL.Query().Get("timeout"))
	if err != nil || timeout <= 0 {
		timeout = 10 * time.Second // the API server's default
	}
	return timeout / 2
}

// deny refuses a request that was not let in, naming the reason. The
// response must carry the request's uid, which the API server writes
// first; when it cannot be read from the start of the body, the answer is
// 429, which the API server reports as the webhook's failure.
func (l *inflight) deny(w http.ResponseWriter, r *http.Request) {
	msg := fmt.Sprintf("the webhook is validating %d MiB of requests already (its bound is %d MiB); try again in a moment",
		(l.held.Load()+(1<<20)-1)>>20, l.limit>>20)
	uid, ok := requestUID(io.LimitReader(r.Body, 64<<10))
	if !ok {
		w.Header().Set("Retry-After", "1")
		http.Error(w, msg, http.StatusTooManyRequests)
		return
	}
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Response: &admissionv1.AdmissionResponse{UID: uid, Allowed: false, Result: &metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusTooManyRequests, Reason: metav1.StatusReasonTooManyRequests, Message: msg,
		}},
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(review)
}

// requestUID reads request.uid from the start of an AdmissionReview, which
// the API server writes before the object; body is limited, so an object
// before it is never read whole.
func requestUID(body io.Reader) (types.UID, bool) {
	dec := json.NewDecoder(body)
	var uid string
	found := eachKey(dec, func(key string) (bool, error) {
		if key != "request" {
			return false, dec.Decode(&json.RawMessage{})
		}
		return eachKey(dec, func(key string) (bool, error) {
			if key != "uid" {
				return false, dec.Decode(&json.RawMessage{})
			}
			return true, dec.Decode(&uid)
		}), nil
	})
	return types.UID(uid), found && uid != ""
}

// eachKey calls value for each key of the JSON object dec is at, which
// decodes the key's value; it stops when value returns true or fails.
func eachKey(dec *json.Decoder, value func(key string) (bool, error)) bool {
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	for dec.More() {
		tok, err := dec.Token()
		key, ok := tok.(string)
		if err != nil || !ok {
			return false
		}
		done, err := value(key)
		if err != nil {
			return false
		}
		if done {
			return true
		}
	}
	return false
}
