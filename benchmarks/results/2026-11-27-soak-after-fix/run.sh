#!/usr/bin/env bash
# The full 2-GPU host soaked with the build that stopped page-locking on the frame path
# (24 NVDEC + 88 software pipelines in one `serve`, from an empty kernel cache, as a new pod
# starts; scripts/gpu-check.sh host-soak), then, on the same machine once the soak has stopped, the
# engines' GPU tests of the lanes' routes. Three device calls, each made within the machine's
# idle window of the last:
#   run.sh start SECONDS    start the soak (SOAK seconds, default 1260), watch it
#   run.sh watch SECONDS    watch for SECONDS more
#   run.sh finish SECONDS   wait up to SECONDS for its SIGTERM line, return everything, then
#                           the GPU tests (TESTS seconds at most, default 150)
# Expects gpu-carry/convstream.xz (the stripped portable binary), gpu-carry/clip1080.mp4 and
# gpu-carry/engines (the stripped `engines` test executable of convstream-core, feature cuda).
set -u
cd "$(dirname "$0")/../../.."
phase="$1" seconds="$2"
export NVDEC=${NVDEC:-24} SOFTWARE=${SOFTWARE:-88} SOAK=${SOAK:-1260} WINDOW=${WINDOW:-20}
case "$phase" in
start) scripts/gpu-check.sh host-soak start "$seconds" gpu-carry/convstream.xz gpu-carry/clip1080.mp4 ;;
watch) scripts/gpu-check.sh host-soak watch "$seconds" ;;
finish)
    scripts/gpu-check.sh host-soak finish "$seconds"
    pgrep -f "host-soak/convstream serve" >/dev/null && { echo "serve still runs: no GPU tests"; exit 0; }
    tests=(gpu::a_callers_buffers_go_through_the_staging_and_are_never_written
        gpu::frames_in_the_pools_ordinary_memory_go_straight_and_page_lock_nothing
        gpu::pooled_frames_go_direct_and_match_the_cpu
        gpu::staged_frames_take_their_results_in_page_locked_planes
        gpu::idle_staging_buffers_are_given_back)
    chmod +x gpu-carry/engines
    deadline=$((SECONDS + ${TESTS:-150}))
    for test in "${tests[@]}"; do
        left=$((deadline - SECONDS)) && ((left > 10)) || { echo "no time left for $test" | tee -a "$OUT/gpu-tests.txt"; continue; }
        timeout -k 5 "$left" gpu-carry/engines --include-ignored --exact --test-threads=1 "$test" 2>&1 \
            | tee -a "$OUT/gpu-tests.txt" | grep -E "^test |test result|panicked|seed"
    done
    ;;
esac
