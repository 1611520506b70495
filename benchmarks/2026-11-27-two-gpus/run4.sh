#!/usr/bin/env bash
# On a 2-GPU host: is the NVDEC fall-off at 24 per GPU on both GPUs new? The same bench step
# with this tree's binary and the one before (94596c3, convstream-base), alternated
# (new, base, base, new). Then a full host in one `serve` at the seats measured with both GPUs
# busy (16 per GPU): 32 NVDEC + 80 software pipelines, and a soak.
set -u
cd "$(dirname "$0")/../.."
R=$OUT/r
mkdir -p "$R"
start=$SECONDS
stamp() { echo "[$((SECONDS - start)) s] $*" | tee -a "$R/steps.txt"; }
export CONVSTREAM_KERNEL_CACHE=/tmp/kc
xz -dc gpu-carry/convstream.xz >/tmp/convstream && xz -dc gpu-carry/convstream-base.xz >/tmp/convstream-base
chmod +x /tmp/convstream /tmp/convstream-base
clip="$PWD/gpu-carry/clip1080.mp4"
round=0
for binary in convstream convstream-base convstream-base convstream; do
    round=$((round + 1))
    stamp "round $round: $binary"
    timeout -k 5 60 /tmp/$binary bench --suite scale --decoder nvdec --gpus all --pipelines 24 \
        --scale-seconds 5 --input "$clip" --out "$R/ab-$round-$binary" >"$R/ab-$round.log" 2>&1
    grep -E "INFO scale nvdec" "$R/ab-$round.log" | sed "s/^/$binary: /" >>"$R/ab.txt"
done
left=$((460 - (SECONDS - start)))
soak=$(((left - 110) / 30 * 30))
((soak < 0)) && soak=0
stamp "serve: 32 NVDEC (16 seats per GPU) + 80 software, soak $soak s"
SERVER='nvdec_seats_per_gpu = 16' OUT=$R timeout -k 5 $((left - 5)) \
    scripts/host-fill-check.sh /tmp/convstream "$clip" 32 80 30 "$soak" >/dev/null 2>&1
stamp done
tar czf "$OUT/results.tgz" -C "$R" .
