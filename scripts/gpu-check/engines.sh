#!/usr/bin/env bash
# engines: GPU tests, compute-sanitizer and end-to-end runs of the portable build (nvdec and nvdec-snapshot too)
#
# GPU checks from the portable build (scripts/build-portable.sh), run on a GPU host:
# the GPU tests (core's `tests/engines gpu::`: parity with the CPU engine, lane order, throughput with a trace),
# compute-sanitizer memcheck and racecheck on a quick parity run, and end-to-end runs on a
# generated clip: CPU vs CUDA output, streams 1 to 8 with 1 to 4 frames each, audio kept,
# NVDEC decode, and NVDEC on streams it cannot decode as they are (scripts/gpu-check.sh nvdec),
# and `serve`'s input previews of NVDEC pictures kept on the GPU (scripts/gpu-check.sh nvdec-snapshot).
#
#   scripts/gpu-check.sh engines [DIST] [--end-to-end]   (DIST defaults to dist/portable; results go to $OUT or ./gpu-results)
#
# --end-to-end skips the GPU tests and the sanitizers (about ten minutes on an H100, more than one 400 s command), for
# a run that checks the command line's paths only.
set -uo pipefail

dist="${1:-dist/portable}"
end_to_end_only=false
[[ ${2:-} == --end-to-end ]] && end_to_end_only=true
out="${OUT:-gpu-results}"
bin="$dist/convstream"
media="$(mktemp -d)"
mkdir -p "$out"
log="$out/gpu-check.log"
export CONVSTREAM_KERNEL_CACHE="${CONVSTREAM_KERNEL_CACHE:-/tmp/convstream-kernels}"
failures=0

step() { printf '\n=== %s\n' "$*" | tee -a "$log"; }
check() { # check DESCRIPTION COMMAND...: runs the command, records ok/FAILED
    local what="$1"; shift
    if "$@" >>"$log" 2>&1; then echo "ok: $what" | tee -a "$log"; else echo "FAILED: $what" | tee -a "$log"; failures=$((failures + 1)); fi
}

step "host"
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; "$bin" --version; "$bin" doctor; } 2>&1 | tee -a "$log"

if ! $end_to_end_only; then
step "GPU tests (CONVSTREAM_TEST_GPU=1)"
CONVSTREAM_TEST_GPU=1 CONVSTREAM_TRACE_OUT="$out/lanes-trace.json" \
    "$dist/tests/engines" gpu:: --include-ignored --test-threads=1 --nocapture 2>&1 | tee -a "$log"
[[ ${PIPESTATUS[0]} == 0 ]] || failures=$((failures + 1))

for tool in memcheck racecheck; do
    step "compute-sanitizer --tool $tool (quick parity run)"
    CONVSTREAM_TEST_GPU=1 CONVSTREAM_TEST_QUICK=1 compute-sanitizer --tool "$tool" --error-exitcode 3 \
        "$dist/tests/engines" gpu::gpu_parity_with_cpu_on_random_planes --include-ignored --test-threads=1 --nocapture 2>&1 | tail -n 25 | tee -a "$log"
    [[ ${PIPESTATUS[0]} == 0 ]] || failures=$((failures + 1))
done

step "compute-sanitizer --tool memcheck (frames from the pinned pool, copied directly)"
CONVSTREAM_TEST_GPU=1 compute-sanitizer --tool memcheck --error-exitcode 3 \
    "$dist/tests/engines" gpu::pooled_frames_go_direct_and_match_the_cpu --include-ignored --test-threads=1 --nocapture 2>&1 | tail -n 5 | tee -a "$log"
[[ ${PIPESTATUS[0]} == 0 ]] || failures=$((failures + 1))

fi

step "end to end on a generated clip"
check "generate the sample clip" "$bin" demo --dir "$media" --device cpu
run() { "$bin" run -i "$media/sample.mp4" --mask gaussian:size=13,sigma=3 --no-progress "$@"; }
check "CPU engine to y4m" run -o "$media/cpu.y4m" --device cpu
check "CUDA engine to y4m (with a trace)" run -o "$media/cuda.y4m" --device cuda --trace "$out/e2e-trace.json"
check "CUDA output identical to the CPU output" cmp "$media/cpu.y4m" "$media/cuda.y4m"
for lanes in 1x1 1x2 2x2 4x1 4x2 8x4; do # streams x frames per stream
    streams="${lanes%x*}" depth="${lanes#*x}"
    check "streams=$streams x $depth frames identical to the CPU output (order kept)" \
        bash -c "$(printf '%q ' "$bin") run -i $media/sample.mp4 --mask gaussian:size=13,sigma=3 --no-progress --device cuda --streams $streams --frames-per-stream $depth -o $media/s$lanes.y4m && cmp $media/cpu.y4m $media/s$lanes.y4m"
done
check "CUDA dense 21x21 on luma only identical to the CPU output" \
    bash -c "for d in cpu cuda; do $(printf '%q ' "$bin") run -i $media/sample.mp4 --mask box:size=21 --planes luma --no-progress --device \$d -o $media/box21-\$d.y4m || exit 1; done; cmp $media/box21-cpu.y4m $media/box21-cuda.y4m"
