#!/usr/bin/env bash
# On a 2-GPU host, NVDEC through FFmpeg's own decoders (h264 + the h264_nvdec accelerator) on
# the pipelines' shared context, against the tree before (94596c3's successor 93669f2,
# `convstream-base`, NVDEC through h264_cuvid):
# 1. the same output: the real clip through NVDEC (new), h264_cuvid named, and the software
#    decoder, each into the CUDA engine, and NVDEC into the CPU engine: all byte-identical;
#    scripts/nvdec-check.sh (streams NVDEC cannot take as they are, stops, DELETE);
# 2. `bench --suite scale --decoder nvdec --gpus all`: 24 per GPU with both binaries, then
#    56 per GPU (the prediction for one GPU alone) with the new one;
# 3. `serve` with 112 NVDEC pipelines, 56 seats per GPU (scripts/host-fill-check.sh), a soak.
set -u
cd "$(dirname "$0")/../.."
R=$OUT/r
mkdir -p "$R"
start=$SECONDS
stamp() { echo "[$((SECONDS - start)) s] $*" | tee -a "$R/steps.txt"; }
export CONVSTREAM_KERNEL_CACHE=/tmp/kc
for b in convstream convstream-base; do xz -dc gpu-carry/$b.xz >/tmp/$b && chmod +x /tmp/$b; done
clip="$PWD/gpu-carry/clip1080.mp4"
nvidia-smi dmon -s u -d 1 -o T >"$R/dmon.txt" 2>&1 &
dmon=$!

stamp "same output"
same() { # NAME ARGS...: one run to $name.y4m
    local name=$1; shift
    timeout -k 5 60 /tmp/convstream run -i "$clip" --mask gaussian:size=13,sigma=3 --no-progress \
        -o "/tmp/$name.y4m" "$@" >"$R/same-$name.log" 2>&1 || echo "$name: exit $?" >>"$R/same.txt"
}
same nvdec-cuda --decoder nvdec --device cuda
same cuvid-cuda --decoder h264_cuvid --device cuda
same software-cuda --decoder software --device cuda
same nvdec-cpu --decoder nvdec --device cpu
for other in cuvid-cuda software-cuda nvdec-cpu; do
    if cmp -s /tmp/nvdec-cuda.y4m /tmp/$other.y4m; then r=identical; else r=DIFFERENT; fi
    echo "nvdec-cuda vs $other: $r ($(stat -c %s /tmp/nvdec-cuda.y4m) / $(stat -c %s /tmp/$other.y4m) bytes)" >>"$R/same.txt"
done
grep -hE "decoder|PCIe" "$R"/same-nvdec-cuda.log | head -5 >>"$R/same.txt"
rm -f /tmp/*.y4m
cat "$R/same.txt"
stamp "nvdec-check"
OUT=$R timeout -k 5 150 scripts/nvdec-check.sh /tmp "$PWD/gpu-carry/nvdec-media" 2>&1 | grep -E '^(ok|FAILED|info|failures)' >"$R/nvdec-check.txt"
cat "$R/nvdec-check.txt"

bench() { # NAME BINARY PIPELINES
    stamp "bench $1"
    timeout -k 5 120 /tmp/$2 bench --suite scale --decoder nvdec --gpus all --pipelines "$3" \
        --scale-seconds 5 --input "$clip" --out "$R/bench-$1" >"$R/bench-$1.log" 2>&1
    grep -E "INFO scale nvdec|capacity, nvdec" "$R/bench-$1.log" | sed "s/^/$1: /" | tee -a "$R/bench.txt"
}
bench base-24 convstream-base 24
bench new-24-56 convstream 24,56
tar czf "$OUT/results.tgz" -C "$R" .

left=$((560 - (SECONDS - start)))
soak=$(((left - 120) / 30 * 30))
((soak < 0)) && soak=0
stamp "serve: 112 NVDEC, 56 seats per GPU, soak $soak s"
SERVER='nvdec_seats_per_gpu = 56' OUT=$R timeout -k 5 $((left - 5)) \
    scripts/host-fill-check.sh /tmp/convstream "$clip" 112 0 30 "$soak" >/dev/null 2>&1
cat "$R"/host-fill-112-0-convstream/summary.log
kill $dmon
stamp done
tar czf "$OUT/results.tgz" -C "$R" .
cp "$R/steps.txt" "$OUT/"
