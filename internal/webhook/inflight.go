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
	"slices"
	"sync"
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

// The pod injection has a bound of its own, so that pods never hold up the
// validation of Personas, nor the reverse. A pod review weighs podBytesWeight
// bytes a byte of body before it is read (the body, the review's copy, the
// typed pod, its two encodings and the two documents the patch is computed
// from: 18 bytes a byte measured for a pod of one long string), and then
// podTokenWeight bytes a JSON token of it before it is decoded (an empty
// ephemeral container, `{}`, two tokens, decodes to a 424-byte struct and
// costs 3.6 KiB in all, the most of the shapes inject_weight_test.go
// measures). A review heavier than its lane is refused.
const (
	// PodInflightBytes bounds the pod reviews of at most lightRequestBytes,
	// every pod of an ordinary agent: a 4 KiB pod weighs about 1 MiB.
	PodInflightBytes = 16 << 20
	// HeavyPodInflightBytes bounds the larger ones: the largest pod it
	// admits is 2 MiB of a few long values, or about 95 KiB of the
	// densest ones the API server writes (an environment variable of a
	// name and a value is 6 tokens in 25 bytes).
	HeavyPodInflightBytes = 48 << 20
	podBytesWeight        = 24
	podTokenWeight        = 2048
	// maxPodRequestBytes bounds a pod review: the API server stores a Pod
	// of at most 1.5 MiB in etcd and allows twice that for its JSON, 3 MiB,
	// which a CREATE review carries once (its oldObject is null); 1 MiB
	// more is for the rest of the review, as controller-runtime allows.
	maxPodRequestBytes = 4 << 20
)

// Each lane bounds the bodies of its requests being received, before the
// lane is taken (receiving), counted twice as they arrive, so that bodies
// waiting for one lane never hold up the other's: the heavy lane's, about
// one maximal Persona review or two of the largest pod reviews the pod
// lanes admit (the body begun first may always go on, so a larger one
// passes alone); the light lane's, dozens of ordinary ones.
const (
	heavyReceivingBytes = 8 << 20
	lightReceivingBytes = 4 << 20
)

// inflight bounds the memory of the requests it serves in two steps.
// Receiving: a request's body is counted as its bytes arrive, among the
// bodies being received (receiving), and it holds no share of a lane
// meanwhile; anyone who reaches the port may send one, so a body that has
// not arrived by its prompt deadline is cut short as soon as another
// request waits for room, and a client that sends slowly, or never, can
// never keep out those that send at once, as the API server does. Then
// handling: a request is let in only when what it may take, by its weight,
// fits beside the requests of its lane being handled, so concurrent heavy
// requests never exhaust the heap. A request that cannot get in within
// half its timeout, or maxWait, is denied with the reason; one that names
// no length, or more than maxBytes, is refused without waiting.
type inflight struct {
	light, heavy *lane
	// weigh is what a request of n body bytes may take, before it is read.
	weigh func(n int64) int64
	// tokenWeight is what each JSON token of a body may take besides, once
	// it is read and before it is decoded; 0 counts none.
	tokenWeight int64
	// maxBytes bounds a request's body.
	maxBytes int64
	// capped lets in a request heavier than its lane at the lane's weight
	// (a Persona's weight overestimates); otherwise it is refused.
	capped bool
	// maxWait is the longest a request waits to be let in.
	maxWait time.Duration
}

// lane is one bound of inflight.
type lane struct {
	sem   *semaphore.Weighted
	limit int64
	// doing and what say what the webhook does with the lane's requests,
	// and names them, in a denial.
	doing, what string
	// held is the weight of the requests being validated, for the denial.
	held atomic.Int64
	// receiving bounds the bodies of the lane's requests being received.
	receiving *receiving
}

func newLane(limit, receivingLimit int64, doing, what string) *lane {
	return &lane{sem: semaphore.NewWeighted(limit), limit: limit, doing: doing, what: what, receiving: newReceiving(receivingLimit)}
}

// newInflight is the bound of the validating webhooks.
func newInflight(light, heavy int64, limits render.Limits) *inflight {
	l := &inflight{
		light:    newLane(light, lightReceivingBytes, "validating", fmt.Sprintf("requests of at most %d KiB", lightRequestBytes>>10)),
		heavy:    newLane(heavy, heavyReceivingBytes, "validating", fmt.Sprintf("requests over %d KiB", lightRequestBytes>>10)),
		maxBytes: maxRequestBytes,
		capped:   true,
		maxWait:  maxWait,
	}
	// The body and the copies decoding makes (the AdmissionReview's raw
	// object, the decoded map and the typed object), and the parse tree of
	// its largest template, which is at most n bytes of source. Templates
	// are parsed one at a time, so one tree is live at once.
	l.weigh = func(n int64) int64 { return 4*n + int64(limits.MaxParsedBytes(int(n))) }
	return l
}

