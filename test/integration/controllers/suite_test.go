package controllers

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/persona-operator/persona-operator/test/controlplane"
	"github.com/persona-operator/persona-operator/test/suite"
)

// The suite runs the real kube-apiserver and etcd (envtest) and the manager
// binary, which serves the webhook, as a separate process (test/suite).
var (
	plane   *controlplane.Plane
	manager *controlplane.Manager
	k8s     client.Client
	ctx     context.Context
	// metricsURL is the manager's metrics endpoint.
	metricsURL string
)

func TestControllers(t *testing.T) { suite.Run(t, "Controllers Suite") }

var _ = BeforeSuite(func() {
	controlplane.RequireEnvtest(GinkgoT())
	port, err := controlplane.FreePort()
	Expect(err).NotTo(HaveOccurred())
	metricsURL = fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
	suite.Start("--zap-log-level=info", "--reference-grace-period="+referenceGracePeriod.String(),
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", port), "--metrics-secure=false")
	plane, manager, k8s, ctx = suite.Plane, suite.Manager, suite.K8s, suite.Ctx
})

var _ = AfterSuite(suite.Stop)

var _ = ReportAfterEach(suite.ReportManagerLog)

// referenceGracePeriod is the manager's: short, so that specs see a missing
// reference go from awaited to stalled, yet longer than the order specs'
// bound on time to Ready, so that the re-render at the end of the period
// cannot pass for a re-render on the reference's arrival.
const referenceGracePeriod = 11 * time.Second
