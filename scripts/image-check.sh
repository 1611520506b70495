#!/usr/bin/env bash
# Builds the container image with Podman and checks it without a GPU, the way deploy/k8s runs it.
#
# Usage: scripts/image-check.sh
#
#   1. Bases: the Dockerfile's upstream images (rust:1-bookworm, nvidia/cuda) when they can be
#      pulled; otherwise a local Debian bookworm base made with `debootstrap --variant=minbase`
#      and `podman import` (cached), with the binary from scripts/build-portable.sh
#      (--build-arg BINARY=portable: the build stage needs a Rust toolchain the local base lacks).
#   2. Builds the image (podman build --format docker --network host), tagged $IMAGE.
#   3. Runs it as deploy/k8s/deployment.yaml does: read-only root file system, the config, output
#      and kernel-cache volumes, a tmpfs for /tmp, uid/gid 10001, every capability dropped, no
#      privilege escalation. Then checks that
#        - `serve` starts with a config whose pipeline reads a generated clip (in a loop, paced
#          at its frame rate) and writes /data/out/clip.ts; /healthz answers from the host;
#        - the image's HEALTHCHECK passes (podman healthcheck run);
#        - `podman stop` drains and finalises the output within the stop grace period: the
#          file plays (ffprobe on the host decodes it) and holds as many frames as serve said
#          it wrote;
#        - `convstream demo --device cpu` works in the container, and its .mp4 is H.264 (libx264,
#          or OpenH264 in an LGPL build);
#        - /usr/share/licenses/convstream holds the linked libraries' licences and says which
#          terms the binary is under;
#        - `convstream doctor` says plainly that there is no GPU;
#        - deploy/k8s played with `podman kube play` (ConfigMap, PersistentVolumeClaim,
#          Deployment): the pod gets ready, writes what a UDP sender sends, and drains on stop.
#   4. Prints the image's size and one line per check (ok / FAIL), and exits non-zero if any
#      check failed. A step that cannot run on this machine is a failure that says why, never a
#      skip.
#
# Needs root (or sudo), podman, runc, catatonit (kube play's pause image), debootstrap (for the
# local base), curl and ffprobe; CI
# installs them (.ci/run). Containers run with --runtime runc --cgroup-manager=cgroupfs and
# explicit nofile/nproc limits: crun refuses hosts with hybrid cgroups, and Podman's default
# limits can exceed a host's hard limits.
#
# Environment:
#   IMAGE                      the tag to build (default localhost/convstream:local)
#   CONVSTREAM_IMAGE_BASE      auto (default: upstream if pullable, else local), upstream, local
#   CONVSTREAM_IMAGE_CACHE     where the local base's root file system is cached as a tarball
#                              (default ~/.cache/convstream/image-base)
#   CONVSTREAM_PORTABLE_BUILD  0: use dist/portable/convstream as it is instead of running
#                              scripts/build-portable.sh (which rebuilds only what changed)
#   DEBIAN_MIRROR              for debootstrap (default http://deb.debian.org/debian)
#   KEEP                       1: keep the work folder and the container for inspection
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# The tally (ok, fail, log, cannot; summary is below), as_root, podman_, the containers' limits.
source scripts/podman-env.sh

image="${IMAGE:-localhost/convstream:local}"
base_mode="${CONVSTREAM_IMAGE_BASE:-auto}"
cache="${CONVSTREAM_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/convstream/image-base}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
local_base=localhost/convstream-base:bookworm
upstream_build=docker.io/library/rust:1-bookworm
upstream_runtime="docker.io/nvidia/cuda:$(sed -n 's/^ARG RUNTIME_IMAGE=nvidia\/cuda://p' Dockerfile)"
container="convstream-image-check-$$"
# Above server.shutdown_timeout (10 s) of the config below, as deployment.yaml's
# terminationGracePeriodSeconds (30) is.
stop_grace=30

use_upstream=0

