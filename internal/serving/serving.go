package serving

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"time"
)

// Limits bound what clients may hold of a server.
type Limits struct {
	// MaxHeaderBytes bounds a request's header block. The API server sends
	// a handful of short headers with a review.
	MaxHeaderBytes int
	// ReadHeaderTimeout bounds the TLS handshake and the headers;
	// ReadTimeout the whole request, its body included: past the longest
	// webhook timeout the API server allows (30 s), no one waits for the
	// answer. WriteTimeout bounds the answer, IdleTimeout a kept-alive
	// connection between requests.
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// MaxConnections bounds the connections open at once: past it, the
	// address that holds the most gives up its oldest to a new connection
	// of an address that holds fewer, so that a few addresses holding every
	// place keep no one else out (a kubelet's probe, the API server). The
	// share is by address: many addresses that each hold theirs still crowd
	// out the API server, which is one; only a NetworkPolicy that admits the
	// control plane alone prevents that. MaxConnectionsPerAddress bounds
	// those of one remote address: past it a new one is closed at once. It
	// is high: an API server's reviews come from one address (or its
	// network proxy's), and the webhooks' lanes answer it 429 long before.
	MaxConnections, MaxConnectionsPerAddress int
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
	IdleTimeout:       90 * time.Second,
	MaxConnections:    1024,
	// An API server under load holds one connection per review in flight.
	MaxConnectionsPerAddress: 256,
}

// NewHTTPServer is a server of handler within l, whose requests' contexts
// derive from ctx.
func NewHTTPServer(ctx context.Context, handler http.Handler, l Limits) *http.Server {
	return &http.Server{
		BaseContext:       func(net.Listener) context.Context { return ctx },
		Handler:           handler,
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

// Listen listens on the TCP address within l's bounds on connections, with
// TLS when tlsConfig is set.
func Listen(ctx context.Context, address string, tlsConfig *tls.Config, l Limits) (net.Listener, error) {
	inner, err := (&net.ListenConfig{}).Listen(ctx, "tcp", address)
	if err != nil {
		return nil, err
	}
	ln := Bound(inner, l)
	if tlsConfig != nil {
		ln = tls.NewListener(ln, tlsConfig)
	}
	return ln, nil
}

// Bound bounds the connections ln accepts as l says. At the total bound a
// new connection does not wait: the address that holds the most
// connections, when it holds more than the new one's, gives up its oldest,
// so that no set of addresses can keep another (an API server, a kubelet's
// probe) out by holding every place; otherwise the new one is closed.
func Bound(ln net.Listener, l Limits) net.Listener {
	if l.MaxConnectionsPerAddress <= 0 && l.MaxConnections <= 0 {
		return ln
	}
	return &fair{Listener: ln, maxPer: l.MaxConnectionsPerAddress, maxTotal: l.MaxConnections, open: map[string][]*countedConn{}}
}

// fair bounds connections per address and in total, evicting from the
// largest holder at the total.
type fair struct {
	net.Listener
	maxPer, maxTotal int
	mu               sync.Mutex
	open             map[string][]*countedConn // oldest first
	total            int
}

func (l *fair) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		host := c.RemoteAddr().String()
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		l.mu.Lock()
		if l.maxPer > 0 && len(l.open[host]) >= l.maxPer {
			l.mu.Unlock()
			_ = c.Close()
			continue
		}
		var victim *countedConn
		if l.maxTotal > 0 && l.total >= l.maxTotal {
			most := ""
			for h, cs := range l.open {
				if most == "" || len(cs) > len(l.open[most]) {
					most = h
				}
			}
			if most == "" || len(l.open[most]) <= len(l.open[host])+1 {
				l.mu.Unlock()
				_ = c.Close()
				continue
			}
			victim = l.open[most][0]
			l.remove(most, victim)
		}
		cc := &countedConn{Conn: c}
		cc.release = sync.OnceFunc(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.remove(host, cc)
		})
		l.open[host] = append(l.open[host], cc)
		l.total++
		l.mu.Unlock()
		if victim != nil {
			_ = victim.Conn.Close() // its place is already given
		}
		return cc, nil
	}
}

// remove forgets c of host, once.
func (l *fair) remove(host string, c *countedConn) {
	cs := l.open[host]
	for i, o := range cs {
		if o == c {
			l.open[host] = append(cs[:i:i], cs[i+1:]...)
			l.total--
			if len(l.open[host]) == 0 {
				delete(l.open, host)
			}
			return
		}
	}
}

// countedConn gives its place back once, when it is closed.
type countedConn struct {
	net.Conn
	release func()
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}
