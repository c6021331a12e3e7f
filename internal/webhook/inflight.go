package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/persona-operator/persona-operator/internal/fairshare"
	"github.com/persona-operator/persona-operator/internal/render"
	"github.com/persona-operator/persona-operator/internal/serving"
)

// The webhook bounds the memory its requests may take at once, by
// requestWeight, in two lanes, so that heavy requests, which wait for each
// other, never hold up ordinary ones.
const (
	// HeavyInflightBytes bounds the requests over lightRequestBytes: one
	// maximal Persona (3 MiB of the densest templates, which weighs more
	// than the lane and is let in alone at its weight) at a time.
	HeavyInflightBytes = 24 << 20
	// LightInflightBytes bounds the others: two of the largest, or dozens
	// of typical ones, at a time.
	LightInflightBytes = 16 << 20
	lightRequestBytes  = 64 << 10
)

// A validating review weighs validatingTokenWeight bytes a JSON token of
// its body besides (mostTokens): what the decoded tree, the typed values
// and the errors of the densest objects allocate beside 16 bytes a byte,
// up to about 300 bytes a token (bad label selector values), in the parts
// validation walks and in those it never reads alike
// (validate_weight_test.go). A review of more than
// HeavyInflightBytes/2/validatingTokenWeight tokens (32,768) is cut short
// as they arrive, undecoded.
const validatingTokenWeight = 384

// validatingBytesWeight is what each byte of a validating review may take
// (see newInflight).
const validatingBytesWeight = 16

// maxRequestBytes bounds an admission request: controller-runtime refuses
// one of this size or more.
const maxRequestBytes = 7 << 20

// The pod injection has a bound of its own, so that pods never hold up the
// validation of Personas, nor the reverse. A pod review weighs podBytesWeight
// bytes a byte of body before it is read (the body, the review's copy, the
// typed pod, its two encodings and the two documents the patch is computed
// from: 18 bytes a byte measured for a pod of one long string), and then
// podTokenWeight bytes a JSON token of it before it is decoded (an empty
// ephemeral container, `{}`, three tokens, decodes to a 424-byte struct and
// costs 3.6 KiB in all, the most of the shapes inject_weight_test.go
// measures). A review heavier than its lane is refused.
const (
	// PodInflightBytes bounds the pod reviews of at most lightRequestBytes,
	// every pod of an ordinary agent: a 4 KiB pod weighs about 1 MiB.
	PodInflightBytes = 16 << 20
	// HeavyPodInflightBytes bounds the larger ones: the largest pod it
	// admits is 2 MiB of a few long values, or about 84 KiB of the
	// densest ones the API server writes (an environment variable of a
	// name and a value counts 7 tokens in 25 bytes).
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
	// it is read and before it is decoded (see mostTokens); 0 counts none.
	tokenWeight int64
	// escapeWeight is what each byte encoding/json escapes to six may take
	// besides: five more bytes in each of the encodings the weight of a
	// byte counts.
	escapeWeight int64
	// maxBytes bounds a request's body.
	maxBytes int64
	// capped lets in a request heavier than its lane at the lane's weight
	// (a Persona's weight overestimates); otherwise it is refused.
	capped bool
	// maxWait is the longest a request waits to be let in.
	maxWait time.Duration
}

// lane is one bound of inflight. Its requests take turns by client
// address, so that a client that queues many heavy requests holds up
// another's, the API server's, for one turn of each client waiting.
type lane struct {
	sem   *fairshare.Weighted
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
	return &lane{sem: fairshare.NewWeighted(limit), limit: limit, doing: doing, what: what, receiving: newReceiving(receivingLimit)}
}

