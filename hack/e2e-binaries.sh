#!/usr/bin/env bash
# hack/e2e-binaries.sh - provide kubelet, kube-proxy, kube-scheduler and kube-controller-manager
# for the single-node e2e suite (test/e2e), beside the kube-apiserver and etcd of
# hack/envtest-binaries.sh.
#
# Why: as for kube-apiserver, only the Go module proxy is reachable, so these are
# built from k8s.io/kubernetes@v${K8S_VERSION} in a throw-away module whose replace
# block maps k8s.io/kubernetes's ./staging/src/k8s.io/X to k8s.io/X v0.<minor>.<patch>.
# All four are built by one `go build`, which shares their packages (~9 min on two
# cores with a cold build cache, seconds when cached).
#
# Usage:  PERSONA_E2E_BINARIES="$(hack/e2e-binaries.sh)"
# The last line on stdout is the absolute directory; progress goes to stderr. It is
# the envtest cache directory of hack/envtest-binaries.sh, machine-wide, never the
# repository. Idempotent: a no-op when the binaries are there and report the version.
# Concurrent runs serialize on a flock; binaries are moved into place only once built.
set -euo pipefail

BINARIES=(kubelet kube-proxy kube-scheduler kube-controller-manager)

LOG_PREFIX=e2e-binaries
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
kube_layout

all_ok() {
    local b
    for b in "${BINARIES[@]}"; do
        reports_version "$DEST/$b" "$KUBE_VERSION_PATTERN" || return 1
    done
}

prepare_build e2e-binaries all_ok

mkdir -p "$TMP/kube" "$TMP/out"
kubernetes_module "$TMP/kube" "$K8S_VERSION" "$STAGING_VERSION"

pkgs=()
for b in "${BINARIES[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$b"); done
gorun "$TMP/kube" get "${pkgs[@]/%/@v${K8S_VERSION}}"

ldflags="$(kube_ldflags "$K8S_VERSION")"

start=$SECONDS
log "building ${BINARIES[*]} (several minutes on a cold build cache) ..."
gorun "$TMP/kube" build -mod=mod -trimpath -ldflags "-s -w ${ldflags}" -o "$TMP/out/" "${pkgs[@]}"
for b in "${BINARIES[@]}"; do
    chmod 0755 "$TMP/out/$b"
    mv -f "$TMP/out/$b" "$DEST/$b"
done
all_ok || die "the built binaries do not report version v${K8S_VERSION}"
log "built ${BINARIES[*]} into $DEST in $((SECONDS - start))s"
echo "$DEST"