// newPodInflight is the bound of the pod injection.
func newPodInflight(light, heavy int64) *inflight {
	return &inflight{
		light:       newLane(light, lightReceivingBytes, "injecting", fmt.Sprintf("pod reviews of at most %d KiB", lightRequestBytes>>10)),
		heavy:       newLane(heavy, heavyReceivingBytes, "injecting", fmt.Sprintf("pod reviews over %d KiB", lightRequestBytes>>10)),
		weigh:       func(n int64) int64 { return podBytesWeight * n },
		tokenWeight: podTokenWeight,
		maxBytes:    maxPodRequestBytes,
		maxWait:     maxWait,
	}
}

// wrap serves next under the bound.
func (l *inflight) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { l.serve(next, w, r) })
}

// requestWeight is what a request of n body bytes may take, as it is let in.
func (l *inflight) requestWeight(n int64) int64 { return l.weigh(n) }

// laneOf is the lane of a request of n body bytes.
func (l *inflight) laneOf(n int64) *lane {
	if n <= lightRequestBytes {
		return l.light
	}
	return l.heavy
}

// refuse answers a request whose body is not read, and closes the
// connection rather than read on.
func refuse(w http.ResponseWriter, status int, format string, args ...any) {
	w.Header().Set("Connection", "close")
	http.Error(w, fmt.Sprintf(format, args...), status)
}

func (l *inflight) serve(next http.Handler, w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	// The API server always sends the length; without it the weight is
	// unknown.
	n := r.ContentLength
	switch {
	case n < 0:
		refuse(w, http.StatusLengthRequired, "an admission request must have a Content-Length")
		return
	case n >= l.maxBytes:
		refuse(w, http.StatusRequestEntityTooLarge, "the admission request of %d bytes is over the limit of %d", n, l.maxBytes)
		return
	}
	in := l.laneOf(n)
	weight := l.requestWeight(n)
	if weight > in.limit {
		if !l.capped {
			refuse(w, http.StatusRequestEntityTooLarge, "the admission request of %d bytes weighs %d MiB, over the webhook's bound of %d MiB for %s",
				n, weight>>20, in.limit>>20, in.what)
			return
		}
		weight = in.limit
	}
	waitUntil := start.Add(min(waitFor(r), l.maxWait))
	rc := http.NewResponseController(w)
	body, charged, err := in.receiving.read(r.Context(), rc, r, waitUntil)
	received, arrived := charged, err == nil
	defer func() { in.receiving.release(received, arrived) }()
	switch {
	case errors.Is(err, errNoRoom):
		in.deny(w, bytes.NewReader(body))
		return
	case err != nil:
		status := http.StatusBadRequest
		if errors.Is(err, os.ErrDeadlineExceeded) {
			status = http.StatusRequestTimeout
		}
		refuse(w, status, "read the admission request: %v", err)
		return
	}
	need := weight
	if l.tokenWeight > 0 {
		tokens, err := jsonTokens(body)
		if err != nil {
			http.Error(w, fmt.Sprintf("decode the admission request: %v", err), http.StatusBadRequest)
			return
		}
		if need += l.tokenWeight * tokens; need > in.limit {
			http.Error(w, fmt.Sprintf("the admission request of %d bytes has %d JSON tokens, which weigh %d MiB, over the webhook's bound of %d MiB for %s",
				n, tokens, need>>20, in.limit>>20, in.what), http.StatusRequestEntityTooLarge)
			return
		}
	}
	if !in.acquire(r.Context(), waitUntil, need) {
		in.deny(w, bytes.NewReader(body))
		return
	}
	defer in.release(need)
	// The lane's weight counts the body: it leaves the bodies received.
	in.receiving.release(received, arrived)
	received = 0
	r.Body = io.NopCloser(bytes.NewReader(body))
	next.ServeHTTP(w, r)
}

// acquire waits until weight fits in the lane, or until waitUntil.
func (in *lane) acquire(ctx context.Context, waitUntil time.Time, weight int64) bool {
	ctx, cancel := context.WithDeadline(ctx, waitUntil)
	defer cancel()
	if err := in.sem.Acquire(ctx, weight); err != nil {
		return false
	}
	in.held.Add(weight)
	return true
}

