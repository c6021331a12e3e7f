package webhook_test

import (
	"fmt"
	"testing"

	"github.com/persona-operator/persona-operator/test/controlplane"
	"github.com/persona-operator/persona-operator/test/suite"
)

// The suite runs the real kube-apiserver and etcd (envtest) and the manager
// binary, which serves the webhook and runs the controllers, as a separate
// process (test/suite).
func TestSuite(t *testing.T) { suite.Run(t, "Webhook Suite") }

// metricsPort serves the manager's metrics, over HTTP on loopback, for the
// specs that read what its webhook turned away.
var metricsPort = func() int {
	port, err := controlplane.FreePort()
	if err != nil {
		panic(err)
	}
	return port
}()

// metricsURL is the manager's metrics endpoint.
var metricsURL = fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)

// status.agents is written at most once a second here, rather than every
// 30 s, so that its specs see pods come and go in seconds.
// Pods may choose one more mount path than the default.
var _ = suite.Setup("--zap-log-level=info", "--agents-status-interval=1s", "--mount-paths=/etc/persona,/run/prompt",
	fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", metricsPort), "--metrics-secure=false")
