package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	"github.com/persona-operator/persona-operator/internal/serving"
)

// Checks that keep failing (an API server that cannot reach the webhooks,
// a missing rule) are sent again from 2 s later, doubling to the 30 s of
// the checks, never sooner: over 4 hours of a fake clock, at most one each
// 30 s and the first few. (When the doubling had no cap, the wait
// overflowed after 33 failures and the checks went back to back: 2,000 in
// 19 minutes.)
func TestFailingChecksWaitUpToTheirInterval(t *testing.T) {
	dir := t.TempDir()
	cert, key, err := certutil.GenerateSelfSignedCertKey("localhost", []net.IP{{127, 0, 0, 1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/tls.crt", cert, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/tls.key", key, 0o600); err != nil {
		t.Fatal(err)
	}
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := probe.Addr().(*net.TCPAddr).Port
	_ = probe.Close()
	cp := serving.NewControlPlane(nil)
	l := serving.DefaultLimits
	l.ControlPlane = cp
	srv := serving.NewWebhookServer(crwebhook.Options{Host: "127.0.0.1", Port: port, CertDir: dir}, l)
	go func() { _ = srv.Start(t.Context()) }()
	for i := 0; ; i++ { // the serving key, which the tokens need
		if _, err := cp.Token(); err == nil {
			break
		} else if i == 200 {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(v1alpha1.GroupVersion.WithKind(v1alpha1.PersonaKind), meta.RESTScopeNamespace)
	synctest.Test(t, func(t *testing.T) {
		var sent atomic.Int64
		ctx, cancel := context.WithCancel(context.Background())
		refused := roundTripper(func(*http.Request) (*http.Response, error) {
			if sent.Add(1) == 2000 {
				cancel() // checks back to back: enough to tell
			}
			return nil, errors.New("connect: connection refused")
		})
		checks := &ControlPlaneChecks{
			Config: &rest.Config{Host: "https://10.96.0.1:443", Transport: refused, QPS: -1},
			Scheme: scheme, Mapper: mapper, Reader: refusingReader{}, Namespace: "persona-operator-system",
			ControlPlane: cp, Every: 30 * time.Second,
		}
		done := make(chan struct{})
		go func() { _ = checks.Start(ctx); close(done) }()
		const span = 4 * time.Hour
		start := time.Now()
		select {
		case <-done:
		case <-time.After(span):
			cancel()
			<-done
		}
		if time.Since(start) < span {
			t.Fatalf("failing checks sent %d times in %v: back to back", sent.Load(), time.Since(start))
		}
		// 0, 2, 6, 14, 30 s, then each 30 s: span/30s + 5, and a margin.
		if n, most := sent.Load(), int64(span/(30*time.Second))+8; n > most || n < most-10 {
			t.Errorf("failing checks sent %d times in %v, want about one each 30 s (at most %d)", n, span, most)
		}
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// refusingReader refuses every read, as without the EndpointSlice's rule.
type refusingReader struct{}

func (refusingReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return fmt.Errorf("endpointslices.discovery.k8s.io %q is forbidden", apiServersName)
}

func (refusingReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("refused")
}