summary() {
    log "image-check summary ($((SECONDS - started)) s)"
    local line
    for line in "${results[@]}"; do echo "$line"; done
    # What no run of this script covers, said every time so that a pass is not read as more.
    echo "not covered: GPU pass-through (no GPU here; 'docker run --gpus 1 IMAGE doctor' on a GPU host)"
    if ((!use_upstream)); then
        echo "not covered: the upstream bases ($upstream_build build stage, $upstream_runtime runtime):"
        echo "             the image ran on a local Debian bookworm base with the portable binary"
    fi
    if ((failed)); then
        echo "image-check: $failed check(s) failed"
    else
        echo "image-check: every check passed"
    fi
}

work="$(mktemp -d "${TMPDIR:-/tmp}/convstream-image-check.XXXXXX")"
cleanup() {
    if [[ ${KEEP:-0} == 1 ]]; then
        echo "kept: $work and container $container"
        return
    fi
    # --ignore: a container that was never made must not keep the other from going.
    podman_ rm -f --ignore -t 0 "$container" "$container-live" >/dev/null 2>&1 || true
    as_root rm -rf "$work"
}
trap cleanup EXIT

# ---------------------------------------------------------------------------------------------
log "tools"
missing=()
for tool in podman runc curl ffmpeg ffprobe jq; do
    command -v "$tool" >/dev/null || missing+=("$tool")
done
((${#missing[@]} == 0)) || cannot "tools: ${missing[*]} not installed (apt-get install podman runc curl ffmpeg jq)"
[[ $(id -u) -eq 0 ]] || command -v sudo >/dev/null || cannot "tools: needs root or sudo (podman runs rootful)"
ok "tools: $(podman --version), $(runc --version | head -n 1)"

# ---------------------------------------------------------------------------------------------
log "base images ($base_mode)"
pullable() {
    # Docker Hub may be unreachable (air-gapped hosts, CI): fail fast rather than hang.
    podman_ image exists "$1" || timeout 120 podman_ pull -q "$1" >/dev/null 2>&1
}
case "$base_mode" in
    upstream) use_upstream=1 ;;
    local) ;;
    auto)
        if pullable "$upstream_build" && pullable "$upstream_runtime"; then
            use_upstream=1
        else
            echo "$upstream_build or $upstream_runtime cannot be pulled: using a local Debian base"
        fi
        ;;
    *) cannot "CONVSTREAM_IMAGE_BASE=$base_mode: expected auto, upstream or local" ;;
esac

build_args=(--build-arg "VCS_REF=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)")
if ((use_upstream)); then
    pullable "$upstream_build" || cannot "base: $upstream_build cannot be pulled (CONVSTREAM_IMAGE_BASE=upstream)"
    pullable "$upstream_runtime" || cannot "base: $upstream_runtime cannot be pulled (CONVSTREAM_IMAGE_BASE=upstream)"
    ok "base: upstream $upstream_build and $upstream_runtime"
    # Fully qualified: Podman resolves the Dockerfile's short names only where registries.conf
    # names a search registry.
    build_args+=(--build-arg "BUILD_IMAGE=$upstream_build" --build-arg "RUNTIME_IMAGE=$upstream_runtime")
else
    tarball="$cache/bookworm-minbase.tar"
    if [[ ! -s $tarball ]]; then
        command -v debootstrap >/dev/null || cannot "base: debootstrap not installed (apt-get install debootstrap)"
        log "making the local base with debootstrap (cached in $tarball)"
        rootfs="$work/rootfs"
        as_root debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 \
            || { tail -n 20 "$work/debootstrap.log"; cannot "base: debootstrap --variant=minbase bookworm from $mirror failed"; }
        # The image's own apt-get must reach the same mirror and its security updates.
        as_root tee "$rootfs/etc/apt/sources.list" >/dev/null <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
