package main

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// benchControlPlane starts a kube-apiserver and etcd of the benchmark's
// own, with the CRDs, and returns a client config without client-side
// limits and the two processes, whose CPU the benchmark reads. It is
// envtest itself rather than controlplane.Start, which registers the
// webhooks: nobody serves them here, and the floors write without them.
func benchControlPlane(b *testing.B) (*rest.Config, processes) {
	b.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		b.Skip("needs KUBEBUILDER_ASSETS (hack/envtest-binaries.sh)")
	}
	env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")}, ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = env.Stop() })
	procs := findChildren()
	if procs.apiserver == 0 || procs.etcd == 0 {
		b.Fatal("no kube-apiserver or etcd child found")
	}
	cfg.QPS, cfg.Burst = -1, -1
	return cfg, procs
}