// newInflight is the bound of the validating webhooks.
func newInflight(limits render.Limits) *inflight {
	l := &inflight{
		light:        newLane(LightInflightBytes, lightReceivingBytes, "validating", fmt.Sprintf("requests of at most %d KiB", lightRequestBytes>>10)),
		heavy:        newLane(HeavyInflightBytes, heavyReceivingBytes, "validating", fmt.Sprintf("requests over %d KiB", lightRequestBytes>>10)),
		tokenWeight:  validatingTokenWeight,
		escapeWeight: 5 * validatingBytesWeight,
		maxBytes:     maxRequestBytes,
		capped:       true,
		maxWait:      maxWait,
	}
	// The body and the copies of its strings that decoding and validation
	// make (the AdmissionReview's raw object, the decoded map, the typed
	// objects, a key's section name: a long key is copied about 14 times),
	// and the parse tree of its largest template, which is at most n bytes
	// of source. Templates are parsed one at a time, so one tree is live at
	// once.
	l.weigh = func(n int64) int64 { return validatingBytesWeight*n + int64(limits.MaxParsedBytes(int(n))) }
	return l
}

// newPodInflight is the bound of the pod injection.
func newPodInflight(light, heavy int64) *inflight {
	return &inflight{
		light:        newLane(light, lightReceivingBytes, "injecting", fmt.Sprintf("pod reviews of at most %d KiB", lightRequestBytes>>10)),
		heavy:        newLane(heavy, heavyReceivingBytes, "injecting", fmt.Sprintf("pod reviews over %d KiB", lightRequestBytes>>10)),
		weigh:        func(n int64) int64 { return podBytesWeight * n },
		tokenWeight:  podTokenWeight,
		escapeWeight: 5 * podBytesWeight,
		maxBytes:     maxPodRequestBytes,
		maxWait:      maxWait,
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

// Why the webhook turns a request away at its bounds, unhandled: the
// reason label of turnedAwayTotal and of the log line.
const (
	reasonNoLength       = "NoContentLength"
	reasonOverLimit      = "OverSizeLimit"
	reasonTooHeavy       = "OverBound"
	reasonNoRoom         = "NoRoomToReceive"
	reasonTooManyTokens  = "TooManyTokens"
	reasonSlowBody       = "BodyTooSlow"
	reasonUnreadable     = "BodyUnreadable"
	reasonNotUTF8        = "NotUTF8"
	reasonTooManyEscapes = "TooManyEscapes"
	reasonNoTurn         = "NoTurnInTime"
)

var turnedAwayTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "persona_webhook_requests_turned_away_total",
	Help: "Admission requests the webhook answered at its bounds without handling them, by webhook (validating, injecting) and reason.",
}, []string{"webhook", "reason"})

func init() { metrics.Registry.MustRegister(turnedAwayTotal) }

// turnedAway counts and logs request r, begun at start, turned away for
// reason; bodyUnread says the connection closes with its body not read to
// the end, which a client still sending sees as a reset or a broken pipe
// rather than the answer.
func (l *inflight) turnedAway(r *http.Request, start time.Time, reason string, bodyUnread bool) {
	webhook := l.light.doing
	turnedAwayTotal.WithLabelValues(webhook, reason).Inc()
	log.FromContext(r.Context()).WithName("webhook").Info("turned an admission request away at the webhook's bounds",
		"webhook", webhook, "reason", reason, "client", clientAddress(r), "bytes", r.ContentLength,
		"bodyUnread", bodyUnread, "after", time.Since(start).Round(time.Millisecond).String())
}

// refuse answers a request whose body is not read, and closes the
// connection rather than read on.
func refuse(w http.ResponseWriter, status int, format string, args ...any) {
	w.Header().Set("Connection", "close")
	reply(w, status, format, args...)
}

// reply answers a request whose body was read to its end.
func reply(w http.ResponseWriter, status int, format string, args ...any) {
	http.Error(w, fmt.Sprintf(format, args...), status)
}

// drain reads the rest bytes left of a body turned away before it arrived
// whole, and discards them, within the time they may take to arrive, or
// until the request's own timeout (until), whichever is later; it reports
// whether the body was read to its end. A connection closed with bytes
// unread is reset, and a reset client drops an answer it had not read yet:
// the API server, still sending, would report a broken pipe rather than the
// answer (RFC 9112 §9.6 has a server read on before it closes). The API
// server sends the bodies that found no room at once, all of them, on a
// node whose CPU they starve: each may arrive slower than alone, and the
// request's timeout is when the API server stops waiting for the answer
// anyway. Reading on holds no memory but a copy buffer, and no room among
// the bodies.
func drain(rc *http.ResponseController, body io.Reader, rest int64, until time.Time) bool {
	if rest <= 0 {
		return true
	}
	if err := rc.SetReadDeadline(later(time.Now().Add(bodyDeadline(rest)), until)); err != nil {
		return false
	}
	defer func() { _ = rc.SetReadDeadline(time.Time{}) }()
	read, err := io.Copy(io.Discard, body)
	return err == nil && read == rest
}

