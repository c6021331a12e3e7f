package serving

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// WebhookServer is controller-runtime's webhook server, its handlers
// registered and instrumented as there, served within Limits.
type WebhookServer struct {
	webhook.Server
	options webhook.Options
	limits  Limits

	mu      sync.Mutex
	started bool
}

// NewWebhookServer serves the webhooks as webhook.NewServer(o) would,
// within l.
func NewWebhookServer(o webhook.Options, l Limits) *WebhookServer {
	if o.WebhookMux == nil {
		o.WebhookMux = http.NewServeMux()
	}
	if o.Port == 0 {
		o.Port = webhook.DefaultPort
	}
	if o.CertDir == "" {
		o.CertDir = filepath.Join(os.TempDir(), "k8s-webhook-server", "serving-certs")
	}
	if o.CertName == "" {
		o.CertName = "tls.crt"
	}
	if o.KeyName == "" {
		o.KeyName = "tls.key"
	}
	return &WebhookServer{Server: webhook.NewServer(o), options: o, limits: l}
}

func (s *WebhookServer) address() string {
	return net.JoinHostPort(s.options.Host, strconv.Itoa(s.options.Port))
}

// Start serves the webhooks until ctx is done.
func (s *WebhookServer) Start(ctx context.Context) error {
	if s.options.Port < 0 {
		return nil
	}
	cfg := &tls.Config{NextProtos: []string{"h2"}}
	for _, op := range s.options.TLSOpts {
		op(cfg)
	}
	if cfg.GetCertificate == nil {
		watcher, err := certwatcher.New(filepath.Join(s.options.CertDir, s.options.CertName), filepath.Join(s.options.CertDir, s.options.KeyName))
		if err != nil {
			return fmt.Errorf("read the webhook's serving certificate: %w", err)
		}
		cfg.GetCertificate = watcher.GetCertificate
		go func() {
			if err := watcher.Start(ctx); err != nil {
				log.FromContext(ctx).Error(err, "watch the webhook's serving certificate")
			}
		}()
	}
	if s.options.ClientCAName != "" {
		requireClientCert, err := RequireClientCertificate(filepath.Join(s.options.CertDir, s.options.ClientCAName))
		if err != nil {
			return fmt.Errorf("read the webhook's client CA: %w", err)
		}
		requireClientCert(cfg)
	}
	if s.limits.ControlPlane != nil {
		s.limits.ControlPlane.keyFromCertificate(cfg.GetCertificate)
	}
	ln, err := Listen(ctx, s.address(), cfg, s.limits)
	if err != nil {
		return fmt.Errorf("listen for the webhooks: %w", err)
	}
	s.mu.Lock()
	s.started = true
	s.mu.Unlock()
	shutdown := time.Minute
	return (&manager.Server{Name: "webhook", Server: NewHTTPServer(ctx, ln, s.options.WebhookMux, s.limits), Listener: ln, ShutdownTimeout: &shutdown}).Start(ctx)
}

// readCertPool reads the PEM file of CA certificates at path.
func readCertPool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}

// RequireClientCertificate is a TLS option that takes no connection without
// a client certificate of the CAs in the PEM file at caPath: the control
// plane's (ControlPlane), whose places are never taken.
func RequireClientCertificate(caPath string) (func(*tls.Config), error) {
	pool, err := readCertPool(caPath)
	if err != nil {
		return nil, err
	}
	return func(c *tls.Config) { c.ClientCAs, c.ClientAuth = pool, tls.RequireAndVerifyClientCert }, nil
}

// StartedChecker passes once the server is started and takes a TLS
// connection.
func (s *WebhookServer) StartedChecker() healthz.Checker {
	return func(*http.Request) error {
		s.mu.Lock()
		started := s.started
		s.mu.Unlock()
		if s.options.Port < 0 {
			return nil
		}
		if !started {
			return errors.New("the webhook server has not started yet")
		}
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", s.address(), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only whether it answers TLS
		if err != nil {
			return fmt.Errorf("the webhook server is not reachable: %w", err)
		}
		// The handshake answered: whether the server or this end closes
		// first says nothing more.
		_ = conn.Close()
		return nil
	}
}
