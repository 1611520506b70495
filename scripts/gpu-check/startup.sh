#!/usr/bin/env bash
# startup: kernels on a fresh host, whole commands against FFmpeg's decode-only, Python's first pass
#
# Whole commands against FFmpeg's decode-only, and the first run on a fresh host, on a GPU host
# from the portable build:
#   1. kernels: a fresh process with an empty kernel cache compiles nothing (the kernel pack
#      beside the binary has the kernels; `--log-level debug` lines say where each came from),
#      and its results equal the CPU engine's, byte for byte (13x13 gaussian, identity, edge);
#      the same first run without the pack, for the compile time it saves;
#   2. whole commands: `convstream run` (13x13 gaussian on every plane, and identity, software
#      decoding, null output) against `ffmpeg -i CLIP -f null -` on a 1,000-frame and a
#      10,000-frame 1080p clip, 5 alternating rounds, medians, ratios (targets: >= 90% and
#      >= 98%); also convstream with the driver's usual exit (CONVSTREAM_GPU_TEARDOWN=1), for
#      what the exit hand-off saves;
#   3. Python: `convstream.read(CLIP, decoder="nvdec", as_="torch")` frames/s on the first and
#      second pass of a fresh process (the wheel's kernel pack), and with the pack off;
#      PyNvVideoCodec's demuxer and decoder into torch beside it where it imports.
#
#   scripts/gpu-check.sh startup --make-media DIR   make c1000.mp4 here (Python with NumPy, and an
#                                                  ffmpeg CLI with libx264: $FFMPEG, else ffmpeg)
#   scripts/gpu-check.sh startup [DIST] [MEDIA]     run the checks (DIST: dist/portable; MEDIA:
#                                                  DIST/startup-media, holding c1000.mp4)
#
# DIST holds convstream, convstream-kernels.pack (scripts/build-portable.sh binary), ffmpeg
# (scripts/build-portable.sh ffmpeg-cli, with libopenh264.so.7 beside it) and wheels/ (the
# portable wheel, scripts/build-wheel.sh --portable). The 10,000-frame clip is c1000.mp4 looped
# ten times by stream copy on the host. Environment: PYTHON (the interpreter with torch;
# default python3), ROUNDS (5), CONVSTREAM_CHECK_SKIP ("python", "long" or both, comma-separated),
# FFMPEG (default DIST/ffmpeg), DEVICE (cuda; cpu runs the script's logic on a host without a GPU).
# Results go to $OUT (or ./startup-results): startup-check.log, runs.jsonl (one line per timed
# command), summary.json.
set -uo pipefail

make_media() {
    local dir="$1"
    mkdir -p "$dir"
    # A moving, textured picture with noise (a zone plate drifting over gradients): H.264 at
    # 3 Mb/s, which FFmpeg decodes at about the rate of real 1080p clips (GPU.md), 25 frames/s,
    # a keyframe every 250 frames; about 15 MB.
    python3 - "$dir/c1000.y4m" 1920 1080 1000 <<'EOF'
import sys
import numpy as np
path, w, h, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
y, x = np.mgrid[0:h, 0:w].astype(np.float32)
rng = np.random.default_rng(7)
noise = rng.normal(0, 6, (4, h, w)).astype(np.float32)
with open(path, "wb") as f:
    f.write(f"YUV4MPEG2 W{w} H{h} F25:1 Ip A1:1 C420jpeg\n".encode())
    for i in range(n):
        plate = 127 + 100 * np.sin(((x - w / 2 + 4 * i) ** 2 + (y - h / 2) ** 2) / 4000.0 + i * 0.15)
        luma = np.clip(0.6 * plate + 0.4 * ((x + 3 * i) % 256) + noise[i % 4], 0, 255).astype(np.uint8)
        u = np.clip(128 + 40 * np.sin(x[::2, ::2] / 50.0 + i * 0.1), 0, 255).astype(np.uint8)
        v = np.clip(128 + 40 * np.cos(y[::2, ::2] / 40.0 + i * 0.1), 0, 255).astype(np.uint8)
        f.write(b"FRAME\n"); f.write(luma.tobytes()); f.write(u.tobytes()); f.write(v.tobytes())
EOF
    "${FFMPEG:-ffmpeg}" -hide_banner -loglevel error -y -i "$dir/c1000.y4m" -c:v libx264 -preset veryfast \
        -b:v 3M -maxrate 4M -bufsize 6M -g 250 -pix_fmt yuv420p -movflags +faststart "$dir/c1000.mp4"
    rm -f "$dir/c1000.y4m"
    ls -l "$dir"
}

