#!/usr/bin/env bash
# On the 16-core GPU host: the CPU engine's 3x3 on whole 1080p frames against FFmpeg's own
# `convolution` filter, the same mask on all three planes, both reading one raw yuv420p file
# (so decoding costs next to nothing) looped to 1,000 frames, whole commands timed from spawn
# to exit, three rounds alternated. Also the NVDEC decode capacity with the decoders' pictures
# in the pipelines' shared context (bench --suite scale, one step of 8).
#   OUT=... benchmarks/results/2026-11-27-cpu-vs-ffmpeg/run.sh
#   (gpu-carry/: convstream.xz, ffmpeg/ffmpeg from scripts/build-portable.sh ffmpeg-cli with
#   its libopenh264.so.7, clip1080.mp4)
set -u
cd "$(dirname "$0")/../../.."
R=$OUT/r
mkdir -p "$R"
export CONVSTREAM_KERNEL_CACHE=/tmp/kc
xz -dc gpu-carry/convstream.xz >/tmp/convstream && chmod +x /tmp/convstream gpu-carry/ffmpeg/ffmpeg
printf '#!/bin/sh\nLD_LIBRARY_PATH="%s" exec "%s" "$@"\n' "$PWD/gpu-carry/ffmpeg" "$PWD/gpu-carry/ffmpeg/ffmpeg" >/tmp/ff
chmod +x /tmp/ff
ff() { /tmp/ff "$@"; }
{ nvidia-smi -L; nproc; ff -hide_banner -version | head -n 1; } >"$R/host.txt" 2>&1

[[ ${SKIP_BENCH:-} ]] || timeout -k 5 80 /tmp/convstream bench --suite scale --decoder nvdec --gpus 0 --pipelines 8 --scale-seconds 3 \
    --input gpu-carry/clip1080.mp4 --out "$R/bench-nvdec" >"$R/bench-nvdec.log" 2>&1
echo "rc=$?" >>"$R/bench-nvdec.log"
grep -E "INFO scale|capacity|rc=" "$R/bench-nvdec.log" >"$R/bench-nvdec.txt"

# The portable FFmpeg has no lavfi: the raw frames are the clip's, decoded once.
ff -v error -y -i gpu-carry/clip1080.mp4 -frames:v 250 -c:v rawvideo -pix_fmt yuv420p /tmp/raw.nut
k="0 -1 0 -1 5 -1 0 -1 0"
frames=1000
timed() { # LABEL COMMAND...
    local label=$1 t0 t1
    shift
    t0=$(date +%s.%N)
    timeout -k 5 60 "$@" >>"$R/runs.log" 2>&1
    local rc=$?
    t1=$(date +%s.%N)
    echo "$label $(python3 -c "print(f'{$frames / ($t1 - $t0):.1f}')") fps rc=$rc" | tee -a "$R/cpu-vs-ffmpeg.txt"
}
for round in 1 2 3; do
    timed "ffmpeg decode only" /tmp/ff -v error -stream_loop -1 -i /tmp/raw.nut -frames:v $frames -f null -
    timed "ffmpeg convolution (3x3 sharpen, all planes)" \
        /tmp/ff -v error -stream_loop -1 -i /tmp/raw.nut -frames:v $frames -vf "convolution=$k:$k:$k:$k" -f null -
    timed "convstream --device cpu, -vf convolution (same)" \
        /tmp/convstream run --loop --frames $frames -i /tmp/raw.nut -vf "convolution=$k:$k:$k" --device cpu null
    timed "convstream --device cpu --mask sharpen" \
        /tmp/convstream run --loop --frames $frames -i /tmp/raw.nut --mask sharpen --device cpu null
done
tar czf "$OUT/results.tgz" -C "$R" .
