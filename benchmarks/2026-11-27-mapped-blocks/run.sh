#!/usr/bin/env bash
# The full 2-GPU host with frame-sized ordinary blocks as mappings of their own (1d88cd0 and
# later): what a pipeline costs in RSS, and what a brief hiccup costs, then the engines' GPU tests.
# Two device calls on one machine, the second within its idle window of the first:
#   run.sh fill     scripts/host-fill-check.sh (24 NVDEC + 88 software, 20 s window), then
#                   scripts/hiccup-check.sh on the same host (SIGSTOP 0.3 s, then 1.0 s)
#   run.sh tests    the engines' GPU tests (gpu::, stream_call, whole_lanes) less the long
#                   random-planes parity, one executable run
#   run.sh hiccups  scripts/hiccup-check.sh for each of BUILDS (stripped portable binaries,
#                   gpu-carry/NAME.xz), one after another on the same host
# Expects gpu-carry/convstream.xz (the stripped portable binary), gpu-carry/clip1080.mp4
# (scripts/nvdec-oversubscribe.sh --make-clip FILE 100) and gpu-carry/engines (the stripped
# `engines` test executable of convstream-core, feature cuda). Results under $OUT.
set -u
cd "$(dirname "$0")/../.."
case "$1" in
fill)
    xz -dc gpu-carry/convstream.xz >/tmp/convstream && chmod +x /tmp/convstream
    nvidia-smi >"$OUT/host.txt" 2>&1
    nproc >>"$OUT/host.txt"
    OUT="$OUT/fill" timeout -k 5 "${FILL_LIMIT:-240}" scripts/host-fill-check.sh /tmp/convstream \
        gpu-carry/clip1080.mp4 "${NVDEC:-24}" "${SOFTWARE:-88}" 20 >"$OUT/fill.log" 2>&1
    echo "fill exit $?" >>"$OUT/fill.log"
    OUT="$OUT/hiccup" timeout -k 5 "${HICCUP_LIMIT:-270}" scripts/hiccup-check.sh gpu-carry/convstream.xz \
        gpu-carry/clip1080.mp4 "${NVDEC:-24}" "${SOFTWARE:-88}" 0.3 1.0 >"$OUT/hiccup.log" 2>&1
    echo "hiccup exit $?" >>"$OUT/hiccup.log"
    rm -f "$OUT"/hiccup/*/convstream
    ;;
tests)
    chmod +x gpu-carry/engines
    timeout -k 5 "${TESTS:-540}" gpu-carry/engines --include-ignored --test-threads=1 \
        --skip gpu_parity_with_cpu_on_random_planes --skip cpu_oracle --skip mask_properties \
        >"$OUT/gpu-tests.txt" 2>&1
    echo "exit $?" >>"$OUT/gpu-tests.txt"
    ;;
esac
# The stop experiment over several builds in one call (BUILDS: .xz files in gpu-carry/), each
# on the full host; results tarred, as the folders are deep.
if [[ $1 == hiccups ]]; then
    { uname -r; cat /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag; nproc; } >"$OUT/host.txt" 2>&1
    for build in ${BUILDS:-variant0 convstream variant1 variant2}; do
        OUT="$OUT/h" timeout -k 5 "${HICCUP_LIMIT:-140}" scripts/hiccup-check.sh "gpu-carry/$build.xz" \
            gpu-carry/clip1080.mp4 "${NVDEC:-24}" "${SOFTWARE:-88}" 0.3 1.0 >"$OUT/hiccup-$build.log" 2>&1
        rm -f "$OUT/h/hiccup-$build/convstream"
        echo "== $build"; grep -E "ready|RSS|dropped in" "$OUT"/h/hiccup-$build/host-fill-*/summary.log | head -6
        cat "$OUT/h/hiccup-$build/hiccups.txt"; grep AnonHugePages /proc/meminfo
    done
    tar czf "$OUT/hiccups.tgz" -C "$OUT" h && rm -rf "$OUT/h"
fi
