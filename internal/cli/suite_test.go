package cli_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/persona-operator/persona-operator/test/suite"
)

// The suite runs the real kube-apiserver and etcd (envtest) and the manager
// binary, which serves the webhook and runs the controllers, as a separate
// process (test/suite).
func TestSuite(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	RunSpecs(t, "CLI Suite")
}

// referenceGracePeriod is the manager's: short, so that the parity specs
// see a missing reference both awaited and stalled.
const referenceGracePeriod = 11 * time.Second

var _ = BeforeSuite(func() { suite.Start("--zap-log-level=info", "--reference-grace-period="+referenceGracePeriod.String()) })

var _ = AfterSuite(suite.Stop)

var _ = ReportAfterEach(suite.ReportManagerLog)