func (in *lane) release(weight int64) {
	if weight > 0 {
		in.held.Add(-weight)
		in.sem.Release(weight)
	}
}

// jsonTokens counts the tokens of a JSON document (delimiters, keys and
// scalars), without keeping them.
func jsonTokens(body []byte) (int64, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	var tokens int64
	for {
		_, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return tokens, nil
		}
		if err != nil {
			return tokens, err
		}
		tokens++
	}
}

// The longest a request waits to be let in (half the API server's default
// timeout), and the slowest its body may arrive: the API server sends the
// body at once, from memory, and the grace is for a node whose CPU is
// starved, where a read of bytes already sent can wait its turn. A body
// still arriving past its prompt deadline is cut short as soon as another
// request waits for room among the bodies received.
const (
	maxWait         = 5 * time.Second
	bodyGrace       = 2 * time.Second
	minBodyByteRate = 4 << 20 // bytes a second
	promptGrace     = 250 * time.Millisecond
	promptByteRate  = 16 << 20 // bytes a second
)

// bodyDeadline is how long a body of n bytes may take to arrive.
func bodyDeadline(n int64) time.Duration {
	return bodyGrace + time.Duration(n)*time.Second/minBodyByteRate
}

// promptDeadline is how long a body of n bytes may take to arrive before
// it gives way to requests that wait for room.
func promptDeadline(n int64) time.Duration {
	return promptGrace + time.Duration(n)*time.Second/promptByteRate
}

// receiving bounds the memory of the bodies being received. A body is
// charged as its bytes arrive, twice (its buffer grows by doubling), never
// by the length its request names: a request that names a length and
// sends nothing costs nothing but its connection. A body that needs room
// waits for it; meanwhile every body past its prompt deadline is cut short.
type receiving struct {
	mu    sync.Mutex
	limit int64
	held  int64
	// freed is closed, and replaced, whenever bytes are released.
	freed chan struct{}
	// waiting counts the bodies waiting for room.
	waiting int
	// overdue are the cuts of the bodies past their prompt deadline that
	// are still arriving.
	overdue map[*receipt]struct{}
	// active are the bodies being received, by the order they began: the
	// first may go on past the limit while no body that has arrived is
	// held, so that bodies that each hold a part never wait for one
	// another, and the limit is passed by one body at most.
	active map[*receipt]uint64
	seq    uint64
	// arrived is what the bodies that have arrived hold, until they go.
	arrived int64
}

// receipt is one body being received.
type receipt struct {
	cut func()
	// done: the body is read, or its read over; no cut may come after.
	done bool
	// paused: the body waits for room, so its prompt deadline waits too.
	paused bool
}

func newReceiving(limit int64) *receiving {
	return &receiving{limit: limit, freed: make(chan struct{}), overdue: map[*receipt]struct{}{}, active: map[*receipt]uint64{}}
}

// errNoRoom is a body that found no room among those received in time.
var errNoRoom = errors.New("no room among the bodies being received")

// A body's buffer starts at firstChunk bytes, uncharged, as the server's
// own buffers of a connection are; receiveChunk is the most read at once.
const (
	firstChunk   = 4 << 10
	receiveChunk = 32 << 10
)

