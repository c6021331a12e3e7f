package serving

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Limits bound what clients may hold of a server.
type Limits struct {
	// MaxHeaderBytes bounds a request's header block. The API server sends
	// a handful of short headers with a review.
	MaxHeaderBytes int
	// ReadHeaderTimeout bounds a request's headers from its first bytes;
	// ReadTimeout the whole request, its body included: past the longest
	// webhook timeout the API server allows (30 s), no one waits for the
	// answer. WriteTimeout bounds the answer, IdleTimeout a kept-alive
	// connection between requests, and a new one before its first request,
	// its TLS handshake and headers included (place.SetReadDeadline). It is
	// longer than the clients' own (90 s in Go's and client-go's
	// transports), so that the client, not the server, closes an idle
	// connection: one the server closes as a client sends on it breaks that
	// request, and a review, a POST, is not sent again.
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// MaxConnections bounds the connections open at once. Past it a new
	// connection takes a place held: idle, still sending, or queued for a
	// turn (Waiting), the one longest without use (see victimFor). A
	// request that has arrived whole and has its turn is never cut.
	// MaxConnectionsPerAddress bounds those of one remote address: past it
	// a new one is closed at once. It is high: an API server's reviews come
	// from one address (or its network proxy's), and a control plane's
	// address (ControlPlane) is not bound by it.
	MaxConnections, MaxConnectionsPerAddress int
	// ControlPlane, when set, says which connections are the control
	// plane's (proven, or of the networks named): their places are never
	// taken (see victimFor).
	ControlPlane *ControlPlane
}

// DefaultLimits are the manager's: at most 1024 connections of about 16 KiB
// of headers each over HTTP/1.1, TLS and bufio buffers besides, whatever
// clients send. (With --enable-http2 a connection carries up to 4 streams,
// and costs more.)
var DefaultLimits = Limits{
	MaxHeaderBytes:    16 << 10,
	ReadHeaderTimeout: 5 * time.Second,
	ReadTimeout:       32 * time.Second,
	WriteTimeout:      32 * time.Second,
	IdleTimeout:       120 * time.Second,
	MaxConnections:    1024,
	// An API server under load holds one connection per review in flight.
	MaxConnectionsPerAddress: 256,
}

// Listener is a listener within Limits' bounds on connections. The server
// of it (NewHTTPServer) tells it which connections have a request being
// answered, the ones it keeps at the total bound.
type Listener struct {
	net.Listener
	places *fair
}

// Listen listens on the TCP address within l's bounds on connections, with
// TLS when tlsConfig is set.
func Listen(ctx context.Context, address string, tlsConfig *tls.Config, l Limits) (*Listener, error) {
	inner, err := (&net.ListenConfig{}).Listen(ctx, "tcp", address)
	if err != nil {
		return nil, err
	}
	places := bound(inner, l)
	ln := &Listener{Listener: places, places: places}
	if tlsConfig != nil {
		ln.Listener = tls.NewListener(places, tlsConfig)
	}
	return ln, nil
}

// NewHTTPServer is a server of handler on ln within l, whose requests'
// contexts derive from ctx.
func NewHTTPServer(ctx context.Context, ln *Listener, handler http.Handler, l Limits) *http.Server {
	return &http.Server{
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ConnContext:       ln.places.connContext,
		ConnState:         ln.places.connState,
		Handler:           ln.places.answering(handler),
		MaxHeaderBytes:    l.MaxHeaderBytes,
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		// With --enable-http2, a connection's streams are requests of
		// their own: a few, so that the connection bound bounds requests.
		HTTP2: &http.HTTP2Config{MaxConcurrentStreams: 4},
	}
}

// Bound bounds the connections ln accepts as l says, as Listen does; its
// connections are answering none until a server of it says so.
func Bound(ln net.Listener, l Limits) net.Listener {
	return bound(ln, l)
}

func bound(ln net.Listener, l Limits) *fair {
	return &fair{Listener: ln, maxPer: l.MaxConnectionsPerAddress, maxTotal: l.MaxConnections, controlPlane: l.ControlPlane,
		firstWait: l.IdleTimeout, readTimeout: l.ReadTimeout, places: map[*place]struct{}{}, perAddress: map[string]int{}}
}

