#!/usr/bin/env bash
# hack/envtest-binaries.sh - provide kube-apiserver, etcd and kubectl for envtest.
#
# Why: the usual envtest binary downloads (setup-envtest) are unreachable from
# our machines; only the Go module proxy is. So we build the control-plane
# binaries from source modules instead:
#   kube-apiserver  from k8s.io/kubernetes@v${K8S_VERSION}, in a throw-away module
#                   whose replace block maps k8s.io/kubernetes's ./staging/src/k8s.io/X
#                   replaces to k8s.io/X v0.<minor>.<patch> (~7 min, cold build cache)
#   etcd            from go.etcd.io/etcd/server/v3@v${ETCD_VERSION} (etcdmain.Main, ~1 min)
#   kubectl         symlinked from PATH, or built from k8s.io/kubernetes if absent
# into the envtest cache that controller-runtime's envtest uses via KUBEBUILDER_ASSETS:
#   ${KUBEBUILDER_ASSETS_ROOT:-${XDG_DATA_HOME:-$HOME/.local/share}/kubebuilder-envtest}/k8s/<ver>-<os>-<arch>/
#
# Usage:  export KUBEBUILDER_ASSETS="$(hack/envtest-binaries.sh)"
#         (Makefile: KUBEBUILDER_ASSETS=$(shell hack/envtest-binaries.sh))
# The last line on stdout is the absolute asset directory; progress goes to stderr.
# Idempotent: a no-op when the binaries are already there and run. Concurrent runs
# serialize on a flock; binaries are built to a temp name and mv'd into place only
# on success. Nothing is written into the repository. Honors GOFLAGS, GOTOOLCHAIN,
# GOPROXY etc. from the environment. Overridable: ENVTEST_K8S_VERSION, ENVTEST_ETCD_VERSION.
set -euo pipefail

K8S_VERSION="${ENVTEST_K8S_VERSION:-1.37.2}"
ETCD_VERSION="${ENVTEST_ETCD_VERSION:-3.7.3}"

LOG_PREFIX=envtest-binaries
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v go >/dev/null 2>&1 || die "go not found on PATH"

# Staging modules (k8s.io/api, k8s.io/apiserver, ...) are tagged v0.<minor>.<patch>.
[[ "$K8S_VERSION" =~ ^1\.([0-9]+)\.([0-9]+)$ ]] || die "ENVTEST_K8S_VERSION must look like 1.N.M, got '$K8S_VERSION'"
STAGING_VERSION="v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"

GOOS_="$(go env GOOS)"
GOARCH_="$(go env GOARCH)"
ROOT="${KUBEBUILDER_ASSETS_ROOT:-${XDG_DATA_HOME:-${HOME:?HOME must be set}/.local/share}/kubebuilder-envtest}"
mkdir -p "$ROOT/k8s"
ROOT="$(cd "$ROOT" && pwd -P)"
DEST="$ROOT/k8s/${K8S_VERSION}-${GOOS_}-${GOARCH_}"

apiserver_ok() { reports_version "$DEST/kube-apiserver" "v${K8S_VERSION//./\\.}([^0-9.]|$)"; }
etcd_ok() { reports_version "$DEST/etcd" "${ETCD_VERSION//./\\.}([^0-9.]|$)"; }
kubectl_ok() {
    [[ -x "$DEST/kubectl" ]] && "$DEST/kubectl" version --client >/dev/null 2>&1
}
all_ok() { apiserver_ok && etcd_ok && kubectl_ok; }

# Fast path: nothing to do.
if all_ok; then
    echo "$DEST"
    exit 0
fi

