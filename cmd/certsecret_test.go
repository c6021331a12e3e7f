package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"testing"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

const testConfiguration = "persona-operator-validating-webhook-configuration"

var testSecret = types.NamespacedName{Namespace: "operator", Name: "webhook-server-cert"}

// testRotator is configured as manageWebhookCertificate configures it, with
// the defaults rotator.AddRotator fills in.
func testRotator() *rotator.CertRotator {
	return &rotator.CertRotator{
		SecretKey: testSecret, CAName: "persona-operator-webhook-ca", CAOrganization: "persona-operator",
		DNSName: "webhook-service.operator.svc", CertName: "tls.crt", KeyName: "tls.key",
		CaCertDuration: 24 * time.Hour, ServerCertDuration: 12 * time.Hour,
		ExtKeyUsages: &[]x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		Webhooks:     []rotator.WebhookInfo{{Name: testConfiguration, Type: rotator.Validating}},
	}
}

// issued is a CA and a serving certificate it signed, as Secret data.
func issued(t *testing.T, cr *rotator.CertRotator) map[string][]byte {
	t.Helper()
	now := time.Now()
	ca, err := cr.CreateCACert(now.Add(-time.Hour), now.Add(cr.CaCertDuration))
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := cr.CreateCertPEM(ca, now.Add(-time.Hour), now.Add(cr.ServerCertDuration))
	if err != nil {
		t.Fatal(err)
	}
	return map[string][]byte{caCertKey: ca.CertPEM, "ca.key": ca.KeyPEM, "tls.crt": cert, "tls.key": key}
}

func configurationTrusting(bundle []byte) *admissionregistrationv1.ValidatingWebhookConfiguration {
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: testConfiguration},
		Webhooks:   []admissionregistrationv1.ValidatingWebhook{{Name: "vpersona.prompts.persona-operator.dev", ClientConfig: admissionregistrationv1.WebhookClientConfig{CABundle: bundle}}},
	}
}

func newTestReconciler(t *testing.T, objects ...client.Object) (*webhookCertificateReconciler, client.Client) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objects...).Build()
	cr := testRotator()
	configurations, err := webhookConfigurations(cr.Webhooks)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	served := &secretCertificate{mounted: &mountedCertificate{cert: dir + "/tls.crt", key: dir + "/tls.key"}}
	return &webhookCertificateReconciler{
		reader: c, writer: c, key: testSecret, rotator: cr, webhooks: configurations, served: served,
		settle: time.Hour, keepPrevious: time.Hour,
	}, c
}

func reconcileOnce(t *testing.T, r *webhookCertificateReconciler) reconcile.Result {
	t.Helper()
	result, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	return result
}

func certificatesOf(t *testing.T, bundle []byte) []*x509.Certificate {
	t.Helper()
	var certs []*x509.Certificate
	for block, rest := pem.Decode(bundle); block != nil; block, rest = pem.Decode(rest) {
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		certs = append(certs, c)
	}
	return certs
}

func TestDeletedSecretIsReplacedWithANewCAStillTrustingTheOld(t *testing.T) {
	old := issued(t, testRotator())
	r, c := newTestReconciler(t, configurationTrusting(old[caCertKey]))
	r.metadata = secretMetadata{labels: map[string]string{"app.kubernetes.io/managed-by": "Helm"}, annotations: map[string]string{"meta.helm.sh/release-name": "persona-operator"}}

	reconcileOnce(t, r)

	var secret corev1.Secret
	if err := c.Get(context.Background(), testSecret, &secret); err != nil {
		t.Fatalf("the deleted Secret was not created again: %v", err)
	}
	cas := certificatesOf(t, secret.Data[caCertKey])
	oldCA := certificatesOf(t, old[caCertKey])[0]
	if len(cas) != 2 || cas[0].Equal(oldCA) || !cas[1].Equal(oldCA) {
		t.Fatalf("ca.crt holds %d certificates, want a new CA followed by the one the configuration trusts", len(cas))
	}
	// The rotator keeps what it finds valid, and injects ca.crt as it is.
	cr := r.rotator
	if ok, err := rotator.ValidCert(secret.Data[caCertKey], secret.Data[caCertKey], secret.Data["ca.key"], cr.CAName, nil, time.Now()); !ok {
		t.Errorf("the rotator would find the new CA invalid and replace it: %v", err)
	}
	if ok, err := rotator.ValidCert(secret.Data[caCertKey], secret.Data["tls.crt"], secret.Data["tls.key"], cr.DNSName, cr.ExtKeyUsages, time.Now()); !ok {
		t.Errorf("the rotator would find the serving certificate invalid and replace it: %v", err)
	}
	if secret.Labels["app.kubernetes.io/managed-by"] != "Helm" || secret.Annotations["meta.helm.sh/release-name"] != "persona-operator" {
		t.Errorf("the replacement lost its installer's labels or annotations: %v %v", secret.Labels, secret.Annotations)
	}
}