// fair bounds connections per address and in total. At the total a new
// connection does not wait (a probe or a review would time out): it takes
// the place of one with no request being answered on it (victimFor); when
// every place answers a request that has arrived whole and has its turn,
// the new one is closed.
type fair struct {
	net.Listener
	maxPer, maxTotal int
	controlPlane     *ControlPlane
	// firstWait is how long a connection may wait for its first request,
	// IdleTimeout, and readTimeout how long that request may then take,
	// ReadTimeout (see place.SetReadDeadline and place.begin).
	firstWait, readTimeout time.Duration

	mu         sync.Mutex
	places     map[*place]struct{}
	perAddress map[string]int
}

// place is an accepted connection.
type place struct {
	net.Conn
	address string
	ip      netip.Addr
	release func()
	// Under fair.mu: its requests whose handler runs, of those the ones
	// that have arrived whole and are being answered and those that wait
	// for their turn instead (Waiting), the answers whose handler has
	// returned that the server has not yet written out (connState), whether
	// one was ever answered, when it was accepted or last of use
	// (victimFor), and when a handler last began and last returned.
	handling, answering, waiting, unwritten int
	served                                  bool
	since, began, returned                  time.Time
	// proven: a request on it proved it the control plane's, by a client
	// certificate of the client CA or a token (ControlPlane, Prove).
	proven bool
	// firstWait is how long it may wait for its first request from when
	// it was accepted (see SetReadDeadline), until begun says a request
	// has begun on it; asked is the read deadline the server last asked
	// for meanwhile, in Unix nanoseconds, and readTimeout its ReadTimeout.
	accepted               time.Time
	firstWait, readTimeout time.Duration
	begun                  atomic.Bool
	asked                  atomic.Int64
}

// SetReadDeadline sets the deadline the server asks for, but no earlier
// than firstWait after the connection was accepted until its first request
// has begun (begin). net/http bounds the wait for a connection's first
// request by ReadHeaderTimeout, from its TLS handshake, where it bounds the
// wait for each later one by IdleTimeout, and only then the headers by
// ReadHeaderTimeout. A client's pool dials connections ahead of the requests
// it sends (the API server's does under a burst of reviews), keeps the ones
// it did not need, and sends a request on one later: closed by then, the
// request is a broken pipe, not an answer. A connection waiting for its
// first request is idle, and may wait as long as one between requests;
// the connection bounds (fair) bound both alike.
func (p *place) SetReadDeadline(t time.Time) error {
	if !p.begun.Load() {
		if t.IsZero() {
			p.asked.Store(0)
		} else {
			p.asked.Store(t.UnixNano())
			if first := p.accepted.Add(p.firstWait); t.Before(first) {
				t = first
			}
		}
	}
	return p.Conn.SetReadDeadline(t)
}

// begin says a request has begun on p, its headers read: the deadline the
// server asked for its first one (ReadTimeout, for the whole request)
// holds from now on, counted from no earlier than now.
func (p *place) begin() {
	if p.begun.Swap(true) {
		return
	}
	if asked := p.asked.Load(); asked != 0 {
		t := time.Unix(0, asked)
		if fromNow := time.Now().Add(p.readTimeout); t.Before(fromNow) {
			t = fromNow
		}
		_ = p.Conn.SetReadDeadline(t)
	}
}

// SetDeadline sets both deadlines, the read one as SetReadDeadline does.
func (p *place) SetDeadline(t time.Time) error {
	if err := p.SetWriteDeadline(t); err != nil {
		return err
	}
	return p.SetReadDeadline(t)
}

// Close gives the place back, once.
func (p *place) Close() error {
	err := p.Conn.Close()
	p.release()
	return err
}

func (l *fair) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		address := c.RemoteAddr().String()
		if h, _, err := net.SplitHostPort(address); err == nil {
			address = h
		}
		ip, _ := netip.ParseAddr(address)
		ip = ip.Unmap()
		l.mu.Lock()
		if l.maxPer > 0 && l.perAddress[address] >= l.maxPer && !l.controlPlane.Has(ip) {
			l.mu.Unlock()
			_ = c.Close()
			continue
		}
		var victim *place
		if l.maxTotal > 0 && len(l.places) >= l.maxTotal {
			if victim = l.victimFor(); victim == nil {
				l.mu.Unlock()
				_ = c.Close()
				continue
			}
			l.remove(victim)
		}
		now := time.Now()
		p := &place{Conn: c, address: address, ip: ip, since: now, accepted: now, firstWait: l.firstWait, readTimeout: l.readTimeout}
		p.release = sync.OnceFunc(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.remove(p)
		})
		l.places[p] = struct{}{}
		l.perAddress[address]++
		l.mu.Unlock()
		if victim != nil {
			_ = victim.Conn.Close() // its place is already given
		}
		return p, nil
	}
}

