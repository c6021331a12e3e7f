package serving

import (
	"bufio"
	"context"
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

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
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
		pool, err := ReadCertPool(filepath.Join(dir, "client-ca.crt"))
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

// APIServers reads the addresses of the kubernetes EndpointSlice in
// default, and of no other, and follows their changes.
func TestAPIServersAreTheKubernetesEndpointSlicesAddresses(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	slice := func(ns string, addrs ...string) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kubernetes"}, AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints: []discoveryv1.Endpoint{{Addresses: addrs}}}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(slice("default", "10.0.0.10", "10.0.0.11"), slice("tenant", "10.244.1.7")).Build()
	cp := NewControlPlane(nil)
	a := &APIServers{Reader: c, ControlPlane: cp, Every: time.Hour}
	ctx := context.Background()
	if err := a.read(ctx); err != nil {
		t.Fatal(err)
	}
	for ip, want := range map[string]bool{"10.0.0.10": true, "10.0.0.11": true, "10.244.1.7": false, "10.0.0.12": false} {
		if got := cp.Has(netip.MustParseAddr(ip)); got != want {
			t.Errorf("Has(%s) = %v, want %v", ip, got, want)
		}
	}
	moved := slice("default", "10.0.0.12")
	var current discoveryv1.EndpointSlice
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "kubernetes"}, &current); err != nil {
		t.Fatal(err)
	}
	moved.ResourceVersion = current.ResourceVersion
	if err := c.Update(ctx, moved); err != nil {
		t.Fatal(err)
	}
	if err := a.read(ctx); err != nil {
		t.Fatal(err)
	}
	if cp.Has(netip.MustParseAddr("10.0.0.10")) || !cp.Has(netip.MustParseAddr("10.0.0.12")) {
		t.Error("the API servers' addresses did not follow the EndpointSlice")
	}
	if (*ControlPlane)(nil).Has(netip.MustParseAddr("10.0.0.12")) {
		t.Error("no control plane has an address")
	}
}