if [[ ${1:-} == --make-media ]]; then
    make_media "${2:?usage: $0 --make-media DIR}"
    exit 0
fi

dist="${1:-dist/portable}"
dist="$(cd "$dist" && pwd)" || exit 2
media="${2:-$dist/startup-media}"
bin="$dist/convstream"
[[ -x $bin && -f $media/c1000.mp4 ]] || { echo "usage: $0 [DIST] [MEDIA]: no $bin or no $media/c1000.mp4" >&2; exit 2; }
media="$(cd "$media" && pwd)"
ffmpeg_cli="${FFMPEG:-$dist/ffmpeg}"
python="${PYTHON:-python3}"
rounds="${ROUNDS:-5}"
device="${DEVICE:-cuda}"
skip="${CONVSTREAM_CHECK_SKIP:-}"
out="${OUT:-startup-results}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
log="$out/startup-check.log"
runs="$out/runs.jsonl"
: >"$runs"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
# The FFmpeg CLI's OpenH264 comes beside it.
export LD_LIBRARY_PATH="$dist${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
failures=0

step() { printf '\n=== %s\n' "$*" | tee -a "$log"; }
record() { # record DESCRIPTION STATUS
    if [[ $2 == 0 ]]; then echo "ok: $1" | tee -a "$log"; else echo "FAILED: $1" | tee -a "$log"; failures=$((failures + 1)); fi
}
info() { echo "info: $*" | tee -a "$log"; }

# timed LABEL CLIP FRAMES COMMAND...: runs the command (output to LABEL.log), appends its wall
# clock as parent sees it (start to exit) to runs.jsonl; sets $code and $wall.
timed() {
    local label="$1" clip="$2" frames="$3"
    shift 3
    local started=$EPOCHREALTIME
    "$@" >"$label.log" 2>&1
    code=$?
    local ended=$EPOCHREALTIME
    wall=$(python3 -c "print(f'{$ended - $started:.4f}')")
    printf '{"label": "%s", "clip": "%s", "frames": %s, "wall_s": %s, "exit": %s}\n' \
        "$label" "$clip" "$frames" "$wall" "$code" >>"$runs"
    ((code == 0)) || { echo "--- $label exited $code:" >>"$log"; tail -n 5 "$label.log" >>"$log"; }
}

run_args=(--device "$device" --decoder software --planes all --no-progress -f null -)

step "host"
{ nvidia-smi -L || true; "$bin" --version; "$bin" kernels show; [[ -x $ffmpeg_cli ]] && "$ffmpeg_cli" -hide_banner -version | head -n 1; } 2>&1 | tee -a "$log"

step "1. kernels on a fresh host: none compiled, results equal the CPU engine's"
for mask in gaussian:size=13 identity edge:size=7; do
    name="${mask//[:=]/-}"
    export CONVSTREAM_KERNEL_CACHE="$work/cache-$name"
    mkdir -p "$CONVSTREAM_KERNEL_CACHE"
    "$bin" run -i "$media/c1000.mp4" -o "$name-gpu.y4m" --frames 60 --mask "$mask" --device "$device" --decoder software \
        --planes all --no-progress --log-level debug >"$name-gpu.log" 2>&1
    code=$?
    "$bin" run -i "$media/c1000.mp4" -o "$name-cpu.y4m" --frames 60 --mask "$mask" --device cpu --decoder software \
        --planes all --no-progress >"$name-cpu.log" 2>&1
    code_cpu=$?
    compiled=$(grep -c 'compiled for sm_' "$name-gpu.log")
    packed=$(grep -c 'read from the kernel pack' "$name-gpu.log")
    cached=$(find "$CONVSTREAM_KERNEL_CACHE" -name '*.cubin' | wc -l)
    grep -E 'kernel pack|compiled for sm_' "$name-gpu.log" | head -n 4 >>"$log"
    record "$mask, fresh cache: exit $code, $packed kernel(s) from the pack, $compiled compiled, $cached written to the cache" \
        $((code != 0 || compiled != 0 || packed == 0 || cached != 0))
    cmp -s "$name-gpu.y4m" "$name-cpu.y4m"
    record "$mask: the GPU's 60 frames equal the CPU engine's byte for byte (exit $code_cpu)" $(($? != 0 || code_cpu != 0))
