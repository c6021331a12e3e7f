// Package install checks what a cluster is installed from: the Helm chart in
// dist/chart and dist/install.yaml, both made from config/. Its tests build
// config/default in-process with kustomize's krusty, render the chart with the
// helm binary that the Makefile installs into bin/ (make helm), and check that
// both install the same CRDs, RBAC, webhook configuration, ConfigMap policy and
// workload; that the chart's values do what they say; and that dist/ is up to
// date with config/. On a real API server (envtest) they check that the
// manager runs with the shipped RBAC alone, that its rights are exactly the
// requests it makes (from the API server's audit log), and that the
// ConfigMap policy keeps tenants off the operator's ConfigMaps.
package install
