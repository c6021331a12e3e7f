// Package controllers is the envtest suite of the controllers: its specs run
// the manager binary, which serves the webhook too, against a real
// kube-apiserver and etcd (test/suite), and check from outside what the
// API server owns and a fake client cannot show: watches and caches,
// conflicts, restarts, the webhook in the path, GitOps tools' view of
// health, and the manager's metrics and memory. Every file is named by
// what its specs check; the tests of each controller's steps sit beside
// their code in internal/controller/... (plain go test, a fake client).
//
// Run it alone with
//
//	KUBEBUILDER_ASSETS="$(hack/envtest-binaries.sh)" go test ./test/integration/controllers -run TestControllers
//
// and -ginkgo.focus or -ginkgo.label-filter to pick specs (the contention
// specs carry the label contention).
package controllers
