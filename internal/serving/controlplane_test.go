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
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// controlPlaneBound is a small connection bound, so that a tenant's
// connections pass it many times over.
const controlPlaneBound = 16

// renewAll sends one more request on each of held, and returns how many
// were answered: a connection whose place was taken is closed.
func renewAll(t *testing.T, renew func() int, held int, who string) {
	t.Helper()
	if got := renew(); got != held {
		t.Errorf("%d of %s's %d idle connections were answered after the tenant's flood, want all: the others' places were taken", got, who, held)
	}
}

// The API server's kept-alive connections, idle between reviews, are the
// places held longest at the bound: a tenant dialling past it would take
// every one of them. From the control plane's networks, none is taken: the
// tenant's connections take each other's places.
func TestTheControlPlanesNetworksKeepTheirPlaces(t *testing.T) {
	l := DefaultLimits
	l.MaxConnections = controlPlaneBound
	l.ControlPlane = NewControlPlane([]netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")})
	addr := startWebhook(t, l)
	_, renewAPIServer := holdSlots(t, addr, true, []string{"127.0.0.1"}, 4, hookPath)
	time.Sleep(50 * time.Millisecond) // the API server's places are the oldest
	tenant, _ := holdSlots(t, addr, true, attackerAddrs, controlPlaneBound, hookPath)
	if len(tenant) == 0 {
		t.Fatal("the tenant got no connection in")
	}
	renewAll(t, renewAPIServer, 4, "the API server")
}

// The same flood without the control plane known: the API server's idle
// connections are taken, which is what the test above guards against.
func TestWithoutTheControlPlaneKnownItsIdlePlacesAreTaken(t *testing.T) {
	l := DefaultLimits
	l.MaxConnections = controlPlaneBound
	addr := startWebhook(t, l)
	_, renewAPIServer := holdSlots(t, addr, true, []string{"127.0.0.1"}, 4, hookPath)
	time.Sleep(50 * time.Millisecond)
	holdSlots(t, addr, true, attackerAddrs, controlPlaneBound, hookPath)
	if got := renewAPIServer(); got != 0 {
		t.Errorf("%d of the API server's 4 idle connections kept their places unknown, want none: the flood does not reach them", got)
	}
}

// A connection whose request came with a client certificate of the client
// CA is the control plane's, from any address.
func TestAClientCertificateOfTheClientCAKeepsItsPlace(t *testing.T) {
	dir := t.TempDir()
	writeSelfSigned(t, dir)
	caCert, caKey := newCA(t)
	if err := os.WriteFile(filepath.Join(dir, "client-ca.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caCert.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	clientCert := newClientCert(t, caCert, caKey)
	l := DefaultLimits
	l.MaxConnections = controlPlaneBound
	l.ControlPlane = NewControlPlane(nil)
	port := freePort(t)
	// VerifyClientCertIfGiven, so that the tenant's connections without one
	// get in to compete for places (with ClientCAName, none would).
	srv := NewWebhookServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: dir, TLSOpts: []func(*tls.Config){func(c *tls.Config) {
		pool, err := readCertPool(filepath.Join(dir, "client-ca.crt"))
		if err != nil {
			t.Error(err)
		}
		c.ClientCAs, c.ClientAuth = pool, tls.VerifyClientCertIfGiven
	}}}, l)
	srv.Register(hookPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	go func() { _ = srv.Start(t.Context()) }()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	waitStarted(t, srv)

	// The API server, from 127.0.0.6: four kept-alive connections with its
	// certificate, idle after one request each.
	var apiServer []*bufio.ReadWriter
	for range 4 {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.6")}}
		c, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{clientCert}}) //nolint:gosec // a test's own server
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		rw := bufio.NewReadWriter(bufio.NewReader(c), bufio.NewWriter(c))
		if err := getOn(rw); err != nil {
			t.Fatal(err)
		}
		apiServer = append(apiServer, rw)
	}
	time.Sleep(50 * time.Millisecond)
	holdSlots(t, addr, true, attackerAddrs, controlPlaneBound, hookPath)
	for i, rw := range apiServer {
		if err := getOn(rw); err != nil {
			t.Errorf("the API server's connection %d with a client certificate lost its place: %v", i+1, err)
		}
	}
}

// getOn sends a GET of hookPath on rw and reads its answer.
func getOn(rw *bufio.ReadWriter) error {
	if _, err := fmt.Fprintf(rw, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", hookPath); err != nil {
		return err
	}
	if err := rw.Flush(); err != nil {
		return err
	}
	resp, err := http.ReadResponse(rw.Reader, nil)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().(*net.TCPAddr).Port
}

