package kube

import (
	"testing"

	"github.com/persona-operator/persona-operator/test/controlplane"
)

// emptyPlane is a real API server for t alone, with no CRDs, stopped as t
// ends; t is skipped without the envtest binaries.
func emptyPlane(t testing.TB) *controlplane.Plane {
	t.Helper()
	controlplane.RequireEnvtest(t)
	plane, err := controlplane.StartEmpty()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = plane.Stop() })
	return plane
}
