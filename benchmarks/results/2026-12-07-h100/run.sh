#!/usr/bin/env bash
# The record of the device calls of 2026-12-07 (binaries 1da17b9 and 078df3b, carried in gpu-a/).
# VARIANTS="kernels tests sweep startup fill96 fill96-arena2 ..." bash gpu-a/go.sh   (run from the repository root on the GPU host)
set -u
D="$(pwd)/gpu-a"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
export LD_LIBRARY_PATH="$D${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv > "$OUT/gpu.txt" 2>&1
nproc >> "$OUT/gpu.txt"
BIN="$D/convstream"
CLIP=/tmp/live.mp4
[[ -f $CLIP ]] || FFMPEG="$D/ffmpeg" bash scripts/gpu-check.sh nvdec-oversubscribe --make-clip "$CLIP" 100 > "$OUT/clip.txt" 2>&1
fill() { # NAME NVDEC SOFTWARE [env...]
    local name=$1 nv=$2 sw=$3; shift 3
    echo "== fill $name $(date +%T)" >> "$OUT/progress.txt"
    env "$@" OUT="/tmp/fill-$name" timeout -k 5 "${LIMIT:-150}" bash scripts/gpu-check.sh host-fill "$BIN" "$CLIP" "$nv" "$sw" "${WINDOW:-45}" > "/tmp/fill-$name.txt" 2>&1
    { cat /tmp/fill-$name/*/summary.log; echo "--- timeline"; cat /tmp/fill-$name/*/readyz-timeline.txt; } > "$OUT/fill-$name.txt" 2>&1
}
for v in ${VARIANTS:-}; do
    echo "== $v $(date +%T)" >> "$OUT/progress.txt"
    case $v in
    sweep)
        for t in ${TILINGS:-32x8x16x2 32x8x16x1 32x8x16x4 32x8x8x2 32x8x8x4 64x4x16x2 32x4x16x4}; do
            timeout -k 5 60 "$BIN" bench --device cuda --suite kernel --depths 8 --mask-sizes ${SIZES:-3} --plane-sizes 3840x2160,1920x1080 \
                --small-tiling "$t" --out "/tmp/tile-$t" > "/tmp/tile-$t.txt" 2>&1
            echo "== $t" >> "$OUT/sweep.txt"; grep -E "INFO kernel [A-Z]" "/tmp/tile-$t.txt" | cut -c14- >> "$OUT/sweep.txt"
        done ;;
    tests)
        for t in ${TESTS:-small_masks_from_registers ffmpeg_arithmetic_and_edges exact_ties pooled_frames_go_direct gradient_magnitudes}; do
            CONVSTREAM_TEST_QUICK=1 timeout -k 5 "${TLIMIT:-240}" "$D/engines" "gpu::$t" --include-ignored --test-threads=1 --nocapture > "$OUT/test-$t.txt" 2>&1
            echo "exit $?" >> "$OUT/test-$t.txt"
            grep -E "test result|panicked|cases|exit" "$OUT/test-$t.txt" >> "$OUT/tests.txt"
        done ;;
    startup)
        [[ -f /tmp/media/c1000.mp4 ]] || FFMPEG="$D/ffmpeg" bash scripts/gpu-check.sh startup --make-media /tmp/media > "$OUT/media.txt" 2>&1
        ROUNDS="${ROUNDS:-3}" CONVSTREAM_CHECK_SKIP="${SKIP:-python}" OUT="$OUT/startup" timeout -k 5 330 \
            bash scripts/gpu-check.sh startup "$D" /tmp/media > "$OUT/startup.txt" 2>&1 ;;
    hiccup-base|hiccup-trim)
        xz -dc "$D/${v#hiccup-}.xz" > "/tmp/$v" && chmod +x "/tmp/$v" && cp "$D/convstream-kernels.pack" /tmp/
        OUT="/tmp/h-$v" timeout -k 5 170 bash scripts/gpu-check.sh hiccup "/tmp/$v" "$CLIP" 0 96 0.3 1.0 > "/tmp/h-$v.txt" 2>&1
        { cat /tmp/h-$v/*/hiccups.txt; echo "--- summary"; grep -v "^  " /tmp/h-$v/*/host-fill-*/summary.log | head -40; } > "$OUT/$v.txt" 2>&1 ;;
    fill96) fill 96 0 96 ;;
    fill64) fill 64 0 64 ;;
    fill96-arena4) fill 96-arena4 0 96 MALLOC_ARENA_MAX=4 ;;
    fill96-arena2) fill 96-arena2 0 96 MALLOC_ARENA_MAX=2 ;;
    fill96-arena8) fill 96-arena8 0 96 MALLOC_ARENA_MAX=8 ;;
    fill96-trim) fill 96-trim 0 96 MALLOC_TRIM_THRESHOLD_=1048576 MALLOC_MMAP_THRESHOLD_=4194304 ;;
    fill96-gate16) fill 96-gate16 0 96 SERVER='starting_at_once = 16' ;;
    fill96-gate32) fill 96-gate32 0 96 SERVER='starting_at_once = 32' ;;
    esac
done
echo "== end $(date +%T)" >> "$OUT/progress.txt"