func TestServesTheSecretsCertificateOnlyOnceTrusted(t *testing.T) {
	cr := testRotator()
	old, next := issued(t, cr), issued(t, cr)
	oldCert, err := tls.X509KeyPair(old["tls.crt"], old["tls.key"])
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testSecret.Namespace, Name: testSecret.Name}, Data: next}
	configuration := configurationTrusting(old[caCertKey])
	r, c := newTestReconciler(t, secret, configuration)
	r.served.served.Store(&oldCert)
	serving := func() []byte { return r.served.current().Certificate[0] }
	nextLeaf, _ := pem.Decode(next["tls.crt"])

	// The configuration trusts the old CA only: the new certificate would be refused.
	if result := reconcileOnce(t, r); result.RequeueAfter != 0 || !bytes.Equal(serving(), oldCert.Certificate[0]) {
		t.Fatalf("switched before the configuration trusts the new CA (requeue %s)", result.RequeueAfter)
	}

	// It trusts both: the switch waits for every API server to see that.
	configuration.Webhooks[0].ClientConfig.CABundle = append(append([]byte{}, next[caCertKey]...), old[caCertKey]...)
	if err := c.Update(context.Background(), configuration); err != nil {
		t.Fatal(err)
	}
	result := reconcileOnce(t, r)
	if !bytes.Equal(serving(), oldCert.Certificate[0]) || result.RequeueAfter <= 0 || result.RequeueAfter > r.settle {
		t.Fatalf("with both CAs trusted: requeue after %s, want the switch within %s and not yet", result.RequeueAfter, r.settle)
	}
	r.trustedSince = time.Now().Add(-r.settle)
	reconcileOnce(t, r)
	if !bytes.Equal(serving(), nextLeaf.Bytes) {
		t.Fatal("not serving the new certificate once both CAs were trusted for the settle time")
	}

	// The configuration trusts the new CA only: a replica still on the old
	// certificate switches at once.
	r.served.served.Store(&oldCert)
	configuration.Webhooks[0].ClientConfig.CABundle = next[caCertKey]
	if err := c.Update(context.Background(), configuration); err != nil {
		t.Fatal(err)
	}
	reconcileOnce(t, r)
	if !bytes.Equal(serving(), nextLeaf.Bytes) {
		t.Fatal("kept serving a certificate the configuration no longer trusts")
	}
}

func TestReplacementDropsThePreviousCAsAfterAWhile(t *testing.T) {
	cr := testRotator()
	old, next := issued(t, cr), issued(t, cr)
	bundle := append(append([]byte{}, next[caCertKey]...), old[caCertKey]...)
	data := map[string][]byte{caCertKey: bundle, "ca.key": next["ca.key"], "tls.crt": next["tls.crt"], "tls.key": next["tls.key"]}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testSecret.Namespace, Name: testSecret.Name, CreationTimestamp: metav1.Now()}, Data: data}
	r, c := newTestReconciler(t, secret, configurationTrusting(bundle))

	if result := reconcileOnce(t, r); result.RequeueAfter <= 0 || result.RequeueAfter > r.keepPrevious {
		t.Fatalf("requeue after %s, want a look again within %s", result.RequeueAfter, r.keepPrevious)
	}
	r.keepPrevious = 0
	reconcileOnce(t, r)
	var got corev1.Secret
	if err := c.Get(context.Background(), testSecret, &got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Data[caCertKey], next[caCertKey]) {
		t.Errorf("ca.crt holds %d certificates, want the Secret's own CA only", len(certificatesOf(t, got.Data[caCertKey])))
	}
}

func TestPreviousCAsAreBounded(t *testing.T) {
	cr := testRotator()
	var bundle []byte
	for range maxPreviousCAs + 2 {
		bundle = append(bundle, issued(t, cr)[caCertKey]...)
	}
	bundle = append(bundle, bundle...) // each once
	if n := len(certificatesOf(t, previousCAs([][]byte{bundle}, nil, time.Now()))); n != maxPreviousCAs {
		t.Errorf("%d previous CAs kept, want %d", n, maxPreviousCAs)
	}
	if n := len(certificatesOf(t, previousCAs([][]byte{bundle}, nil, time.Now().Add(cr.CaCertDuration+time.Hour)))); n != 0 {
		t.Errorf("%d expired CAs kept", n)
	}
}

func TestAMountUpdatedBeforeTheCAIsInjectedIsNotServed(t *testing.T) {
	cr := testRotator()
	old, next := issued(t, cr), issued(t, cr)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testSecret.Namespace, Name: testSecret.Name}, Data: next}
	r, _ := newTestReconciler(t, secret, configurationTrusting(old[caCertKey]))
	mount := func(data map[string][]byte) {
		for _, f := range []struct{ path, key string }{{r.served.mounted.cert, "tls.crt"}, {r.served.mounted.key, "tls.key"}} {
			if err := os.WriteFile(f.path, data[f.key], 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	leaf := func(data map[string][]byte) []byte { b, _ := pem.Decode(data["tls.crt"]); return b.Bytes }
	waitMounted := func(data map[string][]byte) {
		deadline := time.Now().Add(10 * time.Second)
		for {
			if c, err := r.served.mounted.GetCertificate(nil); err == nil && bytes.Equal(c.Certificate[0], leaf(data)) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("the mounted files were not loaded within 10s")
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	mount(old)
	go func() { _ = r.served.Start(ctx) }()
	waitMounted(old)

	reconcileOnce(t, r)
	// The kubelet projects the new Secret; the configuration still trusts the old CA only.
	mount(next)
	waitMounted(next)
	if c, _ := r.served.GetCertificate(nil); !bytes.Equal(c.Certificate[0], leaf(old)) {
		t.Error("serves the newly mounted certificate, which the webhook configuration does not trust yet")
	}
}
