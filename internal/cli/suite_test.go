package cli_test

import (
	"testing"
	"time"

	"github.com/persona-operator/persona-operator/test/suite"
)

// The suite runs the real kube-apiserver and etcd (envtest) and the manager
// binary, whose ConfigMaps and statuses the CLI is compared with, as a
// separate process (test/suite).
func TestSuite(t *testing.T) { suite.Run(t, "CLI Suite") }

// referenceGracePeriod is the manager's: short, so that the parity specs
// see a missing reference both awaited and stalled.
const referenceGracePeriod = 11 * time.Second

var _ = suite.Setup("--zap-log-level=info", "--reference-grace-period="+referenceGracePeriod.String())
