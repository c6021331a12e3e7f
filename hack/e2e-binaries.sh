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

K8S_VERSION="${ENVTEST_K8S_VERSION:-1.37.2}"
BINARIES=(kubelet kube-proxy kube-scheduler kube-controller-manager)

LOG_PREFIX=e2e-binaries
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v go >/dev/null 2>&1 || die "go not found on PATH"
[[ "$K8S_VERSION" =~ ^1\.([0-9]+)\.([0-9]+)$ ]] || die "ENVTEST_K8S_VERSION must look like 1.N.M, got '$K8S_VERSION'"
STAGING_VERSION="v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"

ROOT="${KUBEBUILDER_ASSETS_ROOT:-${XDG_DATA_HOME:-${HOME:?HOME must be set}/.local/share}/kubebuilder-envtest}"
mkdir -p "$ROOT/k8s"
ROOT="$(cd "$ROOT" && pwd -P)"
DEST="$ROOT/k8s/${K8S_VERSION}-$(go env GOOS)-$(go env GOARCH)"

all_ok() {
    local b
    for b in "${BINARIES[@]}"; do
        reports_version "$DEST/$b" "v${K8S_VERSION//./\\.}([^0-9.]|$)" || return 1
    done
}

if all_ok; then
    echo "$DEST"
    exit 0
fi

TMP=""
cleanup() {
    if [[ -n "$CHILD" ]]; then kill "$CHILD" 2>/dev/null || true; wait "$CHILD" 2>/dev/null || true; fi
    if [[ -n "$TMP" && -d "$TMP" ]]; then chmod -R u+w "$TMP" 2>/dev/null || true; rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

exec 9>"$ROOT/.e2e-binaries-${K8S_VERSION}.lock"
if ! flock -n 9; then
    log "another invocation is building into $DEST; waiting for its lock ..."
    flock 9
fi
if all_ok; then
    echo "$DEST"
    exit 0
fi

mkdir -p "$DEST"
TMP="$(mktemp -d "${TMPDIR:-/tmp}/e2e-binaries.XXXXXX")"
export GOWORK=off GO111MODULE=on
export CGO_ENABLED="${CGO_ENABLED:-0}"

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
