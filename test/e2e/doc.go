// Package e2e is the single-node end-to-end suite of `make test-e2e`: envtest's
// kube-apiserver and etcd, kube-scheduler, kube-controller-manager (garbage
// collector, Deployments, ReplicaSets), containerd and a kubelet run real
// containers of config/samples' agent Deployment, and the suite checks how a
// persona's render reaches a running agent (docs/delivery.md). Everything is
// in its _test.go files; agent/ and pause/ are the programs of its images.
package e2e
