// Package install checks what a cluster is installed from: the Helm chart in
// dist/chart and dist/install.yaml, both made from config/. Its tests build
// config/default in-process with kustomize's krusty, render the chart with the
// helm binary that the Makefile installs into bin/ (make helm), and check that
// both install the same CRDs, RBAC, webhook configuration and workload; that the
// chart's values do what they say; and that dist/ is up to date with config/.
package install