// At the total, a new connection takes a place held (victimFor): one with
// no request being answered on it that is idle between requests or still
// sending after slowAfter, the one longest without use (a request is being
// answered until the server has written its answer out: net/http sends what
// a handler leaves in its buffer after the handler returns); failing those, one
// whose request is queued for a turn (Waiting), of the address holding the
// most queued, the longest without use. A place was last of use when a
// request on it was answered 2xx or queued. A tenant's pods holding places
// idle, sending slowly or refreshing them with requests answered 404 never
// make them of use, and those are taken before the API server's, whose
// reviews arrive whole and are answered as they come. Nothing in a request
// tells a tenant's pod from the API server, though: pods that keep their
// places of use with requests answered 200, or churn their own queued
// reviews, would still make some of its places the ones taken. So the
// places of the control plane (ControlPlane: the addresses its reviews are
// proven to come from, the networks named, or a client certificate of its
// CA) are never taken; until its address is proven, only admitting the
// control plane to the port prevents that (install.md#control-plane). New
// connections still sending their first request are not held: taken only
// when none is, the oldest first. A request that has arrived whole and has
// its turn is never cut; with every other place answering or the control
// plane's, the newcomer is closed.
const slowAfter = time.Second

// What a place is to a new connection at the total, as above.
type holding int

const (
	kept   holding = iota // being answered: never taken
	fresh                 // taken last, the oldest first
	idle                  // idle or slow: taken first
	queued                // its request waits for a turn
)

func (p *place) held(now time.Time) holding {
	switch {
	case p.answering > 0:
		return kept
	case p.waiting > 0:
		return queued
	case p.handling > 0:
		return idleAfter(now.Sub(p.began), fresh)
	case p.unwritten > 0:
		// An answer the client does not read is no longer being answered
		// after slowAfter.
		return idleAfter(now.Sub(p.returned), kept)
	case p.served:
		return idle
	default:
		return idleAfter(now.Sub(p.since), fresh)
	}
}

// idleAfter is idle from slowAfter on, before it until.
func idleAfter(d time.Duration, until holding) holding {
	if d >= slowAfter {
		return idle
	}
	return until
}

// victimFor is the place a new connection takes at the total, or none.
func (l *fair) victimFor() *place {
	now := time.Now()
	var oldestIdle, mostQueued, oldestFresh *place
	queuedBy := map[string]int{}
	for p := range l.places {
		if p.held(now) == queued {
			queuedBy[p.address]++
		}
	}
	for p := range l.places {
		if p.proven || l.controlPlane.Has(p.ip) {
			continue
		}
		switch p.held(now) {
		case idle:
			if oldestIdle == nil || p.since.Before(oldestIdle.since) {
				oldestIdle = p
			}
		case queued:
			if mostQueued == nil {
				mostQueued = p
				break
			}
			hp, hq := queuedBy[p.address], queuedBy[mostQueued.address]
			if hp > hq || (hp == hq && p.since.Before(mostQueued.since)) {
				mostQueued = p
			}
		case fresh:
			if oldestFresh == nil || p.since.Before(oldestFresh.since) {
				oldestFresh = p
			}
		}
	}
	switch {
	case oldestIdle != nil:
		return oldestIdle
	case mostQueued != nil:
		return mostQueued
	}
	return oldestFresh
}

// remove forgets p, once.
func (l *fair) remove(p *place) {
	if _, ok := l.places[p]; !ok {
		return
	}
	delete(l.places, p)
	if l.perAddress[p.address]--; l.perAddress[p.address] == 0 {
		delete(l.perAddress, p.address)
	}
}

type placeKey struct{}

// placeOf is the place of the connection the server was given, under its
// TLS when it has one.
func placeOf(c net.Conn) (*place, bool) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	p, ok := c.(*place)
	return p, ok
}

