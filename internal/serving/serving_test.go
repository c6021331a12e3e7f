package serving

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

const hookPath = "/validate"

// startWebhook serves a webhook that answers 200 after reading its body,
// within l, and returns its address once it takes connections.
func startWebhook(t *testing.T, l Limits) string {
	t.Helper()
	dir := t.TempDir()
	writeSelfSigned(t, dir)
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := probe.Addr().(*net.TCPAddr).Port
	_ = probe.Close()
	srv := NewWebhookServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: dir}, l)
	srv.Register(hookPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusOK)
	}))
	go func() { _ = srv.Start(t.Context()) }()
	for i := 0; ; i++ {
		if err := srv.StartedChecker()(nil); err == nil {
			return fmt.Sprintf("127.0.0.1:%d", port)
		} else if i > 100 {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func dial(t *testing.T, addr string) *tls.Conn {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // a test's own server
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// statusOf is the status line of the answer c reads within d, or the error.
func statusOf(c net.Conn, d time.Duration) string {
	_ = c.SetReadDeadline(time.Now().Add(d))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "error: " + err.Error()
	}
	return strings.TrimSpace(line)
}

func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}

// A client's headers cost the server at most MaxHeaderBytes each: 160
// connections that send a megabyte of headers each (the attack that held
// 166 MiB of controller-runtime's server) are answered 431 and closed, and
// hold a few MiB at most; an ordinary request is answered meanwhile.
func TestHeadersPastTheBoundAreRefused(t *testing.T) {
	addr := startWebhook(t, DefaultLimits)
	const conns = 160
	line := "X-Pad: " + strings.Repeat("a", 4000) + "\r\n"
	before := heapInUse()
	var sent, answered sync.WaitGroup
	var mu sync.Mutex
	refused := 0
	held := make(chan struct{})
	for range conns {
		sent.Add(1)
		answered.Add(1)
		go func() {
			defer answered.Done()
			c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // a test's own server
			if err != nil {
				sent.Done()
				return
			}
			defer c.Close()
			_, _ = c.Write([]byte("POST " + hookPath + " HTTP/1.1\r\nHost: x\r\n"))
			for n := 0; n < 1000<<10; n += len(line) {
				if _, err := c.Write([]byte(line)); err != nil {
					break
				}
			}
			sent.Done()
			<-held // the headers are held while the heap is read
			if strings.Contains(statusOf(c, 5*time.Second), "431") {
				mu.Lock()
				refused++
				mu.Unlock()
			}
		}()
	}
	sent.Wait()
	time.Sleep(time.Second) // the server reads what was sent
	grown := heapInUse() - before
	ordinary := dial(t, addr)
	_, _ = ordinary.Write([]byte("POST " + hookPath + " HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"))
	if got := statusOf(ordinary, 5*time.Second); got != "HTTP/1.1 200 OK" {
		t.Errorf("an ordinary request meanwhile: %q, want 200", got)
	}
	close(held)
	answered.Wait()
	if refused != conns {
		t.Errorf("%d of %d requests with a megabyte of headers answered 431", refused, conns)
	}
	if grown > 16<<20 {
		t.Errorf("%d connections with a megabyte of headers each hold %d MiB of the heap, want at most 16 MiB", conns, grown>>20)
	}
}

// The clients close an idle connection before the servers do: a server
// that closes it first may do so as its client sends a review on it, which
// is then lost rather than answered (a POST is not sent again).
func TestIdleConnectionsAreClosedByTheirClientsFirst(t *testing.T) {
	for name, idle := range map[string]time.Duration{
		"Go's default transport": http.DefaultTransport.(*http.Transport).IdleConnTimeout,
		"client-go's transport":  utilnet.SetTransportDefaults(&http.Transport{}).IdleConnTimeout,
	} {
		if DefaultLimits.IdleTimeout <= idle {
			t.Errorf("the servers' idle timeout is %s, not longer than %s's %s", DefaultLimits.IdleTimeout, name, idle)
		}
	}
}

// A client's pool dials a connection ahead, completes its TLS handshake and
// sends its first request on it later, past ReadHeaderTimeout: the request
// is answered, as on a connection idle between requests. A connection that
// sends no request is closed at IdleTimeout, as an idle one is.
func TestAFirstRequestMayComeAsLateAsOnAnIdleConnection(t *testing.T) {
	l := DefaultLimits
	l.ReadHeaderTimeout, l.IdleTimeout = 300*time.Millisecond, 2*time.Second
	addr := startWebhook(t, l)
	pooled, unused := dial(t, addr), dial(t, addr)
	for _, c := range []*tls.Conn{pooled, unused} {
		if err := c.Handshake(); err != nil {
			t.Fatal(err)
		}
	}

	time.Sleep(3 * l.ReadHeaderTimeout)
	_, _ = pooled.Write([]byte("POST " + hookPath + " HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"))
	if got := statusOf(pooled, 5*time.Second); got != "HTTP/1.1 200 OK" {
		t.Errorf("a first request %v after the handshake: %q, want 200", 3*l.ReadHeaderTimeout, got)
	}

	start := time.Now()
	got := statusOf(unused, 2*l.IdleTimeout)
	if closed := time.Since(start) + 3*l.ReadHeaderTimeout; !strings.Contains(got, "EOF") || closed < l.IdleTimeout-100*time.Millisecond {
		t.Errorf("a connection that sends no request: %q about %v after the handshake, want closed (EOF) at IdleTimeout (%v)", got, closed.Round(100*time.Millisecond), l.IdleTimeout)
	}
}

// A request whose body trickles is cut at ReadTimeout, whatever room the
// handlers have: its connection gives its memory and its place back.
func TestATricklingBodyIsCutAtTheReadTimeout(t *testing.T) {
	l := DefaultLimits
	l.ReadTimeout = time.Second
	addr := startWebhook(t, l)
	c := dial(t, addr)
	_, _ = c.Write([]byte("POST " + hookPath + " HTTP/1.1\r\nHost: x\r\nContent-Length: 64\r\n\r\n{"))
	start := time.Now()
	var err error
	for time.Since(start) < 5*time.Second && err == nil {
		time.Sleep(200 * time.Millisecond)
		_, err = c.Write([]byte(" "))
		if err == nil {
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
			var b [1]byte
			if _, rerr := c.Read(b[:]); rerr != nil && !isTimeout(rerr) {
				err = rerr
			}
		}
	}
	if err == nil {
		t.Fatalf("a body sent a byte at a time was still read after %v (ReadTimeout %v)", time.Since(start).Round(time.Millisecond), l.ReadTimeout)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("the trickling request was cut after %v, want about %v", took.Round(time.Millisecond), l.ReadTimeout)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// acceptAll serves ln: each connection is held open until the test ends,
// and counted.
func acceptAll(t *testing.T, ln net.Listener) <-chan net.Conn {
	t.Helper()
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	t.Cleanup(func() { _ = ln.Close() })
	return accepted
}

func plainDial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// closedByPeer reports whether the server closed c within d.
func closedByPeer(c net.Conn, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	var b [1]byte
	_, err := c.Read(b[:])
	return err == io.EOF
}

// One address holds at most MaxConnectionsPerAddress connections: one more
// is closed at once, and a place given back takes a new one.
func TestConnectionsOfOneAddressAreBounded(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := acceptAll(t, Bound(inner, Limits{MaxConnectionsPerAddress: 2}))
	addr := inner.Addr().String()
	first, _ := plainDial(t, addr), plainDial(t, addr)
	held := []net.Conn{<-accepted, <-accepted}
	third := plainDial(t, addr)
	if !closedByPeer(third, 2*time.Second) {
		t.Fatal("a third connection of one address was kept, want it closed at once")
	}
	_ = held[0].Close()
	_ = first.Close()
	fourth := plainDial(t, addr)
	select {
	case c := <-accepted:
		_ = c.Close()
	case <-time.After(2 * time.Second):
		t.Fatal("a connection after one of the two closed was not accepted")
	}
	_ = fourth.Close()
}

// At most MaxConnections are open at once: a new one, of any address,
// takes the place of the one that has waited longest with no request being
// answered on it (here none is: no server marks one).
func TestConnectionsAreBoundedInTotal(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := acceptAll(t, Bound(inner, Limits{MaxConnections: 2}))
	addr := inner.Addr().String()
	first := plainDial(t, addr)
	<-accepted
	second := plainDial(t, addr)
	<-accepted
	plainDial(t, addr)
	<-accepted
	if !closedByPeer(first, 2*time.Second) {
		t.Fatal("the oldest connection was kept with a third of its address accepted, want it closed")
	}
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	other, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Close() })
	select {
	case <-accepted:
	case <-time.After(2 * time.Second):
		t.Fatal("a connection of another address was not accepted")
	}
	if !closedByPeer(second, 2*time.Second) {
		t.Fatal("the connection waiting longest was kept at the total, want it closed for the new one")
	}
}

func writeSelfSigned(t *testing.T, dir string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "webhook"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
}
