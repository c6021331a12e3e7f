package main

import (
	"context"
	"testing"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// addRecorder is a manager that only records what is added to it.
type addRecorder struct {
	ctrl.Manager
	added []manager.Runnable
}

func (a *addRecorder) Add(r manager.Runnable) error { a.added = append(a.added, r); return nil }

// The rotator, which stops the manager when its Secret is missing, starts
// only once the gate says the Secret exists.
func TestRotatorStartsOnceItsSecretExists(t *testing.T) {
	rec := &addRecorder{}
	gate := &rotatorGate{}
	if err := (namedObjectsManager{Manager: rec, gate: gate}).Add(&rotator.CertRotator{}); err != nil {
		t.Fatal(err)
	}
	if len(rec.added) != 1 {
		t.Fatalf("%d runnables added, want 1", len(rec.added))
	}
	var calls []string
	gate.before = func(context.Context) error { calls = append(calls, "the Secret exists"); return nil }
	// This rotator was not set up by AddRotator: its Start fails at once, on its reader.
	if err := rec.added[0].Start(t.Context()); err == nil || len(calls) != 1 {
		t.Fatalf("Start: %v after %v, want the rotator's own error after the gate", err, calls)
	}

	// Stopped while the Secret is still missing: the rotator never starts.
	ctx, cancel := context.WithCancel(t.Context())
	gate.before = func(ctx context.Context) error { cancel(); <-ctx.Done(); return ctx.Err() }
	if err := rec.added[0].Start(ctx); err != nil {
		t.Errorf("Start stopped before the Secret existed: %v, want nil", err)
	}
}

// A manager that starts while its Secret is missing creates it, filled as
// the rotator keeps it, and the gate opens.
func TestMissingSecretIsCreatedBeforeTheRotatorStarts(t *testing.T) {
	old := issued(t, testRotator())
	r, c := newTestReconciler(t, configurationTrusting(old[caCertKey]))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := r.secretExists(func(context.Context) bool { return true })(ctx); err != nil {
		t.Fatalf("the gate did not open: %v", err)
	}
	var secret corev1.Secret
	if err := c.Get(ctx, testSecret, &secret); err != nil {
		t.Fatalf("the missing Secret was not created: %v", err)
	}
	cr := r.rotator
	if ok, err := rotator.ValidCert(secret.Data[caCertKey], secret.Data["tls.crt"], secret.Data["tls.key"], cr.DNSName, cr.ExtKeyUsages, time.Now()); !ok {
		t.Errorf("the rotator would find the serving certificate invalid: %v", err)
	}
	if cas := certificatesOf(t, secret.Data[caCertKey]); len(cas) != 2 || !cas[1].Equal(certificatesOf(t, old[caCertKey])[0]) {
		t.Errorf("ca.crt holds %d certificates, want the new CA and the one the configuration trusts", len(cas))
	}

	// Present already: the gate opens without a write.
	rv := secret.ResourceVersion
	if err := r.secretExists(func(context.Context) bool { return true })(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, testSecret, &secret); err != nil || secret.ResourceVersion != rv {
		t.Errorf("the present Secret was written again: %v", err)
	}
}
