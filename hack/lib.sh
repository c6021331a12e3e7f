# hack/lib.sh - shell code shared by the scripts of hack/ (sourced, never run).
#
# The caller sets LOG_PREFIX before sourcing; everything here is safe under
# `set -euo pipefail`.

log() { printf '%s: %s\n' "${LOG_PREFIX:-hack}" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# reports_version BIN PATTERN: BIN --version prints a line matching the
# extended regular expression PATTERN. The output is captured whole before it
# is matched: a pipe into `grep -q` would close early, and under pipefail the
# binary's SIGPIPE would read as a wrong version.
reports_version() {
    local bin="$1" pattern="$2" out
    [[ -x "$bin" ]] || return 1
    out="$("$bin" --version 2>/dev/null)" || return 1
    [[ "$out" =~ $pattern ]]
}

# version_pattern VERSION: an extended regular expression that matches
# VERSION and not a longer version it is a prefix of (1.37.2, not 1.37.20).
version_pattern() { printf '%s([^0-9.]|$)' "${1//./\\.}"; }

# kube_layout: for ENVTEST_K8S_VERSION (default 1.37.2), set K8S_VERSION;
# STAGING_VERSION, the tag of the staging modules (k8s.io/api,
# k8s.io/apiserver, ...), v0.<minor>.<patch>; KUBE_VERSION_PATTERN, what a
# binary of that version reports (reports_version); ROOT, the binaries' root,
# created; GOOS_ and GOARCH_, go's; and DEST, that version's directory for
# them.
kube_layout() {
    command -v go >/dev/null 2>&1 || die "go not found on PATH"
    K8S_VERSION="${ENVTEST_K8S_VERSION:-1.37.2}"
    [[ "$K8S_VERSION" =~ ^1\.([0-9]+)\.([0-9]+)$ ]] || die "ENVTEST_K8S_VERSION must look like 1.N.M, got '$K8S_VERSION'"
    STAGING_VERSION="v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"
    KUBE_VERSION_PATTERN="v$(version_pattern "$K8S_VERSION")"
    ROOT="${KUBEBUILDER_ASSETS_ROOT:-${XDG_DATA_HOME:-${HOME:?HOME must be set}/.local/share}/kubebuilder-envtest}"
    mkdir -p "$ROOT/k8s"
    ROOT="$(cd "$ROOT" && pwd -P)"
    GOOS_="$(go env GOOS)"
    GOARCH_="$(go env GOARCH)"
    DEST="$ROOT/k8s/${K8S_VERSION}-${GOOS_}-${GOARCH_}"
}

# prepare_build NAME CHECK: when the function CHECK passes, print $DEST and
# exit: the binaries are there. Otherwise take the lock NAME under $ROOT (one
# per NAME and directory DEST of $ROOT),
# waiting for a concurrent build, and check again (that build may have made
# them); then make DEST, a throw-away directory TMP (removed on exit, with
# the files listed in PARTIALS), and the environment of the throw-away
# modules: never a go.work from the caller's directory, the caller's
# GOFLAGS, GOTOOLCHAIN and GOPROXY kept.
TMP=""
PARTIALS=()
prepare_build() {
    local name="$1" check="$2" lock
    if "$check"; then
        echo "$DEST"
        exit 0
    fi
    trap cleanup_build EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    # Serialize concurrent invocations (e.g. `make test` in two clones).
    lock="$ROOT/.${name}-${DEST##*/}.lock"
    if command -v flock >/dev/null 2>&1; then
        exec 9>"$lock"
        if ! flock -n 9; then
            log "another invocation is building into $DEST; waiting for lock $lock ..."
            flock 9
        fi
    else
        log "warning: flock not found; proceeding without a lock"
    fi
    if "$check"; then
        echo "$DEST"
        exit 0
    fi
    mkdir -p "$DEST"
    TMP="$(mktemp -d "${TMPDIR:-/tmp}/${name}.XXXXXX")"
    export GOWORK=off GO111MODULE=on
    export CGO_ENABLED="${CGO_ENABLED:-0}"
}

# cleanup_build stops the build under way and removes what it left.
cleanup_build() {
    local f
    if [[ -n "$CHILD" ]]; then kill "$CHILD" 2>/dev/null || true; wait "$CHILD" 2>/dev/null || true; fi
    for f in "${PARTIALS[@]+"${PARTIALS[@]}"}"; do rm -f "$f"; done
    if [[ -n "$TMP" && -d "$TMP" ]]; then
        chmod -R u+w "$TMP" 2>/dev/null || true
        rm -rf "$TMP"
    fi
}

# staging_replaces GOMOD STAGING_VERSION: print, as lines of a replace block,
# k8s.io/kubernetes's replaces of ./staging/src/k8s.io/X as k8s.io/X
# STAGING_VERSION. It reads both the block and the one-line form.
staging_replaces() {
    awk -v v="$2" '
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
        }' "$1"
}

# kubernetes_module DIR K8S_VERSION STAGING_VERSION: make DIR a throw-away
# module that requires k8s.io/kubernetes@vK8S_VERSION with its staging
# replaces resolved to published modules. The caller's gorun runs go in DIR.
kubernetes_module() {
    local dir="$1" k8s="$2" staging="$3" gomod modfile
    mkdir -p "$dir"
    log "resolving k8s.io/kubernetes@v${k8s} ..."
    # download -json prints the cache path of k8s.io/kubernetes's own go.mod.
    gomod="$(go -C "$dir" mod download -json "k8s.io/kubernetes@v${k8s}" |
        sed -n 's/^[[:space:]]*"GoMod":[[:space:]]*"\(.*\)",\{0,1\}$/\1/p')" ||
        die "go mod download k8s.io/kubernetes@v${k8s} failed"
    [[ -n "$gomod" && -f "$gomod" ]] || die "could not download go.mod of k8s.io/kubernetes@v${k8s}"
    go -C "$dir" mod init "hack-build/kube" >/dev/null 2>&1 || die "go mod init failed in $dir"
    {
        echo
        echo "require k8s.io/kubernetes v${k8s}"
        echo
        echo "replace ("
        staging_replaces "$gomod" "$staging"
        echo ")"
    } >>"$dir/go.mod"
    modfile="$(<"$dir/go.mod")"
    [[ "$modfile" == *"=> k8s.io/api ${staging}"* ]] || die "no staging replaces found in $gomod"
}

# kube_ldflags K8S_VERSION: the -X flags that make a binary built from the
# module report vK8S_VERSION, as a release build does.
kube_ldflags() {
    local k8s="$1" minor pkg kv out=""
    minor="${k8s#1.}"
    minor="${minor%%.*}"
    for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        for kv in "gitVersion=v${k8s}" "gitMajor=1" "gitMinor=${minor}" "gitTreeState=clean"; do
            out+=" -X ${pkg}.${kv}"
        done
    done
    printf '%s' "$out"
}

# gorun DIR ARGS...: `go -C DIR ARGS...`, its stdout to stderr. It runs in the
# background and is waited for, so that an INT or TERM trap fires at once and
# can stop the build (bash defers a trap until a foreground child ends). The
# EXIT trap of prepare_build (cleanup_build) kills $CHILD.
CHILD=""
gorun() {
    local dir="$1" rc=0
    shift
    go -C "$dir" "$@" >&2 &
    CHILD=$!
    wait "$CHILD" || rc=$?
    CHILD=""
    return "$rc"
}
