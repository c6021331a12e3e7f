package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"maps"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// The rotator's key for the CA in its Secret (cert-controller does not
// export it): a PEM bundle, whose first certificate the rotator signs with.
const caCertKey = "ca.crt"

const (
	// trustSettle is how long every webhook configuration must have
	// trusted a new certificate, while it still trusts the one served, before
	// a replica serves the new one: the time for every API server to see
	// the configuration it was injected into.
	trustSettle = 5 * time.Second
	// keepPreviousCAs is how long a replacement Secret's CA bundle keeps the
	// CAs the webhook configuration trusted before, at least: longer than
	// servedHeartbeat, so that every running replica has said what it
	// serves. They are dropped (the deleted Secret's key may be why it was
	// deleted) only once every replica serves a certificate of the new CA
	// (certserved.go).
	keepPreviousCAs = time.Minute
	// maxPreviousCAs bounds the CAs no replica is known to serve that the
	// bundle keeps when the Secret is deleted again and again; the CAs
	// replicas serve are kept beside them, at most one a replica.
	maxPreviousCAs = 3
)

// secretCertificate is the certificate the webhook server serves when the
// manager manages it: that of the Secret, read from the API server once
// every webhook configuration trusts it (webhookCertificateReconciler),
// else the Secret's files as the kubelet mounted them. The mount alone
// would lag the Secret by the kubelet's sync (a minute or more), while the
// CA injected into the webhook configuration does not.
type secretCertificate struct {
	mounted *mountedCertificate
	served  atomic.Pointer[tls.Certificate]
}

func (s *secretCertificate) Start(ctx context.Context) error { return s.mounted.Start(ctx) }

// NeedLeaderElection is false: every replica serves the webhook.
func (s *secretCertificate) NeedLeaderElection() bool { return false }

func (s *secretCertificate) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := s.served.Load(); c != nil {
		return c, nil
	}
	return s.mounted.GetCertificate(hello)
}

// current is the certificate served now, if any.
func (s *secretCertificate) current() *tls.Certificate {
	c, err := s.GetCertificate(nil)
	if err != nil {
		return nil
	}
	return c
}

// webhookCertificateReconciler runs on every replica beside the rotator,
// which fills the Secret and injects its CA bundle (ca.crt) into the
// webhook configurations. It
//   - recreates the Secret when it is deleted, which the rotator does not:
//     with a new CA and serving certificate made as the rotator makes them,
//     and a CA bundle that still holds the CAs the webhook configurations
//     trust, so that the replicas still serving the old certificate stay
//     trusted once the rotator injects it; after keepPreviousCAs it drops them;
//   - switches what its replica serves to the Secret's certificate once the
//     webhook configurations trust it.
type webhookCertificateReconciler struct {
	reader   client.Reader
	writer   client.Writer
	key      types.NamespacedName
	rotator  *rotator.CertRotator
	webhooks []webhookConfigurationKey
	served   *secretCertificate
	// replica names this replica in the Secret's servedAnnotation (its pod's
	// name); "" records nothing.
	replica string

	// Touched by the one reconcile worker only.
	metadata             secretMetadata
	pending              []byte
	trustedSince         time.Time
	settle, keepPrevious time.Duration
}

// secretMetadata is what a replacement copies from the Secret it replaces:
// the labels and annotations its installer (kubectl or Helm) set on it.
type secretMetadata struct {
	labels, annotations map[string]string
}

// webhookConfigurationKey names a webhook configuration the rotator injects.
type webhookConfigurationKey struct {
	name   string
	object func() client.Object
}

// webhookConfigurations are the validating and mutating webhook
// configurations of the rotator's list (the kinds a caBundle trusts a
// webhook server by).
func webhookConfigurations(webhooks []rotator.WebhookInfo) ([]webhookConfigurationKey, error) {
	var keys []webhookConfigurationKey
	seen := map[rotator.WebhookType]bool{}
	for _, w := range webhooks {
		var object func() client.Object
		switch w.Type {
		case rotator.Validating:
			object = func() client.Object { return &admissionregistrationv1.ValidatingWebhookConfiguration{} }
		case rotator.Mutating:
			object = func() client.Object { return &admissionregistrationv1.MutatingWebhookConfiguration{} }
		default:
			continue
		}
		if seen[w.Type] {
			return nil, fmt.Errorf("webhook configuration %s: one of each kind is supported", w.Name)
		}
		seen[w.Type] = true
		keys = append(keys, webhookConfigurationKey{name: w.Name, object: object})
	}
	return keys, nil
}