func (l *inflight) serve(next http.Handler, w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	// The API server always sends the length; without it the weight is
	// unknown.
	n := r.ContentLength
	switch {
	case n < 0:
		l.turnedAway(r, start, reasonNoLength, true)
		refuse(w, http.StatusLengthRequired, "an admission request must have a Content-Length")
		return
	case n >= l.maxBytes:
		l.turnedAway(r, start, reasonOverLimit, true)
		refuse(w, http.StatusRequestEntityTooLarge, "the admission request of %d bytes is over the limit of %d", n, l.maxBytes)
		return
	}
	in := l.laneOf(n)
	weight := l.requestWeight(n)
	if weight > in.limit {
		if !l.capped {
			l.turnedAway(r, start, reasonTooHeavy, true)
			refuse(w, http.StatusRequestEntityTooLarge, "the admission request of %d bytes weighs %d MiB, over the webhook's bound of %d MiB for %s",
				n, weight>>20, in.limit>>20, in.what)
			return
		}
		weight = in.limit
	}
	wait := min(waitFor(r), l.maxWait)
	waitUntil := start.Add(wait)
	rc := http.NewResponseController(w)
	client := clientAddress(r)
	rcpt := in.receiving.begin(client, rc)
	defer in.receiving.finish(rcpt)
	most := l.mostTokens(in, n)
	body, tokens, err := in.receiving.read(r.Context(), rc, r, rcpt, waitUntil, most)
	// A body turned away before it arrived whole is read on, held nowhere,
	// before the answer (drain), until the request's timeout at least:
	// twice its wait, the API server's timeout for the webhook.
	drained := func() bool {
		in.receiving.finish(rcpt)
		return drain(rc, r.Body, n-int64(len(body)), start.Add(2*wait))
	}
	switch {
	case errors.Is(err, errNoRoom):
		whole := drained()
		l.turnedAway(r, start, reasonNoRoom, !whole)
		in.deny(w, bytes.NewReader(body), !whole)
		return
	case errors.Is(err, errTooManyTokens):
		answer := refuse
		whole := drained()
		if whole {
			answer = reply
		}
		l.turnedAway(r, start, reasonTooManyTokens, !whole)
		answer(w, http.StatusRequestEntityTooLarge, "the admission request of %d bytes has %d JSON tokens in its first %d bytes, more than the %d that fit the webhook's bound of %d MiB for %s at %d bytes a token",
			n, tokens, len(body), most, in.limit>>20, in.what, l.tokenWeight)
		return
	case err != nil:
		status, reason := http.StatusBadRequest, reasonUnreadable
		if errors.Is(err, os.ErrDeadlineExceeded) {
			status, reason = http.StatusRequestTimeout, reasonSlowBody
		}
		l.turnedAway(r, start, reason, true)
		refuse(w, status, "read the admission request: %v", err)
		return
	}
	if !utf8.Valid(body) {
		// JSON is UTF-8, and the API server's encoder writes nothing else;
		// decoding turns each invalid byte into three, past the weight.
		l.turnedAway(r, start, reasonNotUTF8, false)
		refuse(w, http.StatusBadRequest, "the admission request is not valid UTF-8")
		return
	}
	need := weight
	if most >= 0 {
		need = l.requestWeight(n) + l.tokenWeight*tokens
	}
	if escaped := escapedBytes(body); escaped > 0 {
		need += l.escapeWeight * escaped
		if need > in.limit && !l.capped {
			l.turnedAway(r, start, reasonTooManyEscapes, false)
			refuse(w, http.StatusRequestEntityTooLarge, "the admission request of %d bytes has %d bytes that are written as six (<, > and &) each time it is encoded again, which weigh %d MiB, over the webhook's bound of %d MiB for %s",
				n, escaped, need>>20, in.limit>>20, in.what)
			return
		}
	}
	need = min(need, in.limit)
	// Waiting for its turn, a request holds a place of the connection
	// bound that a newcomer may take (serving.Waiting).
	turn := serving.Waiting(r.Context())
	admitted := in.acquire(r.Context(), waitUntil, client, need)
	turn()
	if !admitted {
		l.turnedAway(r, start, reasonNoTurn, false)
		in.deny(w, bytes.NewReader(body), false)
		return
	}
	defer in.release(need)
	// The lane's weight counts the body: it leaves the bodies received.
	in.receiving.finish(rcpt)
	// A client that never reads the answer holds the lane no longer than
	// a request may wait for it, nor longer than answerWriteTime once the
	// answer is written; then the connection has its server's bound again
	// (none without one), for the rest of the answer and the requests after.
	_ = rc.SetWriteDeadline(start.Add(2 * l.maxWait))
	defer func() { _ = rc.SetWriteDeadline(serverWriteDeadline(r, start)) }()
	r.Body = io.NopCloser(bytes.NewReader(body))
	next.ServeHTTP(&promptWriter{ResponseWriter: w, rc: rc, by: start.Add(2 * l.maxWait)}, r.WithContext(withClient(r.Context(), client)))
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// answerWriteTime is the longest the answer of a request holding a lane
// may take to be written: the API server reads it at once.
const answerWriteTime = time.Second

// promptWriter gives the answer answerWriteTime to be written (and never
// past by), from when it begins.
type promptWriter struct {
	http.ResponseWriter
	rc    *http.ResponseController
	by    time.Time
	begun bool
}

func (p *promptWriter) begin() {
	if !p.begun {
		p.begun = true
		deadline := time.Now().Add(answerWriteTime)
		if deadline.After(p.by) {
			deadline = p.by
		}
		_ = p.rc.SetWriteDeadline(deadline)
	}
}

func (p *promptWriter) WriteHeader(status int) {
	p.begin()
	p.ResponseWriter.WriteHeader(status)
}

func (p *promptWriter) Write(b []byte) (int, error) {
	p.begin()
	return p.ResponseWriter.Write(b)
}

func (p *promptWriter) Unwrap() http.ResponseWriter { return p.ResponseWriter }

// serverWriteDeadline is the write deadline r's server set for it, from
// its WriteTimeout (about when r began); none without one.
func serverWriteDeadline(r *http.Request, start time.Time) time.Time {
	if srv, ok := r.Context().Value(http.ServerContextKey).(*http.Server); ok && srv.WriteTimeout > 0 {
		return start.Add(srv.WriteTimeout)
	}
	return time.Time{}
}

// mostTokens is the most JSON tokens a request of n body bytes may have
// to be let in, or -1 when its tokens are not counted: what its lane has
// room for beside its weight; for a capped request too heavy for its lane,
// which is let in alone at the lane's weight, half the lane (its bytes may
// be overweighed, its tree is not). A body past it is cut short as its
// bytes arrive.
func (l *inflight) mostTokens(in *lane, n int64) int64 {
	if l.tokenWeight == 0 {
		return -1
	}
	most := (in.limit - l.requestWeight(n)) / l.tokenWeight
	if l.capped {
		most = max(most, in.limit/2/l.tokenWeight)
	}
	return max(most, 0)
}

// acquire waits until weight fits in the lane, in client's turn, or until
// waitUntil.
func (in *lane) acquire(ctx context.Context, waitUntil time.Time, client string, weight int64) bool {
	ctx, cancel := context.WithDeadline(ctx, waitUntil)
	defer cancel()
	if err := in.sem.Acquire(ctx, client, weight); err != nil {
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

// tokenCount bounds from above the tokens of a JSON document (the
// delimiters, keys and scalars a decoder makes values of) from its
// structural bytes outside strings, as they arrive, without decoding it:
// each container opened counts three (itself, its end, its first member),
// each comma or colon one (the next member or value). It allocates nothing
// and reads each byte once, so it costs little ahead of the lane; a body
// that is not JSON is refused by its decoding, which checks all of it
// before it builds anything.
type tokenCount struct {
	tokens            int64
	inString, escaped bool
}

func newTokenCount() tokenCount { return tokenCount{tokens: 1} }

// add counts the next bytes of the document.
func (c *tokenCount) add(b []byte) {
	for _, ch := range b {
		switch {
		case c.escaped:
			c.escaped = false
		case c.inString:
			switch ch {
			case '\\':
				c.escaped = true
			case '"':
				c.inString = false
			}
		case ch == '"':
			c.inString = true
		case ch == '{' || ch == '[':
			c.tokens += 3
		case ch == ',' || ch == ':':
			c.tokens++
		}
	}
}

// escapedBytes counts the bytes of body that encoding/json writes as six
// (\u003c for <, and > and & alike) each time the webhook encodes what it
// decoded again: the injection's two documents, the checks' typed values.
func escapedBytes(body []byte) int64 {
	return int64(bytes.Count(body, []byte("<")) + bytes.Count(body, []byte(">")) + bytes.Count(body, []byte("&")))
}

// jsonTokens is the tokenCount of a whole document.
func jsonTokens(body []byte) int64 {
	c := newTokenCount()
	c.add(body)
	return c.tokens
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
	// A body that holds room and receives nothing for stallGrace is cut
	// short while a body of another client waits: the API server's bytes
	// are there to be read. Its client then goes no further than its share
	// for benchFor.
	stallGrace = 300 * time.Millisecond
	benchFor   = 10 * time.Second
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
// sends nothing costs nothing but its connection. Anyone who reaches the
// port may send bodies, so each client address holds at most a fair share
// of the room: a client that keeps its share full of bodies it never
// finishes leaves the others, the API server among them, the rest. A body
// that needs room waits for it; meanwhile the bodies of other clients past
// their prompt deadline are cut short.
type receiving struct {
	mu    sync.Mutex
	limit int64
	held  int64
	// freed is closed, and replaced, whenever bytes are released.
	freed chan struct{}
	// waiting counts the bodies waiting for room, by client address.
	waiting map[string]int
	// overdue are the bodies past their prompt deadline that are still
	// arriving.
	overdue map[*receipt]struct{}
	// active are the bodies being received, by the order they began (see
	// mayPass).
	active map[*receipt]uint64
	seq    uint64
	// arrived is what the bodies that have arrived hold, until they go.
	arrived int64
	// beyond is the body that holds the room past one and a half times its
	// limit, until its read ends (see fits).
	beyond *receipt
	// clients counts the bodies of each client address begun and not
	// finished, and heldBy what they hold: the share is the limit divided
	// among the clients.
	clients map[string]int
	heldBy  map[string]int64
	// benched are the clients a body of which was cut short, until when
	// their bodies may not go past their share.
	benched map[string]time.Time
}

// receipt is one body being received.
type receipt struct {
	client string
	cut    func()
	// charged is what the body holds; arrived, that it was read whole.
	charged  int64
	arrived  bool
	finished bool
	// done: the body is read, or its read over; no cut may come after.
	done bool
	// paused: the body waits for room, so its prompt deadline waits too;
	// left is what remained of it when it paused.
	paused bool
	left   time.Duration
	// due is its prompt deadline: a timer that fires before it, set for an
	// earlier deadline, finds the body in time.
	due time.Time
	// progress is when its last bytes arrived, or it last got room, in
	// Unix nanoseconds.
	progress atomic.Int64
}

func newReceiving(limit int64) *receiving {
	return &receiving{limit: limit, freed: make(chan struct{}), waiting: map[string]int{}, overdue: map[*receipt]struct{}{},
		active: map[*receipt]uint64{}, clients: map[string]int{}, heldBy: map[string]int64{}, benched: map[string]time.Time{}}
}

// clientAddress is the address a request came from, without its port.
func clientAddress(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// clientKey is the context key of the client address a request came from.
type clientKey struct{}

func withClient(ctx context.Context, client string) context.Context {
	return context.WithValue(ctx, clientKey{}, client)
}

// clientOf is the address of the client whose request ctx serves, or ""
// outside the webhook's bound.
func clientOf(ctx context.Context) string {
	client, _ := ctx.Value(clientKey{}).(string)
	return client
}

// errNoRoom is a body that found no room among those received in time.
var errNoRoom = errors.New("no room among the bodies being received")

// errTooManyTokens is a body whose JSON tokens, as they arrive, outweigh
// what its lane could let in.
var errTooManyTokens = errors.New("more JSON tokens than the lane could let in")

// A body's buffer starts at firstChunk bytes, uncharged, as the server's
// own buffers of a connection are; receiveChunk is the most read at once.
const (
	firstChunk   = 4 << 10
	receiveChunk = 32 << 10
)

// begin counts a body of client, which finish gives back.
func (rv *receiving) begin(client string, rc *http.ResponseController) *receipt {
	rcpt := &receipt{client: client, cut: func() { _ = rc.SetReadDeadline(time.Now()) }}
	rv.mu.Lock()
	defer rv.mu.Unlock()
	rv.clients[client]++
	rv.seq++
	rv.active[rcpt] = rv.seq
	return rcpt
}

// finish releases what rcpt's body holds; a second call does nothing.
func (rv *receiving) finish(rcpt *receipt) {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	if rcpt.finished {
		return
	}
	rcpt.finished = true
	rv.held -= rcpt.charged
	if rcpt.arrived {
		rv.arrived -= rcpt.charged
	}
	if rv.heldBy[rcpt.client] -= rcpt.charged; rv.heldBy[rcpt.client] <= 0 {
		delete(rv.heldBy, rcpt.client)
	}
	if rv.clients[rcpt.client]--; rv.clients[rcpt.client] <= 0 {
		delete(rv.clients, rcpt.client)
	}
	rcpt.charged = 0
	rv.wake() // room, or a share, grew
}

// read reads the whole body of r, of r.ContentLength bytes, under the
// deadline of its length, charging its bytes to rcpt as they arrive. A body
// cut short, or past its deadline, is an os.ErrDeadlineExceeded; one that
// finds no room by waitUntil is errNoRoom, with what arrived of it. The
// connection has no deadline afterwards.
func (rv *receiving) read(ctx context.Context, rc *http.ResponseController, r *http.Request, rcpt *receipt, waitUntil time.Time, mostTokens int64) (body []byte, tokens int64, err error) {
	n := r.ContentLength
	if err := rc.SetReadDeadline(time.Now().Add(bodyDeadline(n))); err != nil {
		return nil, 0, fmt.Errorf("set the read deadline: %w", err)
	}
	rv.setDue(rcpt, promptDeadline(n))
	rcpt.progress.Store(time.Now().UnixNano())
	timer := time.AfterFunc(promptDeadline(n), func() { rv.lateness(rcpt) })
	defer func() {
		timer.Stop()
		rv.ended(rcpt, err == nil)
		_ = rc.SetReadDeadline(time.Time{})
	}()
	count := newTokenCount()
	body = make([]byte, 0, min(n, firstChunk))
	for int64(len(body)) < n {
		if len(body) == cap(body) {
			// The next bytes are charged, before they are read.
			grown := nextGrowth(int64(cap(body)), n)
			if !rv.tryCharge(rcpt, 2*grown) {
				// Waiting for room is no slowness of the sender's: its
				// deadlines wait meanwhile, and go on once it has room.
				rv.mu.Lock()
				rcpt.paused = true
				rcpt.left = max(time.Until(rcpt.due), 0)
				delete(rv.overdue, rcpt)
				rv.mu.Unlock()
				timer.Stop()
				if !rv.charge(ctx, waitUntil, rcpt, 2*grown) {
					return body, count.tokens, errNoRoom
				}
				rest := n - int64(len(body))
				rv.setDue(rcpt, rcpt.left)
				rcpt.progress.Store(time.Now().UnixNano())
				_ = rc.SetReadDeadline(time.Now().Add(bodyDeadline(rest)))
				timer.Reset(rcpt.left)
			}
			body = growBody(body, grown)
		}
		k, err := r.Body.Read(body[len(body):min(cap(body), len(body)+receiveChunk)])
		body = body[:len(body)+k]
		if k > 0 {
			rcpt.progress.Store(time.Now().UnixNano())
			if mostTokens >= 0 {
				if count.add(body[len(body)-k:]); count.tokens > mostTokens {
					return body, count.tokens, errTooManyTokens
				}
			}
		}
		if err != nil && (!errors.Is(err, io.EOF) || int64(len(body)) != n) {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, count.tokens, err
		}
	}
	return body, count.tokens, nil
}

// ended marks the read of rcpt's body over, whole (arrived) or not: it
// is no longer among those that may pass, nor beyond the room.
func (rv *receiving) ended(rcpt *receipt, arrived bool) {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	rcpt.done = true // no cut after this, so the read's deadline reset stands
	delete(rv.overdue, rcpt)
	delete(rv.active, rcpt)
	if rv.beyond == rcpt {
		rv.beyond = nil
	}
	if arrived {
		rcpt.arrived = true
		rv.arrived += rcpt.charged
	}
	rv.wake() // the first may have changed
}

// nextGrowth is how much a body's buffer of size bytes grows by, toward
// its n bytes: it doubles, so that its bytes are copied twice at most.
func nextGrowth(size, n int64) int64 { return min(n, 2*size) - size }

// growBody is body with room for exactly grown bytes more, what was
// charged for them: append would round the buffer up by as much as half
// the growth again. (The allocator rounds a large buffer up to its page,
// 8 KiB at most, which is not charged.)
func growBody(body []byte, grown int64) []byte {
	bigger := make([]byte, len(body), int64(cap(body))+grown)
	copy(bigger, body)
	return bigger
}

// setDue sets rcpt's prompt deadline d from now, and takes it out of the
// waiting.
func (rv *receiving) setDue(rcpt *receipt, d time.Duration) {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	rcpt.paused = false
	rcpt.due = time.Now().Add(d)
}

// lateness marks rcpt's body past its prompt deadline, and cuts it short at
// once when a body of another client waits for room.
func (rv *receiving) lateness(rcpt *receipt) {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	switch {
	case rcpt.done, rcpt.paused, time.Now().Before(rcpt.due):
	case rv.othersWait(rcpt.client):
		rv.cutShort(rcpt)
	default:
		rv.overdue[rcpt] = struct{}{}
	}
}

// othersWait reports whether a body of a client other than client waits.
func (rv *receiving) othersWait(client string) bool {
	return len(rv.waiting) > 1 || len(rv.waiting) == 1 && rv.waiting[client] == 0
}

// take charges n bytes to rcpt; a body that takes the room past one and a
// half times its limit, when no other is beyond it, is the one beyond it
// until its read ends (see fits).
func (rv *receiving) take(rcpt *receipt, n int64) {
	if rv.beyond == nil && rv.held+n > rv.limit+rv.limit/2 {
		rv.beyond = rcpt
	}
	rv.held += n
	rv.heldBy[rcpt.client] += n
	rcpt.charged += n
}

// tryCharge charges n bytes of rcpt's body if they fit now.
func (rv *receiving) tryCharge(rcpt *receipt, n int64) bool {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	if !rv.fits(rcpt, n) {
		return false
	}
	rv.take(rcpt, n)
	return true
}

// fits reports whether n more bytes of rcpt's body may be held: within the
// limit and its client's share. Past them, only a body that may pass (the
// first begun of its client's, of a client not benched): within half the
// limit more, so that the API server's larger bodies never queue behind
// those of other clients one by one; or beyond, one body at a time, when
// the others hold no more than one and a half times the limit and no body
// that has arrived is held. The body beyond goes on until its read ends,
// whatever else happens meanwhile, so bodies that each hold a part never
// wait for one another (two beyond at once could each wait for the other
// to give room back), the room holds at most one and a half times its
// limit and one body, and a client whose body was cut short takes no room
// beyond its share from then on (but for its body beyond the room, if it
// has that one, until its read ends).
func (rv *receiving) fits(rcpt *receipt, n int64) bool {
	share := int64(fairshare.Share(int(rv.limit), len(rv.clients)))
	if rv.held+n <= rv.limit && rv.heldBy[rcpt.client]+n <= share {
		return true
	}
	if rv.beyond == rcpt {
		return true
	}
	if !rv.mayPass(rcpt) {
		return false
	}
	past := rv.limit + rv.limit/2
	if rv.held+n <= past {
		return true
	}
	return rv.beyond == nil && rv.arrived == 0 && rv.held-rcpt.charged <= past
}

// mayPass reports whether rcpt's body may go past the limit and its share
// when it is the first begun of those that may: it began first of its
// client's, and its client is not benched.
func (rv *receiving) mayPass(rcpt *receipt) bool {
	if until, ok := rv.benched[rcpt.client]; ok {
		if time.Now().Before(until) {
			return false
		}
		delete(rv.benched, rcpt.client)
	}
	mine := rv.active[rcpt]
	for other, seq := range rv.active {
		if seq < mine && other.client == rcpt.client {
			return false
		}
	}
	return true
}

// cutShort cuts rcpt's body short, and benches its client.
func (rv *receiving) cutShort(rcpt *receipt) {
	rcpt.cut()
	now := time.Now()
	if len(rv.benched) >= maxBenched {
		// Clients that stay away are forgotten once their time is up.
		maps.DeleteFunc(rv.benched, func(_ string, until time.Time) bool { return !now.Before(until) })
	}
	rv.benched[rcpt.client] = now.Add(benchFor)
}

// maxBenched is how many benched clients are kept before those whose time
// is up are forgotten.
const maxBenched = 1024

// cutStalled cuts short the bodies of clients other than client that hold
// room and have received nothing for stallGrace.
func (rv *receiving) cutStalled(client string) {
	stalled := time.Now().Add(-stallGrace).UnixNano()
	for other := range rv.active {
		if other.client != client && !other.paused && !other.done && other.progress.Load() < stalled && other.charged > 0 {
			rv.cutShort(other)
		}
	}
}

// wake tells the waiters that room, a share or the first body may have
// changed.
func (rv *receiving) wake() {
	close(rv.freed)
	rv.freed = make(chan struct{})
}

// charge waits until n bytes fit, or until waitUntil; while it waits, the
// bodies of other clients past their prompt deadline, or stalled, are cut
// short.
func (rv *receiving) charge(ctx context.Context, waitUntil time.Time, rcpt *receipt, n int64) bool {
	ctx, cancel := context.WithDeadline(ctx, waitUntil)
	defer cancel()
	rv.mu.Lock()
	defer rv.mu.Unlock()
	// A body that stalls while this one waits is cut short: it is looked
	// for every stallGrace.
	tick := time.NewTicker(stallGrace)
	defer tick.Stop()
	for !rv.fits(rcpt, n) {
		rv.waiting[rcpt.client]++
		for late := range rv.overdue {
			if late.client != rcpt.client {
				rv.cutShort(late)
				delete(rv.overdue, late)
			}
		}
		rv.cutStalled(rcpt.client)
		freed := rv.freed
		rv.mu.Unlock()
		select {
		case <-freed:
		case <-tick.C:
		case <-ctx.Done():
		}
		rv.mu.Lock()
		if rv.waiting[rcpt.client]--; rv.waiting[rcpt.client] <= 0 {
			delete(rv.waiting, rcpt.client)
		}
		if ctx.Err() != nil {
			return false
		}
	}
	rv.take(rcpt, n)
	return true
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

// deny refuses a request that was not let in, naming the reason; unread
// says its body was not read whole. The
// response must carry the request's uid, which the API server writes
// first; when it cannot be read from the start of the body, the answer is
// 429, which the API server reports as the webhook's failure.
func (l *lane) deny(w http.ResponseWriter, body io.Reader, unread bool) {
	if unread {
		// The rest of the body is never read: the connection cannot serve
		// another request.
		w.Header().Set("Connection", "close")
	}
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
