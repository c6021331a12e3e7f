package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// managedCertDir is where the Deployment mounts the certificate Secret the
// manager manages (--webhook-secret-mount-path): controller-runtime's
// default webhook certificate directory.
const managedCertDir = "/tmp/k8s-webhook-server/serving-certs"

// certificateSource gives the webhook server its certificate; the manager runs it.
type certificateSource interface {
	manager.Runnable
	GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error)
}

// webhookCertificate is the webhook server's certificate, reloaded when its
// files change: the files --webhook-cert-path names, which must exist at
// start, or else the Secret the manager manages (certsecret.go).
func webhookCertificate(f *managerFlags) (certificateSource, error) {
	if f.webhookCertPath == "" {
		return &secretCertificate{mounted: &mountedCertificate{cert: filepath.Join(f.webhookSecretMountPath, f.webhookCertName), key: filepath.Join(f.webhookSecretMountPath, f.webhookCertKey)}}, nil
	}
	w, err := certwatcher.New(filepath.Join(f.webhookCertPath, f.webhookCertName), filepath.Join(f.webhookCertPath, f.webhookCertKey))
	if err != nil {
		return nil, fmt.Errorf("load the webhook certificate: %w", err)
	}
	return w, nil
}

// mountedCertificate serves certificate files once they appear: the kubelet
// projects the Secret into the pod a while after the manager first fills it.
// Until then TLS handshakes fail, so the webhook server can start at once.
type mountedCertificate struct {
	cert, key string
	watcher   atomic.Pointer[certwatcher.CertWatcher]
}

func (m *mountedCertificate) Start(ctx context.Context) error {
	var w *certwatcher.CertWatcher
	if err := wait.PollUntilContextCancel(ctx, time.Second, true, func(context.Context) (bool, error) {
		var err error
		w, err = certwatcher.New(m.cert, m.key)
		return err == nil, nil
	}); err != nil {
		return nil // stopped before the files appeared
	}
	m.watcher.Store(w)
	return w.Start(ctx)
}

func (m *mountedCertificate) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	if w := m.watcher.Load(); w != nil {
		return w.GetCertificate(hello)
	}
	return nil, errors.New("the webhook certificate is not mounted yet")
}

// NeedLeaderElection is false: every replica serves the webhook.
func (m *mountedCertificate) NeedLeaderElection() bool { return false }

// manageWebhookCertificate has the manager make its webhook certificate (a
// CA and a serving certificate in the Secret --webhook-secret-name), inject
// the CA into the webhook configuration and rotate both before they expire,
// unless --webhook-cert-path gives a certificate. The channel closes once the
// certificate is in place: at once when given (it was loaded at start), else
// when mounted and its CA injected. served, the certificate the webhook
// server serves, follows the Secret (certsecret.go).
func manageWebhookCertificate(mgr ctrl.Manager, f *managerFlags, served certificateSource) (<-chan struct{}, error) {
	ready := make(chan struct{})
	if f.webhookCertPath != "" {
		close(ready)
		return ready, nil
	}
	namespace := os.Getenv("POD_NAMESPACE")
	if namespace == "" {
		return nil, errors.New("POD_NAMESPACE is not set: the manager keeps its webhook certificate in a Secret of its namespace (or give one with --webhook-cert-path)")
	}
	names := map[string]string{
		"/api/v1/namespaces/" + namespace + "/secrets":                          f.webhookSecretName,
		"/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations": f.webhookConfigName,
		"/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations":   f.injectWebhookConfigName,
	}
	cr := &rotator.CertRotator{
		SecretKey:      types.NamespacedName{Namespace: namespace, Name: f.webhookSecretName},
		CertDir:        f.webhookSecretMountPath,
		CertName:       f.webhookCertName,
		KeyName:        f.webhookCertKey,
		CAName:         "persona-operator-webhook-ca",
		CAOrganization: "persona-operator",
		DNSName:        f.webhookServiceName + "." + namespace + ".svc",
		Webhooks: []rotator.WebhookInfo{
			{Name: f.webhookConfigName, Type: rotator.Validating},
			{Name: f.injectWebhookConfigName, Type: rotator.Mutating},
		},
		IsReady: ready,
		// Every replica serves the webhook, so each one, leader or not, runs
		// the rotator and waits for the certificate to be mounted in its pod.
		RequireLeaderElection: false,
		EnableReadinessCheck:  true,
	}
	gate := &rotatorGate{}
	if err := rotator.AddRotator(namedObjectsManager{mgr, selectByName(mgr.GetConfig(), names), gate}, cr); err != nil {
		return nil, fmt.Errorf("add the certificate rotator: %w", err)
	}
	if s, ok := served.(*secretCertificate); ok {
		before, err := watchCertificateSecret(mgr, cr, s)
		if err != nil {
			return nil, fmt.Errorf("watch the webhook certificate Secret: %w", err)
		}
		gate.before = before
	}
	return ready, nil
}

// namedObjectsManager is the manager as cert-controller sees it: its cache
// lists and watches through config, which selects the named objects only,
// and its rotator starts once gate opens (certstart.go).
type namedObjectsManager struct {
	ctrl.Manager
	config *rest.Config
	gate   *rotatorGate
}

func (m namedObjectsManager) GetConfig() *rest.Config { return m.config }

// selectByName adds a metadata.name field selector to the lists and watches
// of the collections named (by URL path), so that cert-controller's cache,
// whose options have no selectors, holds only its own Secret and webhook
// configuration, and RBAC can name them (resourceNames applies to a list or
// watch only with that selector).
func selectByName(cfg *rest.Config, nameByCollection map[string]string) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			for collection, name := range nameByCollection {
				// A GET of a collection is a list or a watch.
				if req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, collection) {
					req = req.Clone(req.Context())
					query := req.URL.Query()
					query.Set("fieldSelector", "metadata.name="+name)
					req.URL.RawQuery = query.Encode()
					break
				}
			}
			return next.RoundTrip(req)
		})
	})
	return cfg
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// webhookReady passes once the webhook certificate is in place and the
// webhook server answers TLS, so that a replica without its certificate
// gets no admission traffic.
func webhookReady(certReady <-chan struct{}, serving healthz.Checker) healthz.Checker {
	return func(req *http.Request) error {
		select {
		case <-certReady:
			return serving(req)
		default:
			return errors.New("the webhook certificate is not in place yet")
		}
	}
}