// connContext keeps c's place in its requests' contexts.
func (l *fair) connContext(ctx context.Context, c net.Conn) context.Context {
	if p, ok := placeOf(c); ok {
		return context.WithValue(ctx, placeKey{}, p)
	}
	return ctx
}

// connState says when the server has written out c's answers: its
// connection is idle, waiting for the next request.
func (l *fair) connState(c net.Conn, state http.ConnState) {
	if state != http.StateIdle {
		return
	}
	if p, ok := placeOf(c); ok {
		l.mu.Lock()
		p.unwritten = 0
		l.mu.Unlock()
	}
}

// answering counts each request on its place as answered from when its
// body has arrived whole (a body sent slowly holds no place) until the
// server has written its answer out (connState), but while it waits
// (Waiting).
func (l *fair) answering(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := r.Context().Value(placeKey{}).(*place)
		if !ok {
			h.ServeHTTP(w, r)
			return
		}
		var arrived, waiting, done bool // under l.mu
		arrive := func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if !arrived && !done {
				arrived = true
				p.answering++
			}
		}
		wait := func(w bool) {
			l.mu.Lock()
			defer l.mu.Unlock()
			if !arrived || done || waiting == w {
				return
			}
			waiting = w
			if w {
				p.answering--
				p.waiting++
				p.since = time.Now() // queued: of use
			} else {
				p.answering++
				p.waiting--
			}
		}
		// On a copy: the server reads its own request's body type to
		// drain or close it after the answer (net/http's *body).
		sw := &statusWriter{ResponseWriter: w}
		prove := func(token string) (netip.Addr, bool, bool) {
			if l.controlPlane == nil {
				return p.ip, false, false
			}
			ok, own := l.controlPlane.spend(token)
			if !ok {
				return p.ip, false, false
			}
			l.mu.Lock()
			p.proven = true
			l.mu.Unlock()
			sw.closeConnection = !own
			return p.ip, l.controlPlane.learn(p.ip), true
		}
		r = r.WithContext(context.WithValue(context.WithValue(r.Context(), waitKey{}, wait), proveKey{}, prove))
		l.mu.Lock()
		p.handling++
		p.began = time.Now()
		p.begin()
		p.proven = p.proven || (r.TLS != nil && len(r.TLS.VerifiedChains) > 0)
		l.mu.Unlock()
		if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
			arrive()
		} else {
			r.Body = &arriving{ReadCloser: r.Body, left: r.ContentLength, arrived: arrive}
		}
		defer func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			switch {
			case waiting:
				p.waiting--
			case arrived:
				p.answering--
			}
			done = true // a read after h returns counts nothing
			p.handling--
			p.unwritten++
			p.returned = time.Now()
			p.served = true
			if sw.status < 300 {
				p.since = time.Now() // answered: of use
			}
		}()
		h.ServeHTTP(sw, r)
		if sw.status == 0 {
			sw.closing() // the server writes the header now
		}
	})
}

// statusWriter keeps the status of the answer written through it, and
// closes the connection after it when closeConnection is set before.
type statusWriter struct {
	http.ResponseWriter
	status          int
	closeConnection bool
}

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
		w.closing()
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
		w.closing()
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) closing() {
	if w.closeConnection {
		w.Header().Set("Connection", "close")
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

type waitKey struct{}

// Waiting says that the request of ctx, which has arrived whole, waits for
// its turn (the webhooks' lanes) rather than being answered, until the
// returned function says its turn has come: meanwhile its connection's
// place may be given to a newcomer, so that requests queued behind others
// hold no place their client cannot be made to give back.
func Waiting(ctx context.Context) (turn func()) {
	wait, ok := ctx.Value(waitKey{}).(func(bool))
	if !ok {
		return func() {}
	}
	wait(true)
	return func() { wait(false) }
}

// arriving is a request body that says when it has arrived whole: at its
// length, when known, or at its end.
type arriving struct {
	io.ReadCloser
	left    int64 // -1: not known
	arrived func()
}

func (b *arriving) Read(buf []byte) (int, error) {
	n, err := b.ReadCloser.Read(buf)
	if b.left > 0 {
		b.left -= int64(n)
	}
	if err != nil || b.left == 0 {
		b.arrived()
	}
	return n, err
}