EOF
        as_root rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
        mkdir -p "$cache"
        as_root tar -C "$rootfs" --numeric-owner -cf "$tarball.partial" .
        as_root mv "$tarball.partial" "$tarball"
        as_root rm -rf "$rootfs"
    fi
    # Imported again when the cached tarball is newer than the image (or the image is gone).
    tar_time=$(stat -c %Y "$tarball")
    image_time=$(podman_ image inspect -f '{{index .Labels "org.convstream.base-tarball-mtime"}}' \
        "$local_base" 2>/dev/null || true)
    if [[ $image_time != "$tar_time" ]]; then
        podman_ import --change "LABEL org.convstream.base-tarball-mtime=$tar_time" \
            --change 'CMD ["/bin/bash"]' "$tarball" "$local_base" >/dev/null \
            || cannot "base: podman import $tarball failed"
    fi
    ok "base: local $local_base (debootstrap minbase bookworm, $(du -h "$tarball" | cut -f1) tarball)"

    if [[ ${CONVSTREAM_PORTABLE_BUILD:-1} != 0 ]]; then
        log "the portable binary (scripts/build-portable.sh)"
        portable_started=$SECONDS
        CONVSTREAM_PORTABLE_TESTS=0 scripts/build-portable.sh all >"$work/build-portable.log" 2>&1 \
            || { tail -n 30 "$work/build-portable.log"; cannot "portable binary: scripts/build-portable.sh failed"; }
        echo "scripts/build-portable.sh took $((SECONDS - portable_started)) s"
    fi
    [[ -x dist/portable/convstream ]] || cannot "portable binary: dist/portable/convstream is missing (scripts/build-portable.sh)"
    ok "portable binary: $(dist/portable/convstream --version)"
    build_args+=(--build-arg "BUILD_IMAGE=$local_base" --build-arg "RUNTIME_IMAGE=$local_base"
        --build-arg BINARY=portable)
fi

# ---------------------------------------------------------------------------------------------
log "podman build -t $image"
build_started=$SECONDS
if podman_ build --format docker --network host "${build_args[@]}" -t "$image" . ; then
    ok "build: $image in $((SECONDS - build_started)) s"
else
    cannot "build: podman build failed (output above)"
fi
size_bytes=$(podman_ image inspect -f '{{.Size}}' "$image")
size="$((size_bytes / 1000000)) MB"
ok "size: $image is $size ($size_bytes bytes)"

# ---------------------------------------------------------------------------------------------
# The container's volumes: the config (read-only), the outputs and the kernel cache, owned by
# the image's user as fsGroup makes them in Kubernetes.
mkdir -p "$work/config" "$work/out" "$work/cache" "$work/in"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null \
    || echo 18686)

# The same settings as deployment.yaml's securityContext and volumes.
run_args=(
    --read-only --tmpfs /tmp:rw,size=256m,mode=1777
    --user 10001:10001 --cap-drop=all --security-opt no-new-privileges
    "${podman_ulimits[@]}"
    -e CONVSTREAM_KERNEL_CACHE=/var/cache/convstream/kernels
    -v "$work/out:/data/out"
    -v "$work/cache:/var/cache/convstream"
)
as_root chown -R 10001:10001 "$work/out" "$work/cache" "$work/in"

log "convstream demo --device cpu (in the container)"
if podman_ run --rm "${run_args[@]}" -v "$work/in:/data/in" --entrypoint convstream "$image" \
    demo --device cpu --dir /data/in >"$work/demo.log" 2>&1 \
    && grep -q 'filtered video written to /data/in/filtered.mp4' "$work/demo.log" \
    && [[ -s $work/in/sample.mp4 ]]; then
    ok "demo: $(grep -o 'demo: [0-9]* frames in, [0-9]* out[^;]*' "$work/demo.log")"
else
    cat "$work/demo.log"
    fail "demo: convstream demo --device cpu did not write /data/in/filtered.mp4"
fi

