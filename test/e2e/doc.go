// Package e2e is the single-node end-to-end suite of `make test-e2e`, run in a
// network namespace of its own: envtest's kube-apiserver and etcd with
// ServiceAccount tokens, kube-scheduler, kube-controller-manager, kube-proxy,
// containerd with a bridge pod network and a kubelet. It installs the
// operator from dist/install.yaml with the image make image builds, and
// checks how a persona's render reaches config/samples' running agent
// (docs/delivery.md), and the model requests of the real Codex CLI run as
// that agent (codex_test.go). Everything is in its _test.go files; agent/,
// sessions/ and pause/ are the programs of its images.
package e2e
