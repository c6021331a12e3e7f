package serving

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/net/netutil"
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
	// MaxConnections bounds the connections open at once: past it a new one
	// waits to be accepted. MaxConnectionsPerAddress bounds those of one
	// remote address: past it a new one is closed at once. It leaves room
	// for an API server, whose requests come from one address (or from the
	// one of its network proxy) and which the webhooks' own lanes answer
	// with 429 past their share long before.
	MaxConnections, MaxConnectionsPerAddress int
}

// DefaultLimits are the manager's: at most 1024 connections of about 16 KiB
// of headers, TLS and bufio buffers besides, whatever clients send.
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

// Bound bounds the connections ln accepts as l says. The bound per address
// is taken first, so that a connection closed for it holds no place of the
// total.
func Bound(ln net.Listener, l Limits) net.Listener {
	if l.MaxConnectionsPerAddress > 0 {
		ln = &perAddress{Listener: ln, max: l.MaxConnectionsPerAddress, open: map[string]int{}}
	}
	if l.MaxConnections > 0 {
		ln = netutil.LimitListener(ln, l.MaxConnections)
	}
	return ln
}

// perAddress closes, as it accepts it, a connection from an address that
// already has max open.
type perAddress struct {
	net.Listener
	max  int
	mu   sync.Mutex
	open map[string]int
}

func (l *perAddress) Accept() (net.Conn, error) {
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
		if l.open[host] >= l.max {
			l.mu.Unlock()
			_ = c.Close()
			continue
		}
		l.open[host]++
		l.mu.Unlock()
		return &countedConn{Conn: c, release: sync.OnceFunc(func() { l.closed(host) })}, nil
	}
}

func (l *perAddress) closed(host string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[host]--; l.open[host] <= 0 {
		delete(l.open, host)
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