# The image's default .mp4 encoder is libx264 (OpenH264 in a CONVSTREAM_PORTABLE_GPL=0 build):
# users of the image get H.264 either way, not MPEG-4 Part 2.
codec=$(ffprobe -v error -select_streams v:0 -show_entries stream=codec_name -of csv=p=0 "$work/in/filtered.mp4" 2>/dev/null || true)
if [[ $codec == h264 ]]; then
    ok "demo: the default .mp4 video is H.264 ($(grep -o 'video encoder: [a-z0-9_]*' "$work/demo.log" | head -n 1))"
else
    fail "demo: the default .mp4 video is ${codec:-unreadable}, not H.264"
fi

log "licences (in the container)"
# The texts of what the binary links, and the note of which terms it goes under as a whole.
licences=$(podman_ run --rm "${run_args[@]}" --entrypoint sh "$image" -c \
    'cd /usr/share/licenses/convstream && ls -d */ | tr -d / | tr "\n" " " && head -n 1 README' 2>"$work/licences.err" || true)
if [[ $licences == *ffmpeg* && $licences == *libvpx* && $licences == *"is distributed under"* ]]; then
    ok "licences: /usr/share/licenses/convstream: $licences"
else
    fail "licences: /usr/share/licenses/convstream is missing or incomplete: $licences $(tail -n 3 "$work/licences.err")"
fi

log "convstream doctor (in the container)"
podman_ run --rm "${run_args[@]}" --entrypoint convstream "$image" doctor >"$work/doctor.log" 2>&1 || true
no_gpu=$(grep -m 1 '^CUDA: unavailable: no usable GPU' "$work/doctor.log" || true)
if [[ -n $no_gpu ]] && grep -q -- '--device auto would use: cpu' "$work/doctor.log"; then
    ok "doctor: \"$(cut -c1-100 <<<"$no_gpu")...\", --device auto would use: cpu"
else
    cat "$work/doctor.log"
    fail "doctor: the report does not say plainly that there is no GPU"
fi

# ---------------------------------------------------------------------------------------------
log "convstream serve, run as deploy/k8s runs it"
# deploy/config.toml's server and log settings; a file pipeline instead of its UDP listener,
# reading the demo's clip in a loop at its frame rate, so that it is still writing on stop.
cat >"$work/config/config.toml" <<'EOF'
[server]
listen = "0.0.0.0:8686"
insecure_no_token = true
shutdown_timeout = 10.0
watch = true

[log]
level = "info"
format = "json"

[[pipeline]]
name = "clip"

[pipeline.source]
url = "/data/in/sample.mp4"
loop = true
realtime = true

[pipeline.filter]
mask = "gaussian:size=5"
planes = "luma"
border = "reflect"
device = "auto"

[pipeline.sink]
url = "/data/out/clip.ts"
EOF
if [[ ! -s $work/in/sample.mp4 ]]; then
    cannot "serve: no clip to read (the demo step made none)"
fi
if ! podman_ run -d --name "$container" "${run_args[@]}" -v "$work/config:/etc/convstream:ro" -v "$work/in:/data/in:ro" \
    -p "127.0.0.1:$port:8686" --stop-timeout "$stop_grace" "$image" >/dev/null 2>"$work/run.err"; then
    cat "$work/run.err"
    cannot "serve: podman run failed (output above)"
fi

# The API answers only Host names that carry its listen port (its guard against DNS
# rebinding), and the host port published here is a free one, not 8686: name the container's
# port, as a proxy in front of it would.
api() {
    curl -sS -H "Host: localhost:8686" "http://127.0.0.1:$port$1" 2>/dev/null || true
}

healthy=0
for _ in $(seq 1 60); do
    if curl -fsS -o /dev/null "http://127.0.0.1:$port/healthz" 2>/dev/null; then
        healthy=1
        break
    fi
    [[ $(podman_ inspect -f '{{.State.Running}}' "$container" 2>/dev/null) == true ]] || break
    sleep 0.5
