#!/usr/bin/env bash
# hack/e2e-node.sh - provide the container runtime of the e2e suite's node.
#
#   hack/e2e-node.sh            install containerd, runc and the CNI plugins with apt
#                               when one is missing (`apt-get update` first, only then)
#   hack/e2e-node.sh config DIR write into DIR the files containerd needs to run
#                               there: config.toml, the pod network's CNI conflist
#                               (a bridge) and the runc wrapper (test/e2e calls this
#                               for its temp dir, inside its network namespace)
#
# Idempotent; needs root to install. Everything a node writes stays under DIR.
set -euo pipefail

log() { printf 'e2e-node: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

CNI_BIN_DIR=/usr/lib/cni
RUNC=/usr/sbin/runc
# The pods' subnet; test/e2e's podSubnet.
POD_SUBNET="${POD_SUBNET:-10.244.0.0/24}"

install_packages() {
    local missing=()
    command -v containerd >/dev/null 2>&1 && command -v ctr >/dev/null 2>&1 || missing+=(containerd)
    [[ -x "$RUNC" ]] || missing+=(runc)
    [[ -x "$CNI_BIN_DIR/loopback" ]] || missing+=(containernetworking-plugins)
    if ((${#missing[@]} == 0)); then
        return 0
    fi
    [[ "$(id -u)" == 0 ]] || die "installing ${missing[*]} needs root (the e2e suite runs containers as root)"
    command -v apt-get >/dev/null 2>&1 || die "${missing[*]} missing and apt-get is not available to install them"
    log "installing ${missing[*]} ..."
    # policy-rc.d, if any, keeps the package's own containerd service from starting.
    apt-get update -qq >&2 || die "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 ||
        die "apt-get install ${missing[*]} failed"
}

write_config() {
    local dir="$1"
    mkdir -p "$dir/cni" "$dir/root" "$dir/state"
    dir="$(cd "$dir" && pwd -P)"
    # The CRI sandbox asks runc for oom_score_adj -998; without CAP_SYS_RESOURCE
    # (as in unprivileged CI containers) runc fails to lower it ("can't get final
    # child's PID from pipe: EOF"). The wrapper drops a negative oomScoreAdj
    # from the bundle before `runc create`.
    cat >"$dir/runc-wrapper" <<EOF
#!/bin/sh
bundle=""
prev=""
create=""
for a in "\$@"; do
    [ "\$a" = create ] && create=1
    [ "\$prev" = --bundle ] && bundle="\$a"
    case "\$a" in --bundle=*) bundle="\${a#--bundle=}" ;; esac
    prev="\$a"
done
if [ -n "\$create" ] && [ -n "\$bundle" ] && [ -f "\$bundle/config.json" ]; then
    # config.json is compact JSON, and oomScoreAdj never comes first in "process".
    sed -i 's/,"oomScoreAdj":-[0-9]*//' "\$bundle/config.json"
fi
exec $RUNC "\$@"
EOF
    chmod 0755 "$dir/runc-wrapper"
    # The pod network: a bridge with private addresses from host-local, whose
    # leases stay under DIR. The suite runs the whole node in a network
    # namespace of its own, so the bridge and the pods' addresses exist only
    # there, and nothing masquerades or routes them out.
    cat >"$dir/cni/10-pods.conflist" <<EOF
{"cniVersion": "1.0.0", "name": "pods", "plugins": [
  {"type": "bridge", "bridge": "cni0", "isGateway": true, "isDefaultGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "${POD_SUBNET}"}]], "dataDir": "$dir/ipam"}}]}
EOF
    cat >"$dir/config.toml" <<EOF
version = 2
root = "$dir/root"
state = "$dir/state"
[grpc]
  address = "$dir/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "docker.io/local/pause:e2e"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN_DIR"
    conf_dir = "$dir/cni"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "$dir/runc-wrapper"
        Root = "$dir/runc"
EOF
}

case "${1:-}" in
"") install_packages ;;
config)
    [[ -n "${2:-}" ]] || die "usage: $0 config DIR"
    write_config "$2"
    ;;
*) die "usage: $0 [config DIR]" ;;
esac
