# shellcheck shell=bash
# Sourced by scripts/image-check.sh and scripts/shards-check.sh, from the repository root after
# `set -euo pipefail`: what both checks share.
#
#   - The tally: `ok` and `fail` print one line and keep it in $results for the summary
#     ($failed counts the failures), `log` heads a step, and `cannot` ends a step that cannot
#     go on: a failure, then the summary, exit 1. The sourcing script defines `summary`, which
#     reads $results, $failed and $started (the script's start, in $SECONDS).
#   - Podman as both run it: rootful (`as_root`: as is when root, else through sudo), with runc
#     and cgroupfs (`podman_`, `podman_kube`): crun refuses hosts with hybrid cgroups.
#   - The containers' nofile/nproc limits, explicit because Podman's defaults can exceed a
#     host's hard limits: `podman_ulimits` for `podman run`, and `write_containers_conf DIR`
#     for `podman kube play`, which has no --ulimit.

started=$SECONDS
results=()
failed=0
ok() { results+=("ok    $*"); printf 'ok    %s\n' "$*"; }
fail() { results+=("FAIL  $*"); printf 'FAIL  %s\n' "$*"; failed=$((failed + 1)); }
log() { printf '\n==> %s\n' "$*"; }

# A step that cannot go on: say which and why, and end with the summary (non-zero).
cannot() {
    fail "$*"
    summary
    exit 1
}

as_root() {
    if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi
}

podman_global=(--runtime runc --cgroup-manager=cgroupfs)

podman_() {
    as_root podman "${podman_global[@]}" "$@"
}

# `podman kube ARGS...` run in DIR, with DIR/containers.conf (see write_containers_conf).
podman_kube() {
    local dir=$1
    shift
    (cd "$dir" && as_root env CONTAINERS_CONF="$dir/containers.conf" podman "${podman_global[@]}" kube "$@")
}

podman_ulimits=(--ulimit nofile=20000:20000 --ulimit nproc=4096:4096)

# DIR/containers.conf: the limits of podman_ulimits as the default of every container.
write_containers_conf() {
    printf '[containers]\ndefault_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]\n' >"$1/containers.conf"
}