done
if ((healthy)); then
    ok "healthz: 200 from the host (127.0.0.1:$port -> 8686)"
else
    podman_ logs "$container" 2>&1 | tail -n 20
    fail "healthz: no answer from the host on 127.0.0.1:$port"
fi

# Ready once the file pipeline's engine is built: right after /healthz it may still be
# starting (a fresh machine compiles and probes slower), so poll against a deadline.
ready=0
for _ in $(seq 1 120); do
    readiness=$(api /readyz)
    if [[ $(jq -r '.ready' <<<"$readiness" 2>/dev/null) == true ]]; then
        ready=1
        break
    fi
    [[ $(podman_ inspect -f '{{.State.Running}}' "$container" 2>/dev/null) == true ]] || break
    sleep 0.5
done
if ((ready)); then
    ok "readyz: $readiness"
else
    fail "readyz: not ready within 60 s: $readiness"
fi

if podman_ healthcheck run "$container" >"$work/healthcheck.log" 2>&1; then
    ok "HEALTHCHECK: podman healthcheck run passed: $(podman_ image inspect -f '{{json .Config.Healthcheck.Test}}' "$image" 2>/dev/null)"
else
    cat "$work/healthcheck.log"
    fail "HEALTHCHECK: podman healthcheck run failed"
fi

