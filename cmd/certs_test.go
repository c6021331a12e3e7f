package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

func defaultFlags(t *testing.T) *managerFlags {
	t.Helper()
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	f, _ := registerFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestWebhookReadyWaitsForTheCertificate(t *testing.T) {
	certReady := make(chan struct{})
	servingErr := errors.New("not serving")
	var serving error
	ready := webhookReady(certReady, func(*http.Request) error { return serving })

	if err := ready(nil); err == nil {
		t.Error("ready before the certificate is in place")
	}
	close(certReady)
	if err := ready(nil); err != nil {
		t.Errorf("not ready with the certificate in place and the server serving: %v", err)
	}
	serving = servingErr
	if err := ready(nil); !errors.Is(err, servingErr) {
		t.Errorf("ready = %v, want the webhook server's %v", err, servingErr)
	}
}

func TestGivenCertificateIsManagedByNobody(t *testing.T) {
	f := defaultFlags(t)
	f.webhookCertPath = t.TempDir()
	// A nil manager: nothing may be added to it.
	ready, err := manageWebhookCertificate(nil, f, nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-ready:
	default:
		t.Error("a given certificate is not in place at once")
	}
}

func TestManagedCertificateNeedsTheNamespace(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "")
	if _, err := manageWebhookCertificate(nil, defaultFlags(t), nil); err == nil {
		t.Error("no error without POD_NAMESPACE")
	}
}

func TestSelectByNameNarrowsListsAndWatchesOfTheNamedCollections(t *testing.T) {
	var query string
	server := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { query = r.URL.RawQuery }))
	defer server.Close()
	cfg := selectByName(&rest.Config{Host: server.URL}, map[string]string{"/api/v1/namespaces/ns/secrets": "cert"})
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"/api/v1/namespaces/ns/secrets?watch=true": "fieldSelector=metadata.name%3Dcert&watch=true",
		"/api/v1/namespaces/ns/secrets":            "fieldSelector=metadata.name%3Dcert",
		"/api/v1/namespaces/ns/secrets/other":      "",
		"/api/v1/namespaces/ns/configmaps":         "",
	} {
		resp, err := client.Get(server.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if query != want {
			t.Errorf("GET %s: query %q, want %q", path, query, want)
		}
	}
}

func TestMountedCertificateServesTheFilesOnceTheyAppear(t *testing.T) {
	dir := t.TempDir()
	m := &mountedCertificate{cert: filepath.Join(dir, "tls.crt"), key: filepath.Join(dir, "tls.key")}
	if m.NeedLeaderElection() {
		t.Error("only the leader would serve the webhook")
	}
	if _, err := m.GetCertificate(nil); err == nil {
		t.Error("a certificate before the files exist")
	}
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- m.Start(ctx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("stop: %v", err)
		}
	}()
	writeCertificate(t, m.cert, m.key)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if c, err := m.GetCertificate(nil); err == nil && c != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the certificate files were not served within 10s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func writeCertificate(t *testing.T, certPath, keyPath string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