TMP=""
PARTIALS=()
cleanup() {
    local f
    if [[ -n "$CHILD" ]]; then kill "$CHILD" 2>/dev/null || true; wait "$CHILD" 2>/dev/null || true; fi
    for f in "${PARTIALS[@]+"${PARTIALS[@]}"}"; do rm -f "$f"; done
    if [[ -n "$TMP" && -d "$TMP" ]]; then
        chmod -R u+w "$TMP" 2>/dev/null || true
        rm -rf "$TMP"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Serialize concurrent invocations (e.g. `make test` in two clones).
LOCK="$ROOT/.envtest-binaries-${K8S_VERSION}-${GOOS_}-${GOARCH_}.lock"
if command -v flock >/dev/null 2>&1; then
    exec 9>"$LOCK"
    if ! flock -n 9; then
        log "another invocation is building into $DEST; waiting for lock $LOCK ..."
        flock 9
    fi
else
    log "warning: flock not found; proceeding without a lock"
fi

# Re-check: whoever held the lock may have built everything.
if all_ok; then
    echo "$DEST"
    exit 0
fi

mkdir -p "$DEST"
# Throw-away modules live outside the repository, under TMPDIR.
TMP="$(mktemp -d "${TMPDIR:-/tmp}/envtest-binaries.XXXXXX")"

# Environment for the throw-away modules: never pick up a go.work from the
# caller's directory; keep the caller's GOFLAGS/GOTOOLCHAIN/GOPROXY.
export GOWORK=off GO111MODULE=on
export CGO_ENABLED="${CGO_ENABLED:-0}"

# build_to DIR NAME PKG [LDFLAGS]: build PKG in module DIR to $DEST/NAME atomically.
build_to() {
    local dir="$1" name="$2" pkg="$3" ldflags="${4:-}" partial start
    partial="$DEST/.${name}.partial.$$"
    PARTIALS+=("$partial")
    start=$SECONDS
    log "building $name from $pkg (this can take several minutes) ..."
    gorun "$dir" build -mod=mod -trimpath -ldflags "-s -w ${ldflags}" -o "$partial" "$pkg"
    chmod 0755 "$partial"
    mv -f "$partial" "$DEST/$name"
    log "built $DEST/$name in $((SECONDS - start))s"
}

KUBE_MOD_READY=""
prepare_kube_module() {
    [[ -n "$KUBE_MOD_READY" ]] && return 0
    kubernetes_module "$TMP/kube" "$K8S_VERSION" "$STAGING_VERSION"
    gorun "$TMP/kube" get "k8s.io/kubernetes/cmd/kube-apiserver@v${K8S_VERSION}"
    KUBE_MOD_READY=1
}

TOTAL_START=$SECONDS

if ! etcd_ok; then
    dir="$TMP/etcd"
    mkdir -p "$dir"
    cat >"$dir/main.go" <<'EOF'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
EOF
    gorun "$dir" mod init envtest-binaries/etcd 2>/dev/null || die "go mod init failed in $dir"
    log "resolving go.etcd.io/etcd/server/v3@v${ETCD_VERSION} ..."
    gorun "$dir" get "go.etcd.io/etcd/server/v3/etcdmain@v${ETCD_VERSION}"
    build_to "$dir" etcd .
    etcd_ok || die "built etcd does not report version ${ETCD_VERSION}"
fi

if ! apiserver_ok; then
    prepare_kube_module
    build_to "$TMP/kube" kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "$(kube_ldflags "$K8S_VERSION")"
    apiserver_ok || die "built kube-apiserver does not report version v${K8S_VERSION}"
fi

if ! kubectl_ok; then
    rm -f "$DEST/kubectl"
    if existing="$(command -v kubectl 2>/dev/null)" && [[ -n "$existing" ]]; then
        existing="$(readlink -f "$existing")"
        ln -sfn "$existing" "$DEST/kubectl"
        log "linked $DEST/kubectl -> $existing"
    else
        prepare_kube_module
        gorun "$TMP/kube" get "k8s.io/kubernetes/cmd/kubectl@v${K8S_VERSION}"
        build_to "$TMP/kube" kubectl k8s.io/kubernetes/cmd/kubectl "$(kube_ldflags "$K8S_VERSION")"
    fi
    kubectl_ok || die "kubectl in $DEST does not run"
fi

log "envtest binaries ready in $DEST ($((SECONDS - TOTAL_START))s)"
echo "$DEST"