func waitStarted(t *testing.T, srv *WebhookServer) {
	t.Helper()
	for i := 0; ; i++ {
		if err := srv.StartedChecker()(nil); err == nil {
			return
		} else if i > 100 {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func newCA(t *testing.T) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "control plane CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func newClientCert(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// A control plane of the certificate in dir, as WebhookServer.Start makes
// it: its tokens' key is the serving key.
func controlPlaneOf(t *testing.T, dir string) *ControlPlane {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	c := NewControlPlane(nil)
	c.keyFromCertificate(func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &cert, nil })
	return c
}

// A token proves once, when one of the serving key's replicas made it
// within a minute: not an older one, not one of another key, not one
// changed in a byte, not twice.
func TestATokenProvesOnceOnlyMadeByTheServingKeyWithinAMinute(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	writeSelfSigned(t, dir)
	writeSelfSigned(t, other)
	c, replica, stranger := controlPlaneOf(t, dir), controlPlaneOf(t, dir), controlPlaneOf(t, other)
	token := func(c *ControlPlane, made time.Time) string {
		tok, err := c.tokenAt(made)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	fresh, ofReplica := token(c, time.Now()), token(replica, time.Now())
	changed := []byte(token(c, time.Now()))
	changed[5] ^= 1
	for _, tc := range []struct {
		name, token string
		ok, own     bool
	}{
		{"fresh", fresh, true, true},
		{"fresh, again", fresh, false, false},
		{"of the other replica", ofReplica, true, false},
		{"61 s old", token(c, time.Now().Add(-61*time.Second)), false, false},
		{"a minute ahead", token(c, time.Now().Add(time.Minute)), false, false},
		{"of another key", token(stranger, time.Now()), false, false},
		{"changed", string(changed), false, false},
		{"empty", "", false, false},
	} {
		if ok, own := c.spend(tc.token); ok != tc.ok || own != tc.own {
			t.Errorf("a token %s proves %v (its own %v), want %v (%v)", tc.name, ok, own, tc.ok, tc.own)
		}
	}
	if !c.ProvenHere(fresh) || replica.ProvenHere(ofReplica) {
		t.Errorf("proven here: %v, want true; the other replica's token proven at that replica: %v, want false", c.ProvenHere(fresh), replica.ProvenHere(ofReplica))
	}
	if _, err := NewControlPlane(nil).Token(); err == nil {
		t.Error("a control plane without a serving key made a token")
	}
}

// An API server's review carrying a valid token proves its connection and
// its address: at the bound, neither that connection nor a later one from
// the same address is taken by a tenant's flood. A forged token proves
// nothing.
func TestAProvenAddressKeepsItsPlaces(t *testing.T) {
	dir := t.TempDir()
	writeSelfSigned(t, dir)
	c := controlPlaneOf(t, dir)
	l := DefaultLimits
	l.MaxConnections = controlPlaneBound
	l.ControlPlane = c
	addr := startProving(t, dir, l)
	replica := controlPlaneOf(t, dir) // the other replica, of the same key
	dial := func(ip string) *bufio.ReadWriter {
		_, rw := dialFrom(t, ip, addr)
		return rw
	}
	send := func(rw *bufio.ReadWriter, token string) (int, error) {
		resp, err := sendToken(rw, token)
		if err != nil {
			return 0, err
		}
		return resp.StatusCode, nil
	}
	forger := dial("127.0.0.7")
	if status, err := send(forger, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"); err != nil || status != http.StatusForbidden {
		t.Fatalf("a forged token: %d, %v; want it refused", status, err)
	}
	token, err := c.Token()
	if err != nil {
		t.Fatal(err)
	}
	proven := dial("127.0.0.6")
	if status, err := send(proven, token); err != nil || status != http.StatusOK {
		t.Fatalf("the API server's check: %d, %v", status, err)
	}
	later := dial("127.0.0.6")
	if _, err := send(later, ""); err != nil {
		t.Fatal(err)
	}
	// The other replica's check, sent over this replica's connection, is
	// proven here too, and the connection is closed so that the API
	// server's next review may go to that replica.
	theirs, err := replica.Token()
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := dial("127.0.0.8")
	if status, err := send(elsewhere, theirs); err != nil || status != http.StatusOK {
		t.Fatalf("the other replica's check: %d, %v", status, err)
	}
	if _, err := send(elsewhere, ""); err == nil {
		t.Error("the connection of the other replica's check was kept open")
	}
	if replica.ProvenHere(theirs) || !c.Has(netip.MustParseAddr("127.0.0.8")) {
		t.Error("the other replica's check should prove its address here, and not be proven at the other replica")
	}
	if !c.Has(netip.MustParseAddr("127.0.0.6")) || c.Has(netip.MustParseAddr("127.0.0.7")) || c.Learned() != 2 {
		t.Fatalf("learned 127.0.0.6: %v, 127.0.0.7: %v, %d in all; want the proven one only", c.Has(netip.MustParseAddr("127.0.0.6")), c.Has(netip.MustParseAddr("127.0.0.7")), c.Learned())
	}
	time.Sleep(50 * time.Millisecond)
	holdSlots(t, addr, true, attackerAddrs, controlPlaneBound, hookPath)
	for name, rw := range map[string]*bufio.ReadWriter{"proven": proven, "later": later} {
		if _, err := send(rw, ""); err != nil {
			t.Errorf("the API server's %s connection lost its place: %v", name, err)
		}
	}
	if _, err := send(forger, ""); err == nil {
		t.Error("the forger's idle connection kept its place through the flood")
	}
}

// Two replicas, and the API server's kept-alive connection to the Service
// pinned to A: B's check, proven at A, closes that connection, so the API
// server's next review dials the Service again; B, not proven here, sends
// its check again, and the Service, which spreads new connections over
// both replicas, brings one to B, which then knows the API server's
// address and keeps its connections through a flood. (When a check proven
// elsewhere passed, B never learned, and the flood took them.)
func TestEachReplicaHasTheAPIServerProvenAtLast(t *testing.T) {
	dir := t.TempDir()
	writeSelfSigned(t, dir) // the Secret both replicas mount
	start := func() (*ControlPlane, string) {
		l := DefaultLimits
		l.MaxConnections = controlPlaneBound
		l.ControlPlane = NewControlPlane(nil)
		return l.ControlPlane, startProving(t, dir, l)
	}
	a, addrA := start()
	b, addrB := start()
	// The API server, from 127.0.0.6: one kept-alive connection, which it
	// dials again through the Service (A, then B, in turn) once closed.
	service := []string{addrA, addrB}
	dials := 0
	var conn *tls.Conn
	var rw *bufio.ReadWriter
	review := func(token string) error {
		if conn == nil {
			conn, rw = dialFrom(t, "127.0.0.6", service[dials%2])
			dials++
		}
		resp, err := sendToken(rw, token)
		if err != nil {
			return err
		}
		if resp.Close {
			_ = conn.Close()
			conn = nil
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
	// Each replica checks until its own check is proven where it runs, as
	// ControlPlaneChecks does; A first, which pins the connection to A.
	for _, replica := range []*ControlPlane{a, b} {
		for try := 0; ; try++ {
			if try == 4 {
				t.Fatalf("a replica's check was not proven there after 4 tries")
			}
			token, err := replica.Token()
			if err != nil {
				t.Fatal(err)
			}
			if err := review(token); err != nil {
				t.Fatal(err)
			}
			if replica.ProvenHere(token) {
				break
			}
		}
	}
	if a.Learned() != 1 || b.Learned() != 1 {
		t.Fatalf("learned: replica A %d, replica B %d; want the API server's address at both", a.Learned(), b.Learned())
	}
	// The API server's connections to B idle between reviews; a tenant
	// floods B past its bound.
	_, renewAPIServer := holdSlots(t, addrB, true, []string{"127.0.0.6"}, 4, hookPath)
	time.Sleep(50 * time.Millisecond)
	holdSlots(t, addrB, true, attackerAddrs, controlPlaneBound, hookPath)
	renewAll(t, renewAPIServer, 4, "the API server (at replica B)")
}

// startProving serves, within l, a webhook whose requests prove the token
// of their X-Token header (answered 403 when it proves nothing), with the
// certificate in dir, and returns its address.
func startProving(t *testing.T, dir string, l Limits) string {
	t.Helper()
	port := freePort(t)
	srv := NewWebhookServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: dir}, l)
	srv.Register(hookPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if token := r.Header.Get("X-Token"); token != "" {
			if _, _, ok := Prove(r.Context(), token); !ok {
				w.WriteHeader(http.StatusForbidden)
			}
		}
	}))
	go func() { _ = srv.Start(t.Context()) }()
	waitStarted(t, srv)
	return fmt.Sprintf("127.0.0.1:%d", port)
}

// dialFrom is a TLS connection from ip to addr, closed when the test ends.
func dialFrom(t *testing.T, ip, addr string) (*tls.Conn, *bufio.ReadWriter) {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	conn, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // a test's own server
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn, bufio.NewReadWriter(bufio.NewReader(conn), bufio.NewWriter(conn))
}

// sendToken sends a GET of hookPath with token on rw and reads the answer.
func sendToken(rw *bufio.ReadWriter, token string) (*http.Response, error) {
	if _, err := fmt.Fprintf(rw, "GET %s HTTP/1.1\r\nHost: x\r\nX-Token: %s\r\n\r\n", hookPath, token); err != nil {
		return nil, err
	}
	if err := rw.Flush(); err != nil {
		return nil, err
	}
	resp, err := http.ReadResponse(rw.Reader, nil)
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp, resp.Body.Close()
}

// The per-address bound does not apply to the control plane's address: an
// API server holds one connection per review in flight, and under load
// more than the bound of any other address.
func TestTheControlPlanesAddressIsNotBoundPerAddress(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := acceptAll(t, Bound(inner, Limits{MaxConnectionsPerAddress: 2,
		ControlPlane: NewControlPlane([]netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")})}))
	addr := inner.Addr().String()
	for i := range 4 {
		plainDial(t, addr)
		select {
		case <-accepted:
		case <-time.After(2 * time.Second):
			t.Fatalf("the control plane's connection %d was not accepted past the bound of 2 an address", i+1)
		}
	}
}
