#!/usr/bin/env bash
# hack/argo-rollouts.sh - provide Argo Rollouts' controller, its CRDs and its
# ClusterRole, for the tests that run AnalysisRuns through it (make
# test-rollouts, test/rollouts).
#
# Why: Argo Rollouts' release images and binaries are unreachable from our
# machines; only the Go module proxy is. So rollouts-controller is built from
# github.com/argoproj/argo-rollouts@v${VERSION} in a writable copy of the
# module (the module cache is read-only), where the module's own go.mod, with
# its replace directives, applies (~5 min on two cores with a cold build
# cache). Into a cache outside the clone, keyed by version:
#   ${ARGO_ROLLOUTS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/persona-operator/argo-rollouts}/v<version>-<os>-<arch>/
#     rollouts-controller  reports v<version> (--version)
#     crds/                the module's manifests/crds: AnalysisRun, AnalysisTemplate,
#                          ClusterAnalysisTemplate, Experiment, Rollout
#     clusterrole.yaml     manifests/role/argo-rollouts-clusterrole.yaml, the
#                          controller's ClusterRole in Argo's install
#
# Usage:  export ARGO_ROLLOUTS_DIR="$(hack/argo-rollouts.sh)"
# The last line on stdout is the absolute directory; progress goes to stderr.
# Idempotent: a no-op when the files are there and the binary reports the
# version. Concurrent runs serialize on a flock; each file is written to a
# temporary name and moved into place once complete, the binary last.
# Honors GOFLAGS, GOTOOLCHAIN, GOPROXY etc. from the environment.
# Overridable: ARGO_ROLLOUTS_VERSION (1.10.2 and later need a newer Go).
set -euo pipefail

VERSION="${ARGO_ROLLOUTS_VERSION:-1.10.1}"
MODULE=github.com/argoproj/argo-rollouts
CRDS=(analysis-run-crd.yaml analysis-template-crd.yaml cluster-analysis-template-crd.yaml experiment-crd.yaml rollout-crd.yaml)

LOG_PREFIX=argo-rollouts
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[[ "$VERSION" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "ARGO_ROLLOUTS_VERSION must look like 1.N.M, got '$VERSION'"
command -v go >/dev/null 2>&1 || die "go not found on PATH"
ROOT="${ARGO_ROLLOUTS_CACHE:-${XDG_CACHE_HOME:-${HOME:?HOME must be set}/.cache}/persona-operator/argo-rollouts}"
mkdir -p "$ROOT"
ROOT="$(cd "$ROOT" && pwd -P)"
DEST="$ROOT/v${VERSION}-$(go env GOOS)-$(go env GOARCH)"

controller_ok() { reports_version "$DEST/rollouts-controller" "v$(version_pattern "$VERSION")"; }
manifests_ok() {
    local f
    for f in "${CRDS[@]}"; do [[ -s "$DEST/crds/$f" ]] || return 1; done
    [[ -s "$DEST/clusterrole.yaml" ]]
}
all_ok() { manifests_ok && controller_ok; }

# Fast path: nothing to do.
prepare_build argo-rollouts all_ok

# install_file FILE NAME: copy FILE to $DEST/NAME through a temporary name, so
# that NAME is whole or absent.
install_file() {
    local partial="$DEST/.${2//\//_}.partial.$$"
    PARTIALS+=("$partial")
    cp "$1" "$partial"
    chmod 0644 "$partial" # the module cache's files are read-only
    mv -f "$partial" "$DEST/$2"
}

TOTAL_START=$SECONDS
log "resolving $MODULE@v$VERSION ..."
# download -json prints the module's directory in the (read-only) module cache.
src="$(go -C "$TMP" mod download -json "$MODULE@v$VERSION" |
    sed -n 's/^[[:space:]]*"Dir":[[:space:]]*"\(.*\)",\{0,1\}$/\1/p')" ||
    die "go mod download $MODULE@v$VERSION failed"
[[ -n "$src" && -d "$src" ]] || die "could not download $MODULE@v$VERSION"

if ! manifests_ok; then
    mkdir -p "$DEST/crds"
    for f in "${CRDS[@]}"; do
        [[ -s "$src/manifests/crds/$f" ]] || die "$MODULE@v$VERSION has no manifests/crds/$f"
        install_file "$src/manifests/crds/$f" "crds/$f"
    done
    install_file "$src/manifests/role/argo-rollouts-clusterrole.yaml" clusterrole.yaml
    log "copied the CRDs and the ClusterRole into $DEST"
fi

if ! controller_ok; then
    cp -r "$src" "$TMP/src"
    chmod -R u+w "$TMP/src"
    partial="$DEST/.rollouts-controller.partial.$$"
    PARTIALS+=("$partial")
    start=$SECONDS
    log "building rollouts-controller (several minutes on a cold build cache) ..."
    # The version variable is what Argo's release build sets; without it the
    # binary reports v99.99.99.
    gorun "$TMP/src" build -mod=mod -trimpath \
        -ldflags "-s -w -X $MODULE/utils/version.version=$VERSION" \
        -o "$partial" ./cmd/rollouts-controller
    chmod 0755 "$partial"
    mv -f "$partial" "$DEST/rollouts-controller"
    controller_ok || die "the built rollouts-controller does not report version v$VERSION"
    log "built $DEST/rollouts-controller in $((SECONDS - start))s"
fi

log "Argo Rollouts v$VERSION ready in $DEST ($((SECONDS - TOTAL_START))s)"
echo "$DEST"
