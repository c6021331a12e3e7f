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
# caller's EXIT trap kills $CHILD.
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