done
unset CONVSTREAM_KERNEL_CACHE
# The first run's price with and without the pack (fresh caches, the same 13x13 run).
for pack in on off; do
    for round in 1 2 3; do
        cache="$work/first-$pack-$round"
        mkdir -p "$cache"
        if [[ $pack == off ]]; then
            timed "first-nopack-$round" c1000 1000 env CONVSTREAM_KERNEL_CACHE="$cache" CONVSTREAM_KERNEL_PACK=off \
                "$bin" run -i "$media/c1000.mp4" --mask gaussian:size=13 "${run_args[@]}"
        else
            timed "first-pack-$round" c1000 1000 env CONVSTREAM_KERNEL_CACHE="$cache" \
                "$bin" run -i "$media/c1000.mp4" --mask gaussian:size=13 "${run_args[@]}"
        fi
        info "first run, pack $pack, round $round: ${wall}s (exit $code)"
    done
done

step "2. whole commands against FFmpeg's decode-only"
clips=(c1000)
if [[ ,$skip, != *,long,* ]]; then
    if [[ -x $ffmpeg_cli ]]; then
        "$ffmpeg_cli" -hide_banner -loglevel error -y -stream_loop 9 -i "$media/c1000.mp4" -c copy -map 0:v c10000.mp4 \
            && clips+=(c10000)
    else
        info "no FFmpeg CLI at $ffmpeg_cli: no 10,000-frame clip"
    fi
fi
# A warm kernel cache and a warm disk for everything timed.
export CONVSTREAM_KERNEL_CACHE="$work/cache-timed"
"$bin" run -i "$media/c1000.mp4" --mask gaussian:size=13 "${run_args[@]}" >/dev/null 2>&1
for clip in "${clips[@]}"; do
    path="$media/$clip.mp4"
    [[ -f $path ]] || path="$work/$clip.mp4"
    frames="${clip#c}"
    cat "$path" >/dev/null
    labels=(ffmpeg gauss13 identity gauss13-teardown)
    for round in $(seq "$rounds"); do
        # Each round starts at another command, so no one of them always runs first.
        for i in 0 1 2 3; do
            label="${labels[$(((i + round) % 4))]}"
            case "$label" in
                ffmpeg)
                    [[ -x $ffmpeg_cli ]] || continue
                    timed "$clip-ffmpeg-$round" "$clip" "$frames" "$ffmpeg_cli" -hide_banner -nostdin -loglevel error \
                        -i "$path" -map 0:v -f null - ;;
                gauss13)
                    timed "$clip-gauss13-$round" "$clip" "$frames" "$bin" run -i "$path" --mask gaussian:size=13 "${run_args[@]}" ;;
                identity)
                    timed "$clip-identity-$round" "$clip" "$frames" "$bin" run -i "$path" --mask identity "${run_args[@]}" ;;
                gauss13-teardown)
                    timed "$clip-gauss13-teardown-$round" "$clip" "$frames" env CONVSTREAM_GPU_TEARDOWN=1 \
                        "$bin" run -i "$path" --mask gaussian:size=13 "${run_args[@]}" ;;
            esac
        done
    done
    frames_out=$(grep -o "[0-9]* frames in, [0-9]* out" "$clip-gauss13-1.log" | head -n 1)
    info "$clip: convstream's summary says $frames_out"
done
unset CONVSTREAM_KERNEL_CACHE

