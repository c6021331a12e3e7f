package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func caFingerprint(t *testing.T, data map[string][]byte) string {
	t.Helper()
	block, _ := pem.Decode(data[caCertKey])
	if block == nil {
		t.Fatal("no CA")
	}
	return fingerprint(block.Bytes)
}

func servedAnnotationOf(t *testing.T, entries map[string]servedEntry) string {
	t.Helper()
	b, err := json.Marshal(entries)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A replacement Secret keeps the previous CAs while any replica that spoke
// lately still serves a certificate of one of them, however long that is;
// they go once it serves the new CA's, or once its word is too old.
func TestPreviousCAsStayWhileAReplicaServesThem(t *testing.T) {
	cr := testRotator()
	old, next := issued(t, cr), issued(t, cr)
	bundle := append(append([]byte{}, next[caCertKey]...), old[caCertKey]...)
	data := map[string][]byte{caCertKey: bundle, "ca.key": next["ca.key"], "tls.crt": next["tls.crt"], "tls.key": next["tls.key"]}
	created := metav1.NewTime(time.Now().Add(-time.Hour)) // long past keepPrevious
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testSecret.Namespace, Name: testSecret.Name, CreationTimestamp: created,
		Annotations: map[string]string{servedAnnotation: servedAnnotationOf(t, map[string]servedEntry{
			"replica-b": {CA: caFingerprint(t, old), Renewed: time.Now()}, // its watch was cut: it serves the old certificate
		})}}, Data: data}
	r, c := newTestReconciler(t, secret, configurationTrusting(bundle))
	r.replica, r.keepPrevious = "replica-a", 0
	nextCert, err := tls.X509KeyPair(next["tls.crt"], next["tls.key"])
	if err != nil {
		t.Fatal(err)
	}
	r.served.served.Store(&nextCert)
	get := func() *corev1.Secret {
		var got corev1.Secret
		if err := c.Get(context.Background(), testSecret, &got); err != nil {
			t.Fatal(err)
		}
		return &got
	}

	if result := reconcileOnce(t, r); result.RequeueAfter <= 0 {
		t.Errorf("requeue after %s, want a look again", result.RequeueAfter)
	}
	got := get()
	if !bytes.Equal(got.Data[caCertKey], bundle) {
		t.Fatalf("ca.crt holds %d certificates while replica-b serves the old CA's, want both", len(certificatesOf(t, got.Data[caCertKey])))
	}
	entries := servedBy(got)
	if e := entries["replica-a"]; e.CA != caFingerprint(t, next) {
		t.Errorf("replica-a recorded %+v, want the new CA", e)
	}

	// replica-b switches and says so: the old CA goes.
	entries["replica-b"] = servedEntry{CA: caFingerprint(t, next), Renewed: time.Now()}
	got.Annotations[servedAnnotation] = servedAnnotationOf(t, entries)
	if err := c.Update(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	reconcileOnce(t, r)
	if got := get(); !bytes.Equal(got.Data[caCertKey], next[caCertKey]) {
		t.Errorf("ca.crt holds %d certificates once every replica serves the new CA, want it alone", len(certificatesOf(t, got.Data[caCertKey])))
	}
}

// With only its own CA in the bundle, nothing waits on what replicas
// serve: a replica records nothing and looks again at nothing, so a
// settled install writes nothing.
func TestASettledSecretIsNotWritten(t *testing.T) {
	cr := testRotator()
	own := issued(t, cr)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testSecret.Namespace, Name: testSecret.Name,
		CreationTimestamp: metav1.NewTime(time.Now().Add(-time.Hour))}, Data: own}
	r, c := newTestReconciler(t, secret, configurationTrusting(own[caCertKey]))
	r.replica, r.keepPrevious = "replica-a", 0
	cert, err := tls.X509KeyPair(own["tls.crt"], own["tls.key"])
	if err != nil {
		t.Fatal(err)
	}
	r.served.served.Store(&cert)
	var before corev1.Secret
	if err := c.Get(context.Background(), testSecret, &before); err != nil {
		t.Fatal(err)
	}
	if result := reconcileOnce(t, r); result.RequeueAfter != 0 {
		t.Errorf("requeue after %s, want none", result.RequeueAfter)
	}
	var after corev1.Secret
	if err := c.Get(context.Background(), testSecret, &after); err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != before.ResourceVersion {
		t.Errorf("the Secret was written (%s → %s): %v", before.ResourceVersion, after.ResourceVersion, after.Annotations)
	}
}

// A replica that has not spoken for servedTTL is taken for gone: its entry
// is pruned and holds nothing back.
func TestAGoneReplicaHoldsNothingBack(t *testing.T) {
	cr := testRotator()
	old, next := issued(t, cr), issued(t, cr)
	bundle := append(append([]byte{}, next[caCertKey]...), old[caCertKey]...)
	data := map[string][]byte{caCertKey: bundle, "ca.key": next["ca.key"], "tls.crt": next["tls.crt"], "tls.key": next["tls.key"]}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testSecret.Namespace, Name: testSecret.Name, CreationTimestamp: metav1.NewTime(time.Now().Add(-time.Hour)),
		Annotations: map[string]string{servedAnnotation: servedAnnotationOf(t, map[string]servedEntry{
			"deleted-pod": {CA: caFingerprint(t, old), Renewed: time.Now().Add(-servedTTL - time.Second)},
		})}}, Data: data}
	r, c := newTestReconciler(t, secret, configurationTrusting(bundle))
	r.replica, r.keepPrevious = "replica-a", 0
	nextCert, _ := tls.X509KeyPair(next["tls.crt"], next["tls.key"])
	r.served.served.Store(&nextCert)
	reconcileOnce(t, r)
	var got corev1.Secret
	if err := c.Get(context.Background(), testSecret, &got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Data[caCertKey], next[caCertKey]) {
		t.Errorf("ca.crt holds %d certificates, want the new CA alone", len(certificatesOf(t, got.Data[caCertKey])))
	}
	if _, ok := servedBy(&got)["deleted-pod"]; ok {
		t.Error("the gone replica's entry was kept")
	}
}

// Deleted again and again before any replica switched: the CA still served
// stays in the bundle, beyond the bound of the others.
func TestAServedCAOutlastsRepeatedDeletes(t *testing.T) {
	cr := testRotator()
	servedCA := issued(t, cr)
	var bundle []byte
	for range maxPreviousCAs + 1 { // the replacements of 4 deletes, newest first
		bundle = append(bundle, issued(t, cr)[caCertKey]...)
	}
	bundle = append(bundle, servedCA[caCertKey]...)
	kept := certificatesOf(t, previousCAs([][]byte{bundle}, map[string]bool{caFingerprint(t, servedCA): true}, time.Now()))
	if len(kept) != maxPreviousCAs+1 || !kept[0].Equal(certificatesOf(t, servedCA[caCertKey])[0]) {
		t.Errorf("%d CAs kept, want the served one first and %d others", len(kept), maxPreviousCAs)
	}
}