// watchCertificateSecret adds the reconciler, and the cache it reads, to
// the manager. The cache holds the one Secret and the webhook
// configurations by name (a metadata.name field selector, as RBAC's
// resourceNames requires), on every replica. It returns what returns once
// the Secret exists, creating it if missing, for the rotator to wait on.
func watchCertificateSecret(mgr ctrl.Manager, cr *rotator.CertRotator, served *secretCertificate) (func(context.Context) error, error) {
	configurations, err := webhookConfigurations(cr.Webhooks)
	if err != nil {
		return nil, err
	}
	byName := func(name string) fields.Selector { return fields.OneTermEqualSelector("metadata.name", name) }
	byObject := map[client.Object]cache.ByObject{
		&corev1.Secret{}: {Namespaces: map[string]cache.Config{cr.SecretKey.Namespace: {}}, Field: byName(cr.SecretKey.Name)},
	}
	for _, c := range configurations {
		byObject[c.object()] = cache.ByObject{Field: byName(c.name)}
	}
	objects, err := cache.New(mgr.GetConfig(), cache.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), ByObject: byObject})
	if err != nil {
		return nil, fmt.Errorf("the webhook certificate's cache: %w", err)
	}
	if err := mgr.Add(everyReplica{objects}); err != nil {
		return nil, err
	}
	// In a pod, the host name is the pod's name: one per replica.
	replica, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("this replica's name: %w", err)
	}
	r := &webhookCertificateReconciler{
		reader: objects, writer: mgr.GetClient(), key: cr.SecretKey, rotator: cr, webhooks: configurations, served: served,
		replica: replica, settle: trustSettle, keepPrevious: keepPreviousCAs,
	}
	c, err := controller.New("webhook-certificate", mgr, controller.Options{Reconciler: r, NeedLeaderElection: ptr.To(false)})
	if err != nil {
		return nil, err
	}
	toSecret := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: cr.SecretKey}}
	})
	for object := range maps.Keys(byObject) {
		if err := c.Watch(source.Kind(objects, object, toSecret)); err != nil {
			return nil, fmt.Errorf("watch %T: %w", object, err)
		}
	}
	return r.secretExists(objects.WaitForCacheSync), nil
}

// everyReplica runs the cache on every replica, leader or not.
type everyReplica struct{ cache.Cache }

func (everyReplica) NeedLeaderElection() bool { return false }

func (r *webhookCertificateReconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	var secret corev1.Secret
	if err := r.reader.Get(ctx, r.key, &secret); apierrors.IsNotFound(err) {
		return reconcile.Result{}, r.replace(ctx, r.metadata)
	} else if err != nil {
		return reconcile.Result{}, fmt.Errorf("read the Secret %s: %w", r.key, err)
	}
	r.metadata = secretMetadata{labels: secret.Labels, annotations: secret.Annotations}
	bundles, err := r.caBundles(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	serveAfter := r.serve(ctx, &secret, bundles)
	recorded, recordAfter, err := r.recordServed(ctx, &secret, bundles)
	if err != nil || recorded == nil {
		return reconcile.Result{RequeueAfter: recordAfter}, err
	}
	dropAfter, err := r.dropPreviousCAs(ctx, recorded)
	if err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: sooner(sooner(serveAfter, recordAfter), dropAfter)}, nil
}

// replace creates the deleted Secret again, filled, with the metadata of
// the one it replaces. Every replica tries; the first create wins.
func (r *webhookCertificateReconciler) replace(ctx context.Context, metadata secretMetadata) error {
	bundles, err := r.caBundles(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	// As the rotator dates them, so that it finds them valid and keeps them.
	begin := now.Add(-time.Hour)
	ca, err := r.rotator.CreateCACert(begin, now.Add(r.rotator.CaCertDuration))
	if err != nil {
		return fmt.Errorf("make a CA: %w", err)
	}
	cert, key, err := r.rotator.CreateCertPEM(ca, begin, now.Add(r.rotator.ServerCertDuration))
	if err != nil {
		return fmt.Errorf("make a serving certificate: %w", err)
	}
	secret := &corev1.Secret{
		Data: map[string][]byte{
			caCertKey:          append(append([]byte{}, ca.CertPEM...), previousCAs(bundles, liveServedCAs(servedBy(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Annotations: metadata.annotations}}), now), now)...),
			"ca.key":           ca.KeyPEM,
			r.rotator.CertName: cert,
			r.rotator.KeyName:  key,
		},
	}
	secret.Namespace, secret.Name = r.key.Namespace, r.key.Name
	secret.Labels, secret.Annotations = metadata.labels, metadata.annotations
	if err := r.writer.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the deleted Secret %s again: %w", r.key, err)
	} else if err == nil {
		logf.FromContext(ctx).Info("created the deleted webhook certificate Secret again, with a new CA", "secret", r.key)
	}
	return nil
}