if [[ ,$skip, != *,python,* ]]; then
    step "3. Python: NVDEC into torch, first and second pass of a fresh process"
    wheel="$(ls -t "$dist"/wheels/convstream-*.whl 2>/dev/null | head -n 1)"
    if [[ -z $wheel ]]; then
        record "a wheel in $dist/wheels (scripts/build-wheel.sh --portable)" 1
    else
        site="$work/site"
        "$python" -m zipfile -e "$wheel" "$site"
        [[ -s $site/convstream/convstream-kernels.pack ]]
        record "the wheel carries convstream/convstream-kernels.pack" $?
        for pack in on off; do
            cache="$work/py-cache-$pack"
            mkdir -p "$cache"
            pack_env=()
            [[ $pack == off ]] && pack_env=(CONVSTREAM_KERNEL_PACK=off)
            env "${pack_env[@]+"${pack_env[@]}"}" CONVSTREAM_KERNEL_CACHE="$cache" PYTHONPATH="$site" \
                "$python" - "$media/c1000.mp4" "$pack" >"py-$pack.json" 2>"py-$pack.log" <<'EOF'
import json, sys, time
import torch
import convstream
clip, pack = sys.argv[1], sys.argv[2]
passes = []
for n in range(2):
    started = time.perf_counter()
    frames = 0
    for frame in convstream.read(clip, decoder="nvdec", as_="torch"):
        frames += 1
    torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    passes.append({"pass": n + 1, "frames": frames, "seconds": seconds, "fps": frames / seconds})
print(json.dumps({"pack": pack, "passes": passes}))
EOF
            code=$?
            cat "py-$pack.json" >>"$log"
            ((code == 0)) || tail -n 5 "py-$pack.log" >>"$log"
            record "Python read(nvdec, torch), pack $pack: exit $code" "$code"
            cp "py-$pack.json" "$out/python-pack-$pack.json" 2>/dev/null
        done
        "$python" - "$media/c1000.mp4" >"$out/pynvvideocodec.json" 2>"pynv.log" <<'EOF'
import json, sys, time
import torch
import PyNvVideoCodec as nvc
clip = sys.argv[1]
passes = []
for n in range(2):
    started = time.perf_counter()
    demuxer = nvc.CreateDemuxer(filename=clip)
    decoder = nvc.CreateDecoder(gpuid=0, codec=demuxer.GetNvCodecId(), cudacontext=0, cudastream=0, usedevicememory=True)
    frames = 0
    for packet in demuxer:
        for surface in decoder.Decode(packet):
            torch.from_dlpack(surface)
            frames += 1
    torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    passes.append({"pass": n + 1, "frames": frames, "seconds": seconds, "fps": frames / seconds})
print(json.dumps({"peer": "PyNvVideoCodec", "passes": passes}))
EOF
        if [[ $? == 0 ]]; then cat "$out/pynvvideocodec.json" >>"$log"; else info "PyNvVideoCodec not measured: $(tail -n 1 pynv.log)"; rm -f "$out/pynvvideocodec.json"; fi
    fi
fi

failed_runs=$(grep -c '"exit": [1-9]' "$runs")
record "every timed command exited 0 ($failed_runs did not; their logs' ends are above)" $((failed_runs != 0))

step "summary"
"$python" - "$runs" "$out/summary.json" <<'EOF' | tee -a "$log"
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
summary = {}
for run in runs:
    label = run["label"].rsplit("-", 1)[0]
    summary.setdefault(label, {"frames": run["frames"], "walls": [], "failed": 0})
    summary[label]["walls"].append(run["wall_s"])
    summary[label]["failed"] += run["exit"] != 0
for label, s in summary.items():
    s["median_wall_s"] = statistics.median(s["walls"])
    s["fps"] = s["frames"] / s["median_wall_s"]
for clip, target in (("c1000", 0.90), ("c10000", 0.98)):
    base = summary.get(f"{clip}-ffmpeg")
    for work in ("gauss13", "identity", "gauss13-teardown"):
        s = summary.get(f"{clip}-{work}")
        if base and s:
            s["vs_ffmpeg"] = s["fps"] / base["fps"]
            verdict = "met" if s["vs_ffmpeg"] >= target else "missed"
            print(f"{clip} {work}: {s['fps']:.0f} fps against FFmpeg's {base['fps']:.0f}: "
                  f"{100 * s['vs_ffmpeg']:.1f}% (target {100 * target:.0f}%: {verdict})")
for label, s in sorted(summary.items()):
    print(f"{label}: median {s['median_wall_s']:.3f} s of {sorted(s['walls'])}, {s['fps']:.0f} fps, failed {s['failed']}")
json.dump(summary, open(sys.argv[2], "w"), indent=1)
EOF
echo "failures: $failures" | tee -a "$log"
exit $((failures > 0))