// read reads the whole body of r, of r.ContentLength bytes, under the
// deadline of its length, charging its bytes as they arrive, and returns
// them with what it charged, which the caller releases. A body cut short,
// or past its deadline, is an os.ErrDeadlineExceeded; one that finds no
// room by waitUntil is errNoRoom, with what arrived of it. The connection
// has no deadline afterwards.
func (rv *receiving) read(ctx context.Context, rc *http.ResponseController, r *http.Request, waitUntil time.Time) (body []byte, charged int64, err error) {
	n := r.ContentLength
	if err := rc.SetReadDeadline(time.Now().Add(bodyDeadline(n))); err != nil {
		return nil, 0, fmt.Errorf("set the read deadline: %w", err)
	}
	rcpt := &receipt{cut: func() { _ = rc.SetReadDeadline(time.Now()) }}
	rv.mu.Lock()
	rv.seq++
	rv.active[rcpt] = rv.seq
	rv.mu.Unlock()
	timer := time.AfterFunc(promptDeadline(n), func() { rv.lateness(rcpt) })
	defer func() {
		timer.Stop()
		rv.mu.Lock()
		rcpt.done = true // no cut after this, so the reset below stands
		delete(rv.overdue, rcpt)
		delete(rv.active, rcpt)
		if err == nil {
			rv.arrived += charged
		}
		rv.wake() // the first may have changed
		rv.mu.Unlock()
		_ = rc.SetReadDeadline(time.Time{})
	}()
	body = make([]byte, 0, min(n, firstChunk))
	for int64(len(body)) < n {
		if len(body) == cap(body) {
			// The next bytes are charged, before they are read.
			grown := min(n, 2*int64(cap(body))) - int64(cap(body))
			if !rv.tryCharge(rcpt, 2*grown) {
				// Waiting for room is no slowness of the sender's: its
				// deadlines start again once it has room.
				rv.mu.Lock()
				rcpt.paused = true
				delete(rv.overdue, rcpt)
				rv.mu.Unlock()
				timer.Stop()
				if !rv.charge(ctx, waitUntil, rcpt, 2*grown) {
					return body, charged, errNoRoom
				}
				rv.mu.Lock()
				rcpt.paused = false
				rv.mu.Unlock()
				rest := n - int64(len(body))
				_ = rc.SetReadDeadline(time.Now().Add(bodyDeadline(rest)))
				timer.Reset(promptDeadline(rest))
			}
			charged += 2 * grown
			before := cap(body)
			body = slices.Grow(body, int(grown))
			// The allocator may round the buffer up: that is counted too.
			if extra := 2 * (int64(cap(body)-before) - grown); extra > 0 {
				rv.mu.Lock()
				rv.held += extra
				rv.mu.Unlock()
				charged += extra
			}
		}
		k, err := r.Body.Read(body[len(body):min(cap(body), len(body)+receiveChunk)])
		body = body[:len(body)+k]
		if err != nil && !(errors.Is(err, io.EOF) && int64(len(body)) == n) {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, charged, err
		}
	}
	return body, charged, nil
}

// lateness marks rcpt's body past its prompt deadline, and cuts it short at
// once when a body waits for room.
func (rv *receiving) lateness(rcpt *receipt) {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	switch {
	case rcpt.done, rcpt.paused:
	case rv.waiting > 0:
		rcpt.cut()
	default:
		rv.overdue[rcpt] = struct{}{}
	}
}

// tryCharge charges n bytes of rcpt's body if they fit now.
func (rv *receiving) tryCharge(rcpt *receipt, n int64) bool {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	if !rv.fits(rcpt, n) {
		return false
	}
	rv.held += n
	return true
}

// fits reports whether n more bytes of rcpt's body may be held: within the
// limit, or rcpt's body is the first begun of those being received.
func (rv *receiving) fits(rcpt *receipt, n int64) bool {
	if rv.held+n <= rv.limit {
		return true
	}
	if rv.arrived > 0 {
		return false
	}
	mine := rv.active[rcpt]
	for _, seq := range rv.active {
		if seq < mine {
			return false
		}
	}
	return true
}

// wake tells the waiters that room, or the first body, may have changed.
func (rv *receiving) wake() {
	close(rv.freed)
	rv.freed = make(chan struct{})
}

// charge waits until n bytes fit, or until waitUntil; while it waits, the
// bodies past their prompt deadline are cut short.
func (rv *receiving) charge(ctx context.Context, waitUntil time.Time, rcpt *receipt, n int64) bool {
	ctx, cancel := context.WithDeadline(ctx, waitUntil)
	defer cancel()
	rv.mu.Lock()
	defer rv.mu.Unlock()
	for !rv.fits(rcpt, n) {
		rv.waiting++
		for rcpt := range rv.overdue {
			rcpt.cut()
			delete(rv.overdue, rcpt)
		}
		freed := rv.freed
		rv.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
		}
		rv.mu.Lock()
		rv.waiting--
		if ctx.Err() != nil {
			return false
		}
	}
	rv.held += n
	return true
}

// release gives back n charged bytes, of a body that arrived or not.
func (rv *receiving) release(n int64, arrived bool) {
	if n <= 0 {
		return
	}
	rv.mu.Lock()
	defer rv.mu.Unlock()
	rv.held -= n
	if arrived {
		rv.arrived -= n
	}
	rv.wake()
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
func (l *lane) deny(w http.ResponseWriter, body io.Reader) {
	msg := fmt.Sprintf("the webhook is %s %d MiB of %s already (its bound is %d MiB); try again in a moment",
		l.doing, (l.held.Load()+(1<<20)-1)>>20, l.what, l.limit>>20)
	// The uid is read under a deadline too, lest a stalled body hold the
	// connection.
	const uidBytes = 64 << 10
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(bodyDeadline(uidBytes)))
	uid, ok := requestUID(io.LimitReader(body, uidBytes))
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
