package e2e

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The webhook's certificate Secret and Service as dist/install.yaml names them.
const (
	webhookSecret  = "persona-operator-webhook-server-cert"
	webhookService = "persona-operator-webhook-service"
)

// certificateRotationUnderLoad deletes the webhook certificate Secret while
// Personas are written: no write may fail, the manager must create the
// Secret again with a new CA, inject it, and serve a certificate it signed
// from every replica and through the Service; then the old CA leaves the
// injected bundle. It reports how long each took from the delete.
func (s *suite) certificateRotationUnderLoad(t *testing.T) {
	key := client.ObjectKey{Namespace: installNamespace, Name: webhookSecret}
	var old corev1.Secret
	if err := s.c.Get(s.ctx, key, &old); err != nil {
		t.Fatal(err)
	}
	oldCA := firstCertificate(old.Data["ca.crt"])
	if oldCA == nil {
		t.Fatalf("the Secret %s holds no CA", webhookSecret)
	}
	var svc corev1.Service
	if err := s.c.Get(s.ctx, client.ObjectKey{Namespace: installNamespace, Name: webhookService}, &svc); err != nil {
		t.Fatal(err)
	}
	serverName := webhookService + "." + installNamespace + ".svc"

	var toSecret, toInjected, toServed, toOldCADropped time.Duration
	var served []string
	s.underLoad(t, "the delete of the webhook certificate Secret", "rotation", func() error {
		deleted := time.Now()
		if err := s.c.Delete(s.ctx, &old); err != nil {
			return fmt.Errorf("delete the Secret %s: %w", webhookSecret, err)
		}
		var newCA *x509.Certificate
		return waitForEvery(50*time.Millisecond, keepPreviousCAs+servedTTL+time.Minute, "a new CA in the Secret, injected, served, and the old one dropped", func() (bool, error) {
			if newCA == nil {
				var secret corev1.Secret
				if err := s.c.Get(s.ctx, key, &secret); err != nil {
					return false, err
				}
				if ca := firstCertificate(secret.Data["ca.crt"]); secret.UID != old.UID && ca != nil && !ca.Equal(oldCA) {
					newCA, toSecret = ca, time.Since(deleted)
				} else {
					return false, fmt.Errorf("no new CA in the Secret")
				}
			}
			var vwc admissionregistrationv1.ValidatingWebhookConfiguration
			if err := s.c.Get(s.ctx, client.ObjectKey{Name: webhookConfig}, &vwc); err != nil {
				return false, err
			}
			bundle := certificates(vwc.Webhooks[0].ClientConfig.CABundle)
			if toInjected == 0 && len(bundle) > 0 && bundle[0].Equal(newCA) {
				toInjected = time.Since(deleted)
			}
			if toServed == 0 {
				addresses, err := s.webhookAddresses(&svc)
				if err != nil {
					return false, err
				}
				for _, address := range addresses {
					if err := servesCertificateOf(address, serverName, newCA); err != nil {
						return false, fmt.Errorf("injected after %s; %s: %w", toInjected, address, err)
					}
				}
				toServed, served = time.Since(deleted), addresses
			}
			if toOldCADropped == 0 && len(bundle) == 1 && bundle[0].Equal(newCA) {
				toOldCADropped = time.Since(deleted)
			}
			return toInjected > 0 && toOldCADropped > 0, fmt.Errorf("injected after %s, served after %s; the injected bundle holds %d CAs", toInjected, toServed, len(bundle))
		})
	})
	if t.Failed() {
		return
	}
	t.Logf("the webhook certificate Secret deleted: created again with a new CA after %s, the CA injected after %s, a certificate it signed served by %s after %s, the old CA dropped from the injected bundle after %s",
		toSecret.Round(time.Millisecond), toInjected.Round(time.Millisecond), strings.Join(served, ", "), toServed.Round(time.Millisecond), toOldCADropped.Round(time.Millisecond))
}