// serve switches to the Secret's certificate once every webhook
// configuration trusts it: at once if the one served is no longer trusted
// (or none is), else once they have trusted both for r.settle. It returns
// when to look again, or 0.
func (r *webhookCertificateReconciler) serve(ctx context.Context, secret *corev1.Secret, bundles [][]byte) time.Duration {
	candidate, err := tls.X509KeyPair(secret.Data[r.rotator.CertName], secret.Data[r.rotator.KeyName])
	if err != nil {
		return 0 // not filled yet: the rotator fills it
	}
	current := r.served.current()
	if current != nil && r.served.served.Load() == nil {
		// From now on the Secret decides, not the mount: the kubelet may
		// update the mount before the new CA is injected.
		r.served.served.Store(current)
	}
	if current != nil && bytes.Equal(current.Certificate[0], candidate.Certificate[0]) {
		r.pending = nil
		return 0
	}
	if !trustedByAll(candidate.Certificate[0], bundles) {
		r.pending = nil
		return 0
	}
	if !bytes.Equal(r.pending, candidate.Certificate[0]) {
		r.pending, r.trustedSince = candidate.Certificate[0], time.Now()
	}
	if current != nil && trustedByAll(current.Certificate[0], bundles) {
		if wait := r.settle - time.Since(r.trustedSince); wait > 0 {
			return wait
		}
	}
	r.served.served.Store(&candidate)
	r.pending = nil
	logf.FromContext(ctx).Info("serving the webhook certificate of the Secret", "secret", r.key)
	return 0
}

// dropPreviousCAs leaves only the Secret's own CA in its bundle once a
// replacement has kept the previous ones for r.keepPrevious and every
// replica that spoke within servedTTL serves a certificate of that CA: a
// replica still serving an old one (its watch cut, or still settling) keeps
// its CA trusted. It returns when to look again, or 0.
func (r *webhookCertificateReconciler) dropPreviousCAs(ctx context.Context, secret *corev1.Secret) (time.Duration, error) {
	if !holdsPreviousCAs(secret) {
		return 0, nil
	}
	own, _ := pem.Decode(secret.Data[caCertKey])
	if wait := r.keepPrevious - time.Since(secret.CreationTimestamp.Time); wait > 0 {
		return wait, nil
	}
	served := liveServedCAs(servedBy(secret), time.Now())
	if own := fingerprint(own.Bytes); len(served) > 1 || (len(served) == 1 && !served[own]) {
		return servedHeartbeat, nil // a replica serves another CA's certificate: look again once they speak
	}
	secret = secret.DeepCopy()
	secret.Data[caCertKey] = pem.EncodeToMemory(own)
	if err := r.writer.Update(ctx, secret); apierrors.IsConflict(err) {
		return 0, nil // another replica dropped them, or the rotator wrote: its event brings the Secret back here
	} else if err != nil {
		return 0, fmt.Errorf("drop the previous CAs from the Secret %s: %w", r.key, err)
	}
	logf.FromContext(ctx).Info("dropped the previous CAs from the webhook certificate's bundle", "secret", r.key)
	return 0, nil
}

// caBundles are the CA bundles of every webhook of the configurations. A
// configuration that does not exist constrains nothing.
func (r *webhookCertificateReconciler) caBundles(ctx context.Context) ([][]byte, error) {
	var bundles [][]byte
	for _, w := range r.webhooks {
		object := w.object()
		if err := r.reader.Get(ctx, client.ObjectKey{Name: w.name}, object); apierrors.IsNotFound(err) {
			continue
		} else if err != nil {
			return nil, fmt.Errorf("read the webhook configuration %s: %w", w.name, err)
		}
		switch o := object.(type) {
		case *admissionregistrationv1.ValidatingWebhookConfiguration:
			for _, h := range o.Webhooks {
				bundles = append(bundles, h.ClientConfig.CABundle)
			}
		case *admissionregistrationv1.MutatingWebhookConfiguration:
			for _, h := range o.Webhooks {
				bundles = append(bundles, h.ClientConfig.CABundle)
			}
		}
	}
	return bundles, nil
}

// trustedByAll says whether every bundle verifies the certificate (DER).
func trustedByAll(der []byte, bundles [][]byte) bool {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return false
	}
	for _, bundle := range bundles {
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(bundle) {
			return false
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
			return false
		}
	}
	return true
}

// previousCAs are the unexpired CA certificates of the bundles, each once,
// as PEM: first every one a replica serves (served holds their
// fingerprints), then at most maxPreviousCAs others.
func previousCAs(bundles [][]byte, served map[string]bool, now time.Time) []byte {
	var out []byte
	var seen [][]byte
	for _, wantServed := range []bool{true, false} {
		others := 0
		for _, bundle := range bundles {
			for block, rest := pem.Decode(bundle); block != nil; block, rest = pem.Decode(rest) {
				if served[fingerprint(block.Bytes)] != wantServed || (!wantServed && others >= maxPreviousCAs) {
					continue
				}
				cert, err := x509.ParseCertificate(block.Bytes)
				if err != nil || !cert.IsCA || now.After(cert.NotAfter) || slices.ContainsFunc(seen, func(b []byte) bool { return bytes.Equal(b, block.Bytes) }) {
					continue
				}
				seen = append(seen, block.Bytes)
				if !wantServed {
					others++
				}
				out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: block.Bytes})...)
			}
		}
	}
	return out
}

// sooner is the smaller of two waits, where 0 is none.
func sooner(a, b time.Duration) time.Duration {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}
