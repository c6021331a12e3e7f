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

ETCD_VERSION="${ENVTEST_ETCD_VERSION:-3.7.3}"

LOG_PREFIX=envtest-binaries
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
kube_layout

apiserver_ok() { reports_version "$DEST/kube-apiserver" "$KUBE_VERSION_PATTERN"; }
etcd_ok() { reports_version "$DEST/etcd" "$(version_pattern "$ETCD_VERSION")"; }
kubectl_ok() {
    [[ -x "$DEST/kubectl" ]] && "$DEST/kubectl" version --client >/dev/null 2>&1
}
all_ok() { apiserver_ok && etcd_ok && kubectl_ok; }

# Fast path: nothing to do.
prepare_build envtest-binaries all_ok

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
