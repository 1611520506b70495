#!/usr/bin/env bash
# On a 2-GPU host, the NVDEC questions the first call left: does the bench's ramp fall apart
# with many NVDEC pipelines on one GPU, on two, or only when they all start at once (serve
# starts them through its start gate)? NVDEC and SM utilisation sampled every second
# (nvidia-smi dmon) throughout. Then a full host of NVDEC pipelines at 35 per GPU in `serve`
# (what the NVDEC decode capacity of the first call allows), with a soak.
set -u
cd "$(dirname "$0")/../.."
R=$OUT/r
mkdir -p "$R"
start=$SECONDS
stamp() { echo "[$((SECONDS - start)) s] $*" | tee -a "$R/steps.txt"; }
export CONVSTREAM_KERNEL_CACHE=/tmp/kc
xz -dc gpu-carry/convstream.xz >/tmp/convstream && chmod +x /tmp/convstream
clip="$PWD/gpu-carry/clip1080.mp4"
nvidia-smi dmon -s u -d 1 -o T >"$R/dmon.txt" 2>&1 &
dmon=$!
for gpus in 0 all; do
    stamp "bench nvdec --gpus $gpus"
    timeout -k 5 110 /tmp/convstream bench --suite scale --decoder nvdec --gpus $gpus --pipelines 8,16,24 \
        --scale-seconds 5 --input "$clip" --out "$R/bench-nvdec-$gpus" 2>&1 | grep -E "INFO scale|capacity" >"$R/bench-nvdec-$gpus.txt"
done
for per_gpu in 24 35; do
    pkill -f "convstream serve"; sleep 1
    left=$((560 - (SECONDS - start)))
    soak=0
    ((per_gpu == 35)) && soak=$(((left - 100) / 30 * 30)) && ((soak < 0)) && soak=0
    stamp "serve: $((2 * per_gpu)) NVDEC pipelines, $per_gpu seats per GPU, soak $soak s"
    SERVER="nvdec_seats_per_gpu = $per_gpu" OUT=$R timeout -k 5 $((left - 5)) \
        scripts/host-fill-check.sh /tmp/convstream "$clip" $((2 * per_gpu)) 0 20 "$soak" >/dev/null 2>&1
done
kill $dmon
stamp done
tar czf "$OUT/results.tgz" -C "$R" .
