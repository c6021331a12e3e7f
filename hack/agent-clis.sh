#!/usr/bin/env bash
# hack/agent-clis.sh - provide the agent CLIs that make test-agents runs:
# Claude Code, Codex and opencode, at the versions pinned below, from the npm
# registry.
#
# Each is installed with `npm install --prefix` into a cache outside the
# clone, keyed by version:
#   ${AGENT_CLIS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/persona-operator/agents}/<command>@<version>/
# and linked into bin/agents/ of the clone (never bin/ itself, which a
# developer may have on PATH: the pinned CLIs would shadow their own).
#
# Usage:  export PERSONA_AGENT_CLIS="$(hack/agent-clis.sh [COMMAND...])"
# With commands (claude, codex, opencode), only those are provided: make
# test-e2e runs Codex alone. The last line on stdout is the absolute
# directory of the links; progress
# goes to stderr. Idempotent: a no-op when each CLI is there and reports its
# version. An install goes to a temporary directory that is moved into place
# only once its CLI runs, so an interrupted one is never taken for done;
# concurrent runs serialize on a flock. npm's own retries are backed by
# three attempts per package, for a network that drops. The packages'
# postinstall scripts run: Claude Code's and opencode's copy the native
# binary of the platform, which npm resolves from their optionalDependencies,
# over a placeholder (Codex's wrapper finds its binary at run time).
set -euo pipefail

# command, npm package, version
CLIS=(
    "claude @anthropic-ai/claude-code 2.1.328"
    "codex @openai/codex 0.169.0"
    "opencode opencode-ai 1.18.33"
)

LOG_PREFIX=agent-clis
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v npm >/dev/null 2>&1 || die "npm not found on PATH: install Node.js (20 or later) with npm, e.g. apt-get install nodejs npm"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
ROOT="${AGENT_CLIS_CACHE:-${XDG_CACHE_HOME:-${HOME:?HOME must be set}/.cache}/persona-operator/agents}"
LINKS="$REPO/bin/agents"
mkdir -p "$ROOT" "$LINKS"
ROOT="$(cd "$ROOT" && pwd -P)"

# A CLI's --version may write into HOME (Codex makes ~/.codex): never the
# developer's.
CHECK_HOME="$(mktemp -d "${TMPDIR:-/tmp}/agent-clis-home.XXXXXX")"
STAGING=""
cleanup() {
    rm -rf "$CHECK_HOME"
    if [[ -n "$STAGING" ]]; then rm -rf "$STAGING"; fi
}
trap cleanup EXIT

# runs DIR COMMAND VERSION: the CLI installed in DIR reports VERSION.
runs() {
    local bin="$1/node_modules/.bin/$2" pattern out
    pattern="$(version_pattern "$3")"
    [[ -x "$bin" ]] || return 1
    out="$(HOME="$CHECK_HOME" "$bin" --version 2>/dev/null)" || return 1
    [[ "$out" =~ $pattern ]]
}

install_cli() {
    local cmd="$1" pkg="$2" version="$3" dest attempt
    dest="$ROOT/$cmd@$version"
    if runs "$dest" "$cmd" "$version"; then
        return 0
    fi
    exec 9>"$ROOT/.$cmd@$version.lock"
    if command -v flock >/dev/null 2>&1 && ! flock -n 9; then
        log "another invocation is installing $cmd@$version; waiting ..."
        flock 9
    fi
    if runs "$dest" "$cmd" "$version"; then
        return 0
    fi
    for attempt in 1 2 3; do
        STAGING="$(mktemp -d "$ROOT/.$cmd@$version.XXXXXX")"
        log "installing $pkg@$version (attempt $attempt) ..."
        if npm install --prefix "$STAGING" --no-save --no-audit --no-fund --no-update-notifier \
            --loglevel=warn --fetch-retries=4 "$pkg@$version" >&2 &&
            runs "$STAGING" "$cmd" "$version"; then
            rm -rf "$dest"
            mv "$STAGING" "$dest"
            STAGING=""
            log "installed $dest"
            return 0
        fi
        rm -rf "$STAGING"
        STAGING=""
        [[ $attempt -lt 3 ]] && sleep $((attempt * 10))
    done
    die "could not install $pkg@$version from the npm registry (see npm's messages above); its CLI must report $version"
}

# wanted COMMAND: the command line names COMMAND, or names none.
wanted() {
    local w
    (($# == 1)) && return 0
    for w in "${@:2}"; do [[ "$w" == "$1" ]] && return 0; done
    return 1
}

for w in "$@"; do
    known=""
    for entry in "${CLIS[@]}"; do [[ "${entry%% *}" == "$w" ]] && known=1; done
    [[ -n "$known" ]] || die "unknown agent CLI $w: the pinned ones are claude, codex and opencode"
done
for entry in "${CLIS[@]}"; do
    read -r cmd pkg version <<<"$entry"
    wanted "$cmd" "$@" || continue
    install_cli "$cmd" "$pkg" "$version"
    ln -sfn "$ROOT/$cmd@$version/node_modules/.bin/$cmd" "$LINKS/$cmd"
done
log "agent CLIs ready in $LINKS"
echo "$LINKS"
