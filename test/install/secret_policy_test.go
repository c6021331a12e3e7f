package install

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The policy that narrows the manager's Secret writes, as installed.
const webhookSecretWriter = "persona-operator-webhook-secret-writer"

// checkSecretWrites checks, as the manager's ServiceAccount (sa), that the
// install lets it write its certificate Secret and no other: RBAC lets it
// create any Secret of its namespace (a create carries no name), and the
// policy webhook-secret-writer refuses all but that one, of type Opaque.
// That it may create its own again is TestManagerRBACIsWhatItUses's
// deleted Secret.
func checkSecretWrites(ctx context.Context, t *testing.T, admin, sa client.Client) {
	t.Helper()
	secret := func(name string, typ corev1.SecretType, annotations map[string]string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Annotations: annotations}, Type: typ,
			Data: map[string][]byte{"k": []byte("v")}}
	}
	forged := []struct {
		what   string
		secret *corev1.Secret
	}{
		{"a Helm release Secret", secret("sh.helm.release.v1.persona-operator.v9", "helm.sh/release.v1", nil)},
		{"a token Secret of its ServiceAccount", &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "stolen-token",
				Annotations: map[string]string{corev1.ServiceAccountNameKey: deploymentName}},
			Type: corev1.SecretTypeServiceAccountToken}},
		{"another Opaque Secret", secret("other", corev1.SecretTypeOpaque, nil)},
	}
	// The API server loads a new policy within a moment.
	waitFor(ctx, t, 10*time.Second, "the policy refuses the manager "+forged[0].what, func() (bool, string) {
		err := sa.Create(ctx, forged[0].secret.DeepCopy())
		return refusedBySecretPolicy(err), errString(err)
	})
	for _, f := range forged {
		if err := sa.Create(ctx, f.secret.DeepCopy()); !refusedBySecretPolicy(err) {
			t.Errorf("the manager may create %s: %v", f.what, err)
			_ = admin.Delete(ctx, f.secret)
		}
	}
	// Its own Secret, with another type, is refused too; kept Opaque, its
	// updates go through.
	own := secret(webhookSecret, "example.com/forged", nil)
	if err := admin.Delete(ctx, own); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	if err := sa.Create(ctx, own.DeepCopy()); !refusedBySecretPolicy(err) {
		t.Errorf("the manager may create its Secret with a type other than Opaque: %v", err)
		_ = admin.Delete(ctx, own)
	}
	mine := secret(webhookSecret, corev1.SecretTypeOpaque, nil)
	if err := admin.Create(ctx, mine); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	var current corev1.Secret
	if err := admin.Get(ctx, client.ObjectKeyFromObject(mine), &current); err != nil {
		t.Fatal(err)
	}
	current.Labels = map[string]string{"checked": "true"}
	if err := sa.Update(ctx, &current); err != nil {
		t.Errorf("the manager may not update its Secret: %v", err)
	}
	// Anyone else's Secret writes are not the policy's to judge.
	other := secret("by-an-administrator", corev1.SecretTypeOpaque, nil)
	if err := admin.Create(ctx, other); err != nil {
		t.Errorf("an administrator's Secret: %v", err)
	}
}

func refusedBySecretPolicy(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+webhookSecretWriter+"'")
}