// keepPreviousCAs is how long the manager keeps the deleted Secret's CA in
// the bundle it injects at least, and servedTTL how long after its last word
// a replica that was restarted (RolloutRestartUnderLoad) may still hold it
// there (cmd/certsecret.go, cmd/certserved.go).
const (
	keepPreviousCAs = time.Minute
	servedTTL       = 2 * time.Minute
)

// webhookAddresses are the webhook Service's address and every running
// manager pod's webhook port.
func (s *suite) webhookAddresses(svc *corev1.Service) ([]string, error) {
	var pods corev1.PodList
	if err := s.c.List(s.ctx, &pods, client.InNamespace(installNamespace), client.MatchingLabels{"control-plane": "controller-manager"}); err != nil {
		return nil, err
	}
	addresses := []string{net.JoinHostPort(svc.Spec.ClusterIP, "443")}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.PodIP != "" {
			addresses = append(addresses, net.JoinHostPort(p.Status.PodIP, "9443"))
		}
	}
	if len(addresses) < 3 {
		return nil, fmt.Errorf("%d manager pods with an address, want 2", len(addresses)-1)
	}
	return addresses, nil
}

// servesCertificateOf dials address and checks that the certificate it
// serves for serverName is signed by ca.
func servesCertificateOf(address, serverName string, ca *x509.Certificate) error {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", address, &tls.Config{ServerName: serverName, InsecureSkipVerify: true}) //nolint:gosec // verified below, against the one CA
	if err != nil {
		return err
	}
	defer conn.Close()
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	_, err = conn.ConnectionState().PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, DNSName: serverName})
	return err
}

func certificates(bundle []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for block, rest := pem.Decode(bundle); block != nil; block, rest = pem.Decode(rest) {
		if c, err := x509.ParseCertificate(block.Bytes); err == nil {
			out = append(out, c)
		}
	}
	return out
}

func firstCertificate(bundle []byte) *x509.Certificate {
	if c := certificates(bytes.TrimSpace(bundle)); len(c) > 0 {
		return c[0]
	}
	return nil
}

// certificateHealsWithNoReplicaRunning deletes the webhook certificate
// Secret while the manager has no replica: scaled back to 2, the pods start
// without it (the volume is optional), the manager creates it again, both
// replicas become Ready and the webhook answers admission requests.
func (s *suite) certificateHealsWithNoReplicaRunning(t *testing.T) {
	deployment := "deployment/" + managerDeployment
	if out, err := s.kubectl("-n", installNamespace, "scale", deployment, "--replicas=0"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if err := waitFor(2*time.Minute, "no manager pod left", func() (bool, error) {
		var pods corev1.PodList
		if err := s.c.List(s.ctx, &pods, client.InNamespace(installNamespace), client.MatchingLabels{"control-plane": "controller-manager"}); err != nil {
			return false, err
		}
		return len(pods.Items) == 0, fmt.Errorf("%d manager pods", len(pods.Items))
	}); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKey{Namespace: installNamespace, Name: webhookSecret}
	var old corev1.Secret
	if err := s.c.Get(s.ctx, key, &old); err != nil {
		t.Fatal(err)
	}
	if err := s.c.Delete(s.ctx, &old); err != nil {
		t.Fatal(err)
	}
	scaled := time.Now()
	if out, err := s.kubectl("-n", installNamespace, "scale", deployment, "--replicas=2"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if err := s.waitManagerReplicas(); err != nil {
		t.Fatal(err)
	}
	toReady := time.Since(scaled)
	var secret corev1.Secret
	if err := s.c.Get(s.ctx, key, &secret); err != nil {
		t.Fatalf("the Secret was not created again: %v", err)
	}
	if secret.UID == old.UID || firstCertificate(secret.Data["ca.crt"]) == nil {
		t.Fatalf("the Secret holds no new CA")
	}
	if err := s.releaseServes(); err != nil {
		t.Fatal(err)
	}
	t.Logf("the Secret deleted with no replica running: both replicas Ready %s after scaling back to 2, and the webhook answers", toReady.Round(time.Second))
}
