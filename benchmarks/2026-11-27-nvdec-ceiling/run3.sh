#!/usr/bin/env bash
# On a 2-GPU host, with NVDEC seats predicted per host (32, 16 per GPU here): `doctor`; the
# NVDEC ramp at the predicted 16 per GPU and the decode capacity on both GPUs at once; 112
# software pipelines with the default start gate (half the cores at a time) and with every
# core's worth at once (where /readyz's time goes: readyz-timeline.txt); a full host at the
# predicted seats, 32 NVDEC alone (memory per NVDEC pipeline) and with 80 software, and a soak.
set -u
cd "$(dirname "$0")/../.."
R=$OUT/r
mkdir -p "$R"
start=$SECONDS
stamp() { echo "[$((SECONDS - start)) s] $*" | tee -a "$R/steps.txt"; }
export CONVSTREAM_KERNEL_CACHE=/tmp/kc
xz -dc gpu-carry/convstream.xz >/tmp/convstream && chmod +x /tmp/convstream
clip="$PWD/gpu-carry/clip1080.mp4"
stamp doctor
timeout -k 5 30 /tmp/convstream doctor >"$R/doctor.txt" 2>&1
grep -iE "nvdec" "$R/doctor.txt" | cut -c1-400
stamp "bench nvdec 16 per GPU"
timeout -k 5 120 /tmp/convstream bench --suite scale --decoder nvdec --gpus all --pipelines 16 \
    --scale-seconds 5 --input "$clip" --out "$R/bench-nvdec-16" >"$R/bench-nvdec-16.log" 2>&1
grep -E "INFO scale nvdec|capacity, nvdec" "$R/bench-nvdec-16.log" | tee "$R/bench.txt"
fill() { # NAME NVDEC SOFTWARE WINDOW SOAK [SERVER]
    stamp "serve $1: $2 NVDEC + $3 software${6:+, $6}"
    mkdir -p "$R/$1"
    SERVER="${6:-}" OUT="$R/$1" timeout -k 5 $((130 + $5)) \
        scripts/host-fill-check.sh /tmp/convstream "$clip" "$2" "$3" "$4" "$5" >/dev/null 2>&1
    cat "$R/$1"/*/summary.log | grep -vE "^  convstream_|^[0-9], NVIDIA"
    tar czf "$OUT/results.tgz" -C "$R" .
}
fill sw112-gate16 0 112 20 0
fill sw112-gate32 0 112 20 0 'starting_at_once = 32'
fill nv32 32 0 20 0
left=$((470 - (SECONDS - start)))
soak=$(((left - 110) / 30 * 30))
((soak < 0)) && soak=0
fill full-32-80 32 80 30 "$soak"
stamp done
tar czf "$OUT/results.tgz" -C "$R" .
cp "$R/steps.txt" "$OUT/"
