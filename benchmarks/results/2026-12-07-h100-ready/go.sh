#!/usr/bin/env bash
# VARIANTS="kernels startup fill96 ..." bash gpu-a/go.sh   (run from the repository root on the GPU host)
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
    ncu)
        xz -dc "$D/base.xz" > /tmp/ncu-bin && chmod +x /tmp/ncu-bin && cp "$D/convstream-kernels.pack" /tmp/
        NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
        for case in ${NCU_CASES:-3:dense 3:separable 13:dense}; do
            m=${case%%:*} k=${case#*:}
            timeout -k 5 120 "$NCU" --target-processes all -k regex:convolve_$k --launch-count 1 --set full \
                /tmp/ncu-bin bench --device cuda --suite kernel --depths 8 --mask-sizes $m --plane-sizes 3840x2160 --out /tmp/ncu-$m \
                > "$OUT/ncu-$m-$k.txt" 2>&1
            echo "exit $?" >> "$OUT/ncu-$m-$k.txt"
        done ;;
    dsweep)
        [[ -x /tmp/ncu-bin ]] || { xz -dc "$D/base.xz" > /tmp/ncu-bin && chmod +x /tmp/ncu-bin && cp "$D/convstream-kernels.pack" /tmp/; }
        for t in ${DTILINGS:-32x8x4x4 32x8x4x8 32x8x8x4 32x8x8x2 32x16x4x2 32x4x4x4 64x4x4x4 32x8x4x2 32x8x4x1 64x8x4x2}; do
            timeout -k 5 60 /tmp/ncu-bin bench --device cuda --suite kernel --depths 8 --mask-sizes ${SIZES:-3} --plane-sizes 3840x2160,1920x1080 \
                --dense-tiling "$t" --out "/tmp/dt-$t" > "/tmp/dt-$t.txt" 2>&1
            echo "== $t" >> "$OUT/dsweep.txt"; grep -E "INFO kernel [A-Z]" "/tmp/dt-$t.txt" | cut -c14- >> "$OUT/dsweep.txt"
        done ;;
    unpack-new)
        mkdir -p /tmp/new && xz -dc "$D/new/convstream.xz" > /tmp/new/convstream && xz -dc "$D/new/engines.xz" > /tmp/new/engines \
            && chmod +x /tmp/new/* && cp "$D/new/convstream-kernels.pack" /tmp/new/
        [[ -x /tmp/ncu-bin ]] || { xz -dc "$D/base.xz" > /tmp/ncu-bin && chmod +x /tmp/ncu-bin && cp "$D/convstream-kernels.pack" /tmp/; }
        ls -la /tmp/new >> "$OUT/progress.txt" ;;
    kbench)
        for round in $(seq 1 ${KROUNDS:-2}); do
            for b in base new; do
                bin=/tmp/ncu-bin; [[ $b == new ]] && bin=/tmp/new/convstream
                timeout -k 5 90 "$bin" bench --device cuda --suite kernel --depths ${KDEPTHS:-8} --mask-sizes ${KSIZES:-3,5,13} \
                    --plane-sizes 3840x2160,1920x1080 --out "/tmp/kb-$b-$round" > "/tmp/kb-$b-$round.txt" 2>&1
                echo "== $b round $round exit $?" >> "$OUT/kbench.txt"; grep -E "INFO kernel [A-Z]|rror|mismatch" "/tmp/kb-$b-$round.txt" | cut -c14- >> "$OUT/kbench.txt"
            done
        done ;;
    tests-new)
        for t in ${TESTS:-gpu_parity_with_cpu_on_random_planes large_planes_take_wide_tiles gpu_parity_at_high_bit_depths exact_ties ffmpeg_arithmetic_and_edges gradient_magnitudes stream_call:: plane_masks_match}; do
            CONVSTREAM_TEST_QUICK=1 timeout -k 5 "${TLIMIT:-150}" /tmp/new/engines "$t" --include-ignored --test-threads=1 > "/tmp/test-$t.txt" 2>&1
            echo "== $t exit $?" >> "$OUT/tests-new.txt"
            grep -E "^test |test result|panicked|cases|differ" "/tmp/test-$t.txt" | grep -v "ignored, " | head -30 >> "$OUT/tests-new.txt"
        done ;;
    ncu-new)
        NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
        for bin in ${NCU_BINS:-/tmp/new/convstream /tmp/ncu-bin}; do
            n=$(basename $(dirname $bin))
            timeout -k 5 100 "$NCU" -k regex:convolve_dense --launch-count 1 --set full \
                $bin bench --device cuda --suite kernel --depths 8 --mask-sizes 3 --plane-sizes 3840x2160 --out /tmp/ncu-x > "$OUT/ncu-3-$n.txt" 2>&1
            echo "exit $?" >> "$OUT/ncu-3-$n.txt"
        done ;;
    prep)
        rm -f "$D/convstream" && xz -dc "$D/${PREP:-trim}.xz" > "$D/convstream" && chmod +x "$D/convstream"
        "$D/convstream" --version > "$OUT/version.txt" 2>&1 ;;
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