check "CUDA to mkv with audio copied" run -o "$media/cuda.mkv" --device cuda --stats-json "$out/e2e-stats.json"
check "audio packets were copied" python3 -c "import json,sys; p=json.load(open('$out/e2e-stats.json'))['pipelines'][0]; print(p); sys.exit(0 if p['packets_passed_through'] > 0 and p['frames_out'] == p['frames_in'] > 0 else 1)"
check "the mkv decodes again, all frames" bash -c "$(printf '%q ' "$bin") run -i $media/cuda.mkv -o null --device cpu --no-progress --stats-json $media/reread.json && python3 -c \"import json,sys; sys.exit(0 if json.load(open('$media/reread.json'))['pipelines'][0]['frames_out'] == json.load(open('$out/e2e-stats.json'))['pipelines'][0]['frames_out'] else 1)\""
check "NVDEC decode (mpeg4_cuvid) through the CUDA engine" run -o "$media/nvdec.y4m" --device cuda --decoder nvdec
check "NVDEC output has the same size as the software-decoded one" bash -c "[[ \$(stat -c %s $media/nvdec.y4m) == \$(stat -c %s $media/cuda.y4m) ]]"
# NVDEC pictures stay on the GPU for the CUDA engine (one PCIe crossing per frame); the CPU
# engine gets the same NVDEC frames in host memory. Both must write the same bytes, with every
# plane filtered and with chroma passed through (copied from the GPU picture as it is).
for planes in all luma; do
    check "NVDEC pictures kept on the GPU, planes=$planes: CUDA output identical to the CPU engine's" \
        bash -c "for d in cpu cuda; do $(printf '%q ' "$bin") run -i $media/sample.mp4 --decoder nvdec --mask gaussian:size=9,sigma=2 --planes $planes --no-progress --device \$d -o $media/nv-$planes-\$d.y4m || exit 1; done; cmp $media/nv-$planes-cpu.y4m $media/nv-$planes-cuda.y4m"
done
check "NVDEC pictures cross PCIe once: nothing to the GPU, one frame back" \
    bash -c "$(printf '%q ' "$bin") run -i $media/sample.mp4 --decoder nvdec --mask sharpen --no-progress --device cuda -o null 2>&1 | tee /dev/stderr | grep -q 'PCIe per frame: 0 bytes to the GPU'"
check "--device cuda:7 is a clear error (exit 1, names the device, no panic)" bash -c "out=\$($(printf '%q ' "$bin") run -i $media/sample.mp4 -o null --device cuda:7 2>&1); code=\$?; echo \"\$out\"; [[ \$code == 1 ]] && grep -q 'cuda:7 does not exist' <<<\"\$out\" && ! grep -q panicked <<<\"\$out\""

step "NVDEC on streams it cannot decode as they are (scripts/gpu-check.sh nvdec)"
nvdec_media="${NVDEC_MEDIA:-$dist/nvdec-media}"
if [[ ! -d $nvdec_media ]] && command -v ffmpeg >/dev/null; then
    nvdec_media="$media/nvdec" && "$(dirname "$0")/nvdec.sh" --make-media "$nvdec_media" >>"$log" 2>&1
fi
if [[ -d $nvdec_media ]]; then
    OUT="$out" "$(dirname "$0")/nvdec.sh" "$dist" "$nvdec_media" 2>&1 | grep -E '^(ok|FAILED|info|failures)' | tee -a "$log"
    [[ ${PIPESTATUS[0]} == 0 ]] || failures=$((failures + 1))
else
    echo "FAILED: no NVDEC clips: make them with scripts/gpu-check.sh nvdec --make-media $dist/nvdec-media" | tee -a "$log"
    failures=$((failures + 1))
fi

step "input previews of NVDEC pictures on the GPU (scripts/gpu-check.sh nvdec-snapshot)"
OUT="$out" "$(dirname "$0")/nvdec-snapshot.sh" "$dist" 2>&1 | grep -E '^(ok|FAILED|info|failures)' | tee -a "$log"
[[ ${PIPESTATUS[0]} == 0 ]] || failures=$((failures + 1))

# More NVDEC pipelines than decoder sessions (set OVERSUBSCRIBE_CLIP to a 1080p H.264 clip, made
# with scripts/gpu-check.sh nvdec-oversubscribe --make-clip; about two minutes).
if [[ -n ${OVERSUBSCRIBE_CLIP:-} ]]; then
    step "96 NVDEC pipelines in one serve (scripts/gpu-check.sh nvdec-oversubscribe)"
    OUT="$out" "$(dirname "$0")/nvdec-oversubscribe.sh" "$dist" "$OVERSUBSCRIBE_CLIP" 96 2>&1 | tee -a "$log"
    [[ ${PIPESTATUS[0]} == 0 ]] || failures=$((failures + 1))
fi

step "summary"
echo "failures: $failures" | tee -a "$log"
rm -rf "$media"
exit $((failures > 0))
