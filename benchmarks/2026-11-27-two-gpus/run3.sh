#!/usr/bin/env bash
# On a 2-GPU host: 24 NVDEC pipelines per GPU fell apart when one process filled both GPUs
# (run2.sh) although one GPU alone kept 24 and neither GPU's NVDEC was more than a fifth busy.
# Here the same step as two processes, one per GPU, at once; then in one process again.
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
bench() { # NAME GPUS PIPELINES
    timeout -k 5 100 /tmp/convstream bench --suite scale --decoder nvdec --gpus "$2" --pipelines "$3" \
        --scale-seconds 5 --input "$clip" --out "$R/$1" >"$R/$1.log" 2>&1
    grep -E "INFO scale|capacity" "$R/$1.log" >"$R/$1.txt"
}
stamp "two processes, 24 per GPU"
bench proc-gpu0 0 24 &
bench proc-gpu1 1 24 &
wait %2 %3
stamp "one process, 24 per GPU"
bench one-process all 24
kill $dmon
stamp done
tar czf "$OUT/results.tgz" -C "$R" .