# What the running process sees: the user, its capabilities, which places it can write.
# (Unwritable places are tried with a file that cannot already exist.)
sandbox=$(podman_ exec "$container" sh -c 'echo "uid=$(id -u) gid=$(id -g)"
    grep ^CapEff /proc/1/status | tr -d "\t"
    for dir in / /etc /usr/local/bin /etc/convstream /tmp /data/out /var/cache/convstream; do
        if touch "$dir/.image-check-$$" 2>/dev/null; then rm -f "$dir/.image-check-$$"; echo "$dir=rw"; else echo "$dir=ro"; fi
    done' 2>&1 | tr '\n' ' ' || true)
expected='uid=10001 gid=10001 CapEff:0000000000000000 /=ro /etc=ro /usr/local/bin=ro /etc/convstream=ro /tmp=rw /data/out=rw /var/cache/convstream=rw '
if [[ $sandbox == "$expected" ]]; then
    ok "sandbox: $sandbox"
else
    fail "sandbox: got \"$sandbox\", expected \"$expected\""
fi

# Let it write a while, and check that it does.
written=0
for _ in $(seq 1 40); do
    written=$(api /pipelines/clip | jq -r '.counters.frames_written // 0' 2>/dev/null || echo 0)
    ((written >= 50)) && break
    sleep 0.5
done
state=$(api /pipelines/clip | jq -r '.state // "unknown"' 2>/dev/null || true)
if ((written >= 50)) && [[ $state == running ]]; then
    ok "pipeline: running, $written frames written to /data/out/clip.ts"
else
    podman_ logs "$container" 2>&1 | tail -n 20
    fail "pipeline: state $state, $written frames written (expected running and at least 50)"
fi

log "podman stop (grace period $stop_grace s)"
stop_started=$SECONDS
podman_ stop -t "$stop_grace" "$container" >/dev/null 2>&1 || true
stop_seconds=$((SECONDS - stop_started))
exit_code=$(podman_ inspect -f '{{.State.ExitCode}}' "$container" 2>/dev/null || echo unknown)
podman_ logs "$container" >"$work/serve.log" 2>&1 || true
# "clip: 185 frames in, 185 out, ..." is serve's own account of the pipeline when it ends.
reported=$(grep -o '"message":"clip: [0-9]* frames in, [0-9]* out' "$work/serve.log" \
    | grep -o '[0-9]* out' | grep -o '[0-9]*' | tail -n 1 || true)
if [[ $exit_code == 0 ]] && ((stop_seconds < stop_grace)) \
    && grep -q 'every pipeline stopped; outputs finalised' "$work/serve.log"; then
    ok "stop: exit 0 after $stop_seconds s (< $stop_grace s), \"every pipeline stopped; outputs finalised\""
else
    tail -n 20 "$work/serve.log"
    fail "stop: exit code $exit_code after $stop_seconds s (grace $stop_grace s); no \"outputs finalised\" in the log"
fi

output="$work/out/clip.ts"
if [[ -s $output ]]; then
    # Decoding every frame proves the file plays to its end, not just that its header parses.
    probed=$(ffprobe -v error -count_frames -select_streams v:0 \
        -show_entries stream=codec_name,width,height,nb_read_frames -of csv=p=0 "$output" 2>"$work/ffprobe.err" \
        | awk 'NF' | head -n 1 || true)
    frames=${probed##*,}
    if [[ -n $reported && $frames == "$reported" && ! -s $work/ffprobe.err ]]; then
        ok "output: /data/out/clip.ts plays ($probed: codec,width,height,frames), $frames frames as serve reported"
    else
        cat "$work/ffprobe.err"
        fail "output: ffprobe read \"$probed\", serve reported ${reported:-no count} frames written"
    fi
else
    fail "output: /data/out/clip.ts is missing or empty"
fi

# ---------------------------------------------------------------------------------------------
log "the baked config (deploy/config.toml): a live UDP input"
# The image as shipped: its own config, whose pipeline listens for MPEG-TS on UDP port 5000.
# Before anything is sent it must be ready (a Kubernetes Service routes senders only to ready
# pods), then take a stream sent from the host.
live="$container-live"   # removed by cleanup too
udp_port=$(python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null \
    || echo 15000)
as_root rm -rf "$work/out"/*
if podman_ run -d --name "$live" "${run_args[@]}" \
    -p "127.0.0.1:$port:8686" -p "127.0.0.1:$udp_port:5000/udp" --stop-timeout "$stop_grace" \
    "$image" >/dev/null 2>"$work/run-live.err"; then
    for _ in $(seq 1 60); do
        [[ $(api /readyz | jq -r '.pipelines.cam1 // empty' 2>/dev/null) == starting ]] && break
        sleep 0.5
    done
    readiness=$(api /readyz)
    if [[ $(jq -r '.ready' <<<"$readiness" 2>/dev/null) == true \
        && $(jq -r '.pipelines.cam1' <<<"$readiness" 2>/dev/null) == starting ]]; then
        ok "live readyz: ready before any sender: $readiness"
    else
        fail "live readyz: expected ready with cam1 starting, got $readiness"
    fi
    # Up to ten seconds of the clip, paced, as a sender would. The clip is MPEG-4 Part 2 from
    # MP4, whose decoder setup sits in the container's header: dump_extra repeats it in-band,
    # since an MPEG-TS receiver that joins late has nothing else to size its decoder from.
    ffmpeg -hide_banner -loglevel error -re -t 10 -i "$work/in/sample.mp4" -c copy -bsf:v dump_extra \
        -f mpegts "udp://127.0.0.1:$udp_port?pkt_size=1316" &
    sender=$!
    received=0
    live_state=unknown
    for _ in $(seq 1 20); do
        sleep 0.5
        received=$(api /pipelines/cam1 | jq -r '.counters.frames_written // 0' 2>/dev/null || echo 0)
        live_state=$(api /pipelines/cam1 | jq -r '.state // "unknown"' 2>/dev/null || true)
        [[ $live_state == running ]] && ((received >= 25)) && break
    done
    kill "$sender" 2>/dev/null || true
    wait "$sender" 2>/dev/null || true
    podman_ stop -t "$stop_grace" "$live" >/dev/null 2>&1 || true
    podman_ logs "$live" >"$work/live.log" 2>&1 || true
    live_frames=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames \
        -of csv=p=0 "$work/out/cam1.ts" 2>/dev/null | awk 'NF' | head -n 1 || true)
    if [[ $live_state == running ]] && ((received > 0)) && [[ -n $live_frames ]] && ((live_frames >= received)); then
        ok "live input: $received frames written while running, /data/out/cam1.ts holds $live_frames after stop"
    else
        tail -n 20 "$work/live.log"
        fail "live input: state $live_state, $received frames written, cam1.ts holds ${live_frames:-no} frames"
    fi
    podman_ rm -f -t 0 "$live" >/dev/null 2>&1 || true
else
    cat "$work/run-live.err"
    fail "live: podman run of the image with its baked config failed"
fi

# ---------------------------------------------------------------------------------------------
log "the README's Docker example, with Podman"
# README.md's Docker section, as written but for the engine: `docker build -t convstream .` is
# the build above (the same Dockerfile, with the local bases where Docker Hub cannot be reached),
# so the image is tagged `convstream` too; each `docker run` line runs as `podman run` with this
# host's runtime settings and without `--gpus` (no GPU here), and the service it starts must
# answer /healthz on the published port and stop with exit 0.
readme_name=convstream-readme
podman_ tag "$image" localhost/convstream:latest
podman_ rm -f --ignore -t 0 convstream "$readme_name" >/dev/null 2>&1 || true
readme_runs=$(awk '/^## Docker/{inside = 1; next} /^## /{inside = 0} inside && /^docker run /' README.md)
if [[ -z $readme_runs ]]; then
    fail "readme: no \`docker run\` line in README.md's Docker section"
fi
while IFS= read -r line; do
    [[ -n $line ]] || continue
    eval "set -- ${line#docker run }"
    args=()
    while (($#)); do
        case "$1" in
            --gpus) shift ;;
            --name) args+=(--name "$readme_name"); shift ;;
            *) args+=("$1") ;;
        esac
        shift
    done
    if ! podman_ run "${podman_ulimits[@]}" "${args[@]}" >"$work/readme-run.log" 2>&1; then
        cat "$work/readme-run.log"
        fail "readme: \`$line\` failed with Podman"
        continue
    fi
    answered=0
    for _ in $(seq 1 60); do
        if curl -fsS -o /dev/null http://127.0.0.1:8686/healthz 2>/dev/null; then
            answered=1
            break
        fi
        sleep 0.5
    done
    podman_ stop -t 20 "$readme_name" >/dev/null 2>&1 || true
    readme_exit=$(podman_ inspect "$readme_name" --format '{{.State.ExitCode}}' 2>/dev/null || true)
    podman_ logs "$readme_name" >"$work/readme-serve.log" 2>&1 || true
    podman_ rm -f --ignore -t 0 "$readme_name" >/dev/null 2>&1 || true
    if ((answered)) && [[ $readme_exit == 0 ]]; then
        ok "readme: \`$line\` served /healthz on 127.0.0.1:8686 and stopped with exit 0"
    else
        tail -n 10 "$work/readme-serve.log"
        fail "readme: \`$line\`: /healthz answered: $answered, exit on stop: ${readme_exit:-none}"
    fi
done <<<"$readme_runs"

# ---------------------------------------------------------------------------------------------
log "deploy/k8s played with podman kube play: ready, serving, drained"
# The manifests as kustomization.yaml lists them (its only transformation, the image name, is
# applied here: the image built above), played as Kubernetes would run them: the ConfigMap
# mounted at /etc/convstream, the PersistentVolumeClaim at /data/out, the Deployment's security
# context, ports and grace period. One change for a host without a GPU: the pipeline's
# device = "cuda" becomes "cpu". Ready (/readyz), serving (frames sent over UDP written), and
# drained (the pod stopped with the Deployment's grace: exit 0, every written frame readable).
kube="$work/kube"
mkdir -p "$kube"
for resource in $(awk '/^resources:/{f=1; next} f && /^  - /{print $2} f && !/^  - /{f=0}' deploy/k8s/kustomization.yaml); do
    cat "deploy/k8s/$resource"
    printf '\n---\n'
done | sed -e "s|image: convstream:latest|image: $image|" -e 's|device = "cuda"|device = "cpu"|' >"$kube/deploy.yaml"
write_containers_conf "$kube"
kube_() { podman_kube "$kube" "$@"; }
kube_pod=""
if kube_ play deploy.yaml >"$kube/play.log" 2>&1; then
    kube_pod=$(podman_ pod ps --format '{{.Name}}' --filter name=convstream | head -n 1 || true)
    kube_name=$(podman_ ps -a --format '{{.Names}}' --filter pod="$kube_pod" | grep -- '-convstream$' | head -n 1 || true)
    kube_ip=$(podman_ inspect "$kube_name" --format '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' 2>/dev/null || true)
    kube_api() { curl -s -m 5 "http://$kube_ip:8686$1" || true; }
    ready=""
    for _ in $(seq 1 120); do
        ready=$(kube_api /readyz)
        [[ $(jq -r '.ready' <<<"$ready" 2>/dev/null) == true ]] && break
        sleep 0.5
    done
    if [[ $(jq -r '.ready' <<<"$ready" 2>/dev/null) == true ]]; then
        ok "kube: pod $kube_pod ready at $kube_ip: $ready"
    else
        podman_ logs "$kube_name" 2>&1 | tail -n 20 || true
        fail "kube: pod ${kube_pod:-none} not ready within 60 s: ${ready:-no answer}"
    fi
    ffmpeg -hide_banner -loglevel error -re -t 6 -i "$work/in/sample.mp4" -c copy -bsf:v dump_extra \
        -f mpegts "udp://$kube_ip:5000?pkt_size=1316" &
    sender=$!
    kube_written=0
    for _ in $(seq 1 24); do
        sleep 0.5
        kube_written=$(kube_api /pipelines/cam1 | jq -r '.counters.frames_written // 0' 2>/dev/null || echo 0)
        ((kube_written >= 25)) && break
    done
    kill "$sender" 2>/dev/null || true
    wait "$sender" 2>/dev/null || true
    if ((kube_written > 0)); then
        ok "kube: serving, $kube_written frames written to the claim's volume"
    else
        kube_api /pipelines/cam1 | head -c 600
        fail "kube: no frame written from the UDP sender"
    fi
    grace=$(awk '/terminationGracePeriodSeconds:/{print $2; exit}' deploy/k8s/deployment.yaml)
    podman_ pod stop -t "${grace:-30}" "$kube_pod" >/dev/null 2>&1 || true
    kube_exit=$(podman_ inspect "$kube_name" --format '{{.State.ExitCode}}' 2>/dev/null || true)
    podman_ logs "$kube_name" >"$kube/pod.log" 2>&1 || true
    volume=$(podman_ volume inspect convstream-output --format '{{.Mountpoint}}' 2>/dev/null || true)
    kube_frames=$(as_root ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames \
        -of csv=p=0 "$volume/cam1.ts" 2>/dev/null | awk 'NF' | head -n 1 || true)
    if [[ $kube_exit == 0 ]] && grep -q "outputs finalised" "$kube/pod.log" && [[ -n $kube_frames ]] && ((kube_frames >= kube_written)); then
        ok "kube: drained on stop (exit 0, outputs finalised), cam1.ts holds $kube_frames frames"
    else
        tail -n 10 "$kube/pod.log" || true
        fail "kube: stop gave exit ${kube_exit:-none}, cam1.ts holds ${kube_frames:-no} frames of $kube_written"
    fi
else
    cat "$kube/play.log"
    fail "kube: podman kube play of deploy/k8s failed"
fi
kube_ down deploy.yaml >/dev/null 2>&1 || true
podman_ volume rm -f convstream-output >/dev/null 2>&1 || true

summary
exit $((failed > 0))
