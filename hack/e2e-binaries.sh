#!/usr/bin/env bash
# hack/e2e-binaries.sh - provide kubelet, kube-scheduler and kube-controller-manager
# for the single-node e2e suite (test/e2e), beside the kube-apiserver and etcd of
# hack/envtest-binaries.sh.
#
# Why: as for kube-apiserver, only the Go module proxy is reachable, so these are
# built from k8s.io/kubernetes@v${K8S_VERSION} in a throw-away module whose replace
# block maps k8s.io/kubernetes's ./staging/src/k8s.io/X to k8s.io/X v0.<minor>.<patch>.
# All three are built by one `go build`, which shares their packages (~8 min on two
# cores with a cold build cache, seconds when cached).
#
# Usage:  PERSONA_E2E_BINARIES="$(hack/e2e-binaries.sh)"
# The last line on stdout is the absolute directory; progress goes to stderr. It is
# the envtest cache directory of hack/envtest-binaries.sh, machine-wide, never the
# repository. Idempotent: a no-op when the binaries are there and report the version.
# Concurrent runs serialize on a flock; binaries are moved into place only once built.
set -euo pipefail

K8S_VERSION="${ENVTEST_K8S_VERSION:-1.37.2}"
BINARIES=(kubelet kube-scheduler kube-controller-manager)

log() { printf 'e2e-binaries: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

command -v go >/dev/null 2>&1 || die "go not found on PATH"
[[ "$K8S_VERSION" =~ ^1\.([0-9]+)\.([0-9]+)$ ]] || die "ENVTEST_K8S_VERSION must look like 1.N.M, got '$K8S_VERSION'"
STAGING_VERSION="v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"
K8S_MINOR="${BASH_REMATCH[1]}"

ROOT="${KUBEBUILDER_ASSETS_ROOT:-${XDG_DATA_HOME:-${HOME:?HOME must be set}/.local/share}/kubebuilder-envtest}"
mkdir -p "$ROOT/k8s"
ROOT="$(cd "$ROOT" && pwd -P)"
DEST="$ROOT/k8s/${K8S_VERSION}-$(go env GOOS)-$(go env GOARCH)"

all_ok() {
    local b
    for b in "${BINARIES[@]}"; do
        [[ -x "$DEST/$b" ]] && "$DEST/$b" --version 2>/dev/null | grep -q "v${K8S_VERSION}\b" || return 1
    done
}

if all_ok; then
    echo "$DEST"
    exit 0
fi

TMP=""
CHILD=""
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

# gorun ARGS...: go in the throw-away module, in the background so that a
# signal's trap can stop it at once.
gorun() {
    local rc=0
    go -C "$TMP/kube" "$@" >&2 &
    CHILD=$!
    wait "$CHILD" || rc=$?
    CHILD=""
    return "$rc"
}

mkdir -p "$TMP/kube" "$TMP/out"
log "resolving k8s.io/kubernetes@v${K8S_VERSION} ..."
gomod="$(go -C "$TMP/kube" mod download -json "k8s.io/kubernetes@v${K8S_VERSION}" |
    sed -n 's/^[[:space:]]*"GoMod":[[:space:]]*"\(.*\)",\{0,1\}$/\1/p')" ||
    die "go mod download k8s.io/kubernetes@v${K8S_VERSION} failed"
[[ -n "$gomod" && -f "$gomod" ]] || die "could not download go.mod of k8s.io/kubernetes@v${K8S_VERSION}"
gorun mod init e2e-binaries/kube 2>/dev/null || die "go mod init failed in $TMP/kube"
{
    echo "require k8s.io/kubernetes v${K8S_VERSION}"
    echo "replace ("
    # k8s.io/kubernetes's replaces of ./staging/src/k8s.io/X, block or one-line form.
    awk -v v="$STAGING_VERSION" '
        /^replace[[:space:]]*\(/ { inblk = 1; next }
        inblk && /^\)/           { inblk = 0; next }
        {
            line = $0
            if (!inblk) { if (line !~ /^replace[[:space:]]/) next; sub(/^replace[[:space:]]+/, "", line) }
            n = split(line, f, /[[:space:]]+/)
            i = (f[1] == "") ? 2 : 1
            if (f[i+1] == "=>" && f[i+2] ~ /^\.\/staging\/src\//) {
                t = f[i+2]; sub(/^\.\/staging\/src\//, "", t)
                printf "\t%s => %s %s\n", f[i], t, v
            }
        }' "$gomod"
    echo ")"
} >>"$TMP/kube/go.mod"
grep -q "=> k8s.io/api ${STAGING_VERSION}" "$TMP/kube/go.mod" || die "no staging replaces found in $gomod"

pkgs=()
for b in "${BINARIES[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$b"); done
gorun get "${pkgs[@]/%/@v${K8S_VERSION}}"

ldflags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    for kv in "gitVersion=v${K8S_VERSION}" "gitMajor=1" "gitMinor=${K8S_MINOR}" "gitTreeState=clean"; do
        ldflags+=" -X ${pkg}.${kv}"
    done
done

start=$SECONDS
log "building ${BINARIES[*]} (several minutes on a cold build cache) ..."
gorun build -mod=mod -trimpath -ldflags "-s -w${ldflags}" -o "$TMP/out/" "${pkgs[@]}"
for b in "${BINARIES[@]}"; do
    chmod 0755 "$TMP/out/$b"
    mv -f "$TMP/out/$b" "$DEST/$b"
done
all_ok || die "the built binaries do not report version v${K8S_VERSION}"
log "built ${BINARIES[*]} into $DEST in $((SECONDS - start))s"
echo "$DEST"
