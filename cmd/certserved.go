package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// servedAnnotation on the certificate Secret records, per replica, the CA
// that signed the certificate it serves, and when it last said so. A
// replacement Secret drops its previous CAs only once every replica that
// spoke within servedTTL serves a certificate of the Secret's own CA, and
// keeps first the CAs still served. It lives on the Secret, which every
// replica already watches and updates: no right beyond those it holds.
const servedAnnotation = "webhook.persona-operator.dev/served-cas"

const (
	// servedHeartbeat is how often a replica says again what it serves.
	servedHeartbeat = 30 * time.Second
	// servedTTL is how long a replica's word counts: past it, the replica
	// is taken for gone (a deleted pod leaves its entry behind) and its
	// entry is pruned, which bounds the annotation.
	servedTTL = 2 * time.Minute
)

// servedEntry is what one replica serves: the SHA-256 of the DER of the
// CA that signed its certificate ("" when none of the known CAs did).
type servedEntry struct {
	CA      string    `json:"ca"`
	Renewed time.Time `json:"renewed"`
}

// servedBy reads the annotation; a malformed one counts as empty.
func servedBy(secret *corev1.Secret) map[string]servedEntry {
	out := map[string]servedEntry{}
	if v, ok := secret.Annotations[servedAnnotation]; ok {
		_ = json.Unmarshal([]byte(v), &out)
	}
	return out
}

// liveServedCAs are the CA fingerprints that replicas which spoke within
// servedTTL serve.
func liveServedCAs(entries map[string]servedEntry, now time.Time) map[string]bool {
	out := map[string]bool{}
	for _, e := range entries {
		if now.Sub(e.Renewed) < servedTTL {
			out[e.CA] = true
		}
	}
	return out
}

func fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

// issuerOf is the fingerprint of the CA among the bundles that signed the
// certificate, or "".
func issuerOf(cert *tls.Certificate, bundles ...[]byte) string {
	if cert == nil || len(cert.Certificate) == 0 {
		return ""
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return ""
	}
	for _, bundle := range bundles {
		for block, rest := pem.Decode(bundle); block != nil; block, rest = pem.Decode(rest) {
			ca, err := x509.ParseCertificate(block.Bytes)
			if err == nil && ca.IsCA && leaf.CheckSignatureFrom(ca) == nil {
				return fingerprint(block.Bytes)
			}
		}
	}
	return ""
}

// recordServed writes this replica's entry when it changed or is due, and
// prunes the entries past servedTTL, while the Secret's bundle holds
// previous CAs. It returns the Secret as written (or
// as it was), and when to look again.
func (r *webhookCertificateReconciler) recordServed(ctx context.Context, secret *corev1.Secret, bundles [][]byte) (*corev1.Secret, time.Duration, error) {
	if r.replica == "" || !holdsPreviousCAs(secret) {
		// Only a drop of previous CAs reads the record: with none to drop,
		// a replica writes nothing, so a settled install makes no writes.
		return secret, 0, nil
	}
	now := time.Now()
	ca := issuerOf(r.served.current(), append([][]byte{secret.Data[caCertKey]}, bundles...)...)
	entries := servedBy(secret)
	if e, ok := entries[r.replica]; ok && e.CA == ca && now.Sub(e.Renewed) < servedHeartbeat {
		return secret, servedHeartbeat - now.Sub(e.Renewed), nil
	}
	maps.DeleteFunc(entries, func(_ string, e servedEntry) bool { return now.Sub(e.Renewed) >= servedTTL })
	entries[r.replica] = servedEntry{CA: ca, Renewed: now.UTC().Truncate(time.Second)}
	value, err := json.Marshal(entries)
	if err != nil {
		return secret, 0, err
	}
	secret = secret.DeepCopy()
	if secret.Annotations == nil {
		secret.Annotations = map[string]string{}
	}
	secret.Annotations[servedAnnotation] = string(value)
	if err := r.writer.Update(ctx, secret); apierrors.IsConflict(err) {
		return nil, time.Second, nil // its event brings the Secret back here
	} else if err != nil {
		return nil, 0, fmt.Errorf("record what this replica serves on the Secret %s: %w", r.key, err)
	}
	return secret, servedHeartbeat, nil
}

// holdsPreviousCAs reports whether the Secret's bundle holds CAs besides
// its own, the first: a replacement's, until they are dropped.
func holdsPreviousCAs(secret *corev1.Secret) bool {
	own, rest := pem.Decode(secret.Data[caCertKey])
	return own != nil && len(bytes.TrimSpace(rest)) > 0
}
