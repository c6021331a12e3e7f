package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/persona-operator/persona-operator/internal/render"
)

// The webhook bounds the memory its requests may take at once, by
// requestWeight, in two lanes, so that heavy requests, which wait for each
// other, never hold up ordinary ones.
const (
	// HeavyInflightBytes bounds the requests over lightRequestBytes: one
	// maximal Persona (3 MiB of the densest templates weighs 18 MiB) at a time.
	HeavyInflightBytes = 24 << 20
	// LightInflightBytes bounds the others: two of the largest, or dozens
	// of typical ones, at a time.
	LightInflightBytes = 16 << 20
	lightRequestBytes  = 64 << 10
)

// maxRequestBytes bounds an admission request: controller-runtime refuses
// one of this size or more.
const maxRequestBytes = 7 << 20

// inflight lets a request in only when the memory it may take, by
// requestWeight, fits beside the requests of its lane being validated,
// before its body is read: so a waiting request holds no memory, and
// concurrent heavy requests never exhaust the heap. A request that cannot
// get in within half its timeout, or maxWait, is denied with the reason.
// Anyone who reaches the port may send one, so a request let in must send
// its body within bodyDeadline, and one that names no length, or more
// than maxRequestBytes, is refused without waiting.
type inflight struct {
	light, heavy *lane
	limits       render.Limits
	// maxWait is the longest a request waits to be let in.
	maxWait time.Duration
}

// lane is one bound of inflight.
type lane struct {
	sem   *semaphore.Weighted
	limit int64
	// what names the lane's requests in a denial.
	what string
	// held is the weight of the requests being validated, for the denial.
	held atomic.Int64
}

func newInflight(light, heavy int64, limits render.Limits) *inflight {
	return &inflight{
		light:   &lane{sem: semaphore.NewWeighted(light), limit: light, what: fmt.Sprintf("requests of at most %d KiB", lightRequestBytes>>10)},
		heavy:   &lane{sem: semaphore.NewWeighted(heavy), limit: heavy, what: fmt.Sprintf("requests over %d KiB", lightRequestBytes>>10)},
		limits:  limits,
		maxWait: maxWait,
	}
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
	return 4*n + int64(l.limits.MaxParsedBytes(int(n)))
}

// laneOf is the lane of a request of n body bytes.
func (l *inflight) laneOf(n int64) *lane {
	if n <= lightRequestBytes {
		return l.light
	}
	return l.heavy
}

func (l *inflight) serve(next http.Handler, w http.ResponseWriter, r *http.Request) {
	// The API server always sends the length; without it the weight is
	// unknown. The refusals close the connection rather than read on.
	switch n := r.ContentLength; {
	case n < 0:
		w.Header().Set("Connection", "close")
		http.Error(w, "an admission request must have a Content-Length", http.StatusLengthRequired)
		return
	case n >= maxRequestBytes:
		w.Header().Set("Connection", "close")
		http.Error(w, fmt.Sprintf("the admission request of %d bytes is over the limit of %d", n, maxRequestBytes), http.StatusRequestEntityTooLarge)
		return
	}
	in := l.laneOf(r.ContentLength)
	weight := min(l.requestWeight(r.ContentLength), in.limit)
	ctx, cancel := context.WithTimeout(r.Context(), min(waitFor(r), l.maxWait))
	err := in.sem.Acquire(ctx, weight)
	cancel()
	if err != nil {
		in.deny(w, r)
		return
	}
	in.held.Add(weight)
	defer func() {
		in.held.Add(-weight)
		in.sem.Release(weight)
	}()
	// The weight is held for a body that has not arrived: a client that
	// sends it slowly, or never, gives the weight back at its deadline.
	body, err := readBody(w, r)
	if err != nil {
		status := http.StatusBadRequest
		if errors.Is(err, os.ErrDeadlineExceeded) {
			status = http.StatusRequestTimeout
		}
		w.Header().Set("Connection", "close")
		http.Error(w, fmt.Sprintf("read the admission request: %v", err), status)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	next.ServeHTTP(w, r)
}

// The longest a request waits to be let in (half the API server's default
// timeout), and the slowest its body may arrive once it is: the API server
// sends the body at once, from memory, and the grace is for a node whose
// CPU is starved, where a read of bytes already sent can wait its turn.
const (
	maxWait         = 5 * time.Second
	bodyGrace       = 2 * time.Second
	minBodyByteRate = 4 << 20 // bytes a second
)

// bodyDeadline is how long a body of n bytes may take to arrive.
func bodyDeadline(n int64) time.Duration {
	return bodyGrace + time.Duration(n)*time.Second/minBodyByteRate
}

// readBody reads the whole body of r, of r.ContentLength bytes, under the
// deadline of its length; the connection has no deadline afterwards.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	rc := http.NewResponseController(w)
	if err := rc.SetReadDeadline(time.Now().Add(bodyDeadline(r.ContentLength))); err != nil {
		return nil, fmt.Errorf("set the read deadline: %w", err)
	}
	defer func() { _ = rc.SetReadDeadline(time.Time{}) }()
	body := make([]byte, r.ContentLength)
	if _, err := io.ReadFull(r.Body, body); err != nil {
		return nil, err
	}
	return body, nil
}

// waitFor is how long a request may wait to be let in: half the timeout
// the API server gives the webhook (the timeout query parameter), leaving
// the other half to validate it. Whoever sends the request chooses the
// parameter, so serve waits no more than maxWait however long it is.
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
func (l *lane) deny(w http.ResponseWriter, r *http.Request) {
	msg := fmt.Sprintf("the webhook is validating %d MiB of %s already (its bound is %d MiB); try again in a moment",
		(l.held.Load()+(1<<20)-1)>>20, l.what, l.limit>>20)
	// The uid is read under a deadline too, lest a stalled body hold the
	// connection.
	const uidBytes = 64 << 10
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(bodyDeadline(uidBytes)))
	uid, ok := requestUID(io.LimitReader(r.Body, uidBytes))
	_ = rc.SetReadDeadline(time.Time{})
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
