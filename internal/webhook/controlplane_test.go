package webhook_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/api/v1alpha1"
	personawebhook "github.com/persona-operator/persona-operator/internal/webhook"
	"github.com/persona-operator/persona-operator/test/suite"
)

var _ = Describe("The control plane's checks", func() {
	It("have the API server prove the address it calls the webhooks from, through the real API server, and refuse a tenant's forged check", func() {
		// The manager checks as soon as its webhooks serve, then every 30 s: its
		// dry-run reaches the webhook through the API server, which calls
		// it from 127.0.0.1 here.
		Eventually(suite.Logs.String, 45*time.Second, 500*time.Millisecond).Should(
			MatchRegexp(`an API server's check proved the address it calls the webhooks from.*"address":\s*"127\.0\.0\.1"`))
		// A tenant who copies the check with a token of its own making is
		// refused: no proof, and nothing stored.
		ns := suite.NewNamespace()
		forged := &v1alpha1.Persona{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "control-plane-check",
			Annotations: map[string]string{personawebhook.ControlPlaneCheckAnnotation: "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}}}
		Expect(suite.K8s.Create(suite.Ctx, forged, client.DryRunAll)).To(MatchError(ContainSubstring("a control plane check that proves nothing")))
		Expect(suite.Logs.String()).NotTo(ContainSubstring(ns))
	})
})
