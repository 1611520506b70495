#!/usr/bin/env bash
# The CPU engine on a GPU host's 16 cores, against FFmpeg's CLI and OpenCV in the same run.
# Carried in gpu-carry/: convstream and FFmpeg's CLI from the portable build
# (`scripts/build-portable.sh binary ffmpeg-cli`, stripped) with libopenh264.so.7 beside them.
#   1. `bench --suite kernel --device cpu` (one 1920x1080 plane, 8 and 16 bits, 3/13/15 taps,
#      dense and separable) and OpenCV's filter2D / sepFilter2D / GaussianBlur on the same
#      plane size and border (opencv_planes.py), every core each;
#   2. end to end on a 1080p25 clip made there (make_clip.py, 300 frames, MPEG-4 Part 2),
#      all planes of yuv420p to a null sink, wall clock for the whole command, two rounds:
#      FFmpeg decode-only, `convolution` 3x3 (sharpen), `gblur=sigma=3`; convstream with no
#      mask (identity), sharpen, gaussian 13x13 sigma 3, a dense 13x13 and motion blur 15x15.
# FRAMES (300), ROUNDS (2) and SIZES (3,13,15) shorten it. Results under $OUT.
set -uo pipefail
frames=${FRAMES:-300}; rounds=${ROUNDS:-2}; sizes=${SIZES:-3,13,15}
d="$(cd "$(dirname "$0")" && pwd)"
carry="$(cd "$d/../../.." && pwd)/gpu-carry"
out=${OUT:-/tmp/out}; mkdir -p "$out"
bin=$carry/convstream
export LD_LIBRARY_PATH=$carry${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
t() { timeout -k 5 "$@"; }
{ nproc; lscpu | grep -E "Model name|Thread|Core|Socket|MHz|Flags" | cut -c1-200; "$bin" --version; } > "$out/host.txt" 2>&1

t 400 "$bin" bench --suite kernel --device cpu --mask-sizes "$sizes" --depths 8,16 --out "$out/bench-kernel" \
    > "$out/bench-kernel.txt" 2>&1
t 300 python3 "$d/opencv_planes.py" ${sizes//,/ } > "$out/opencv.jsonl" 2> "$out/opencv-errors.txt"

clip=/tmp/clip1080.mp4
t 200 python3 "$d/make_clip.py" "$clip" "$frames" 2> "$out/clip-errors.txt"
now() { date +%s.%N; }
# Frames/s of a whole command on the 300-frame clip.
rate() {
    local name="$1" a b; shift
    a=$(now)
    # ff and cs are functions: run in this shell (the whole script runs under a timeout).
    if ! "$@" > /dev/null 2>> "$out/e2e-errors.txt"; then echo "FAILED: $name" >> "$out/e2e.txt"; return; fi
    b=$(now)
    python3 -c "print('$name', round($frames / ($b - $a), 1), 'fps')" >> "$out/e2e.txt"
}
sharpen='0 -1 0 -1 5 -1 0 -1 0'
ff() { "$carry/ffmpeg" -hide_banner -loglevel error -nostdin -threads 0 -i "$clip" "$@"; }
cs() { "$bin" run --device cpu --no-progress -i "$clip" -o null "$@"; }
for round in $(seq "$rounds"); do
    echo "round $round" >> "$out/e2e.txt"
    rate "ffmpeg decode-only" ff -f null -
    rate "ffmpeg convolution 3x3 sharpen, all planes" ff -vf "convolution=0m='$sharpen':1m='$sharpen':2m='$sharpen'" -f null -
    rate "ffmpeg gblur sigma=3, all planes" ff -vf gblur=sigma=3 -f null -
    rate "convstream no mask (identity)" cs
    rate "convstream sharpen 3x3" cs --mask sharpen
    rate "convstream gaussian 13x13 sigma 3" cs --mask gaussian:size=13,sigma=3
    rate "convstream dense 13x13 (edge)" cs --mask edge:size=13
    rate "convstream motion-blur 15x15 (dense)" cs --mask motion-blur:size=15
done
# Both FFmpeg filters' and convstream's outputs exist; a sample of convstream's summary.
cs --mask sharpen > "$out/summary-sharpen.txt" 2>&1
