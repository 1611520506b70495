#!/usr/bin/env bash
# On a 2-GPU host, in one call: the engines' new GPU tests (idle staging given back); NVDEC
# seats measured on both GPUs at once (bench --suite scale --gpus all) with the host's own
# NVDEC decode capacity; one software step of 56 per GPU with the host's software decode
# capacity; then a full host in one `serve` (scripts/host-fill-check.sh): 112 software
# pipelines, and NVDEC pipelines at twice the measured seats with a soak.
#   OUT=... benchmarks/2026-11-27-two-gpus/run.sh   (gpu-carry/ holds convstream.xz, engines, clip1080.mp4)
set -u
cd "$(dirname "$0")/../.."
R=$OUT/r
mkdir -p "$R"
start=$SECONDS
stamp() { echo "[$((SECONDS - start)) s] $*" | tee -a "$R/steps.txt"; }
export CONVSTREAM_KERNEL_CACHE=/tmp/kc
nvidia-smi -L >"$R/gpus.txt" 2>&1
nproc >>"$R/gpus.txt"
xz -dc gpu-carry/convstream.xz >/tmp/convstream && chmod +x /tmp/convstream gpu-carry/engines
/tmp/convstream doctor >"$R/doctor.txt" 2>&1
clip="$PWD/gpu-carry/clip1080.mp4"

stamp engines
CONVSTREAM_TEST_GPU=1 timeout -k 5 120 gpu-carry/engines --include-ignored --test-threads 1 \
    staging pooled_frames planes_switch >"$R/engines.txt" 2>&1
echo "rc=$?" >>"$R/engines.txt"

stamp bench-nvdec
timeout -k 5 170 /tmp/convstream bench --suite scale --decoder nvdec --gpus all --pipelines 24,32,40,48,56 \
    --scale-seconds 6 --input "$clip" --out "$R/bench-nvdec" >"$R/bench-nvdec.txt" 2>&1
echo "rc=$?" >>"$R/bench-nvdec.txt"

stamp bench-software
timeout -k 5 100 /tmp/convstream bench --suite scale --decoder software --gpus all --pipelines 56 \
    --scale-seconds 6 --input "$clip" --out "$R/bench-software" >"$R/bench-software.txt" 2>&1
echo "rc=$?" >>"$R/bench-software.txt"

stamp host-fill-software
OUT=$R timeout -k 5 130 scripts/host-fill-check.sh /tmp/convstream "$clip" 0 112 30 >/dev/null 2>&1

pkill -f "convstream serve"; sleep 1
stamp host-fill-nvdec
seats=$(sed -n 's/^"[^"]*" *= *\([0-9]*\)$/\1/p' "$R/bench-nvdec/nvdec-seats.toml" 2>/dev/null | head -n 1)
if [[ -n $seats ]]; then
    cp "$R/bench-nvdec/nvdec-seats.toml" /tmp/nvdec-seats.toml
    left=$((560 - (SECONDS - start)))
    soak=$(((left - 110) / 30 * 30))
    ((soak < 0)) && soak=0
    stamp "measured $seats seats per GPU; $((2 * seats)) NVDEC pipelines, soak $soak s"
    SERVER='nvdec_seats_file = "/tmp/nvdec-seats.toml"' OUT=$R timeout -k 5 $((left - 5)) \
        scripts/host-fill-check.sh /tmp/convstream "$clip" $((2 * seats)) 0 20 "$soak" >/dev/null 2>&1
else
    stamp "no nvdec-seats.toml from the bench"
fi
stamp done
tar czf "$OUT/results.tgz" -C "$R" .
