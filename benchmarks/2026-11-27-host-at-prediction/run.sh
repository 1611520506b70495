#!/usr/bin/env bash
# On a 2-GPU host, at the predicted NVDEC seats (24 per host, 12 per GPU): `doctor`; 24 NVDEC
# pipelines alone (ready, drops, memory per NVDEC pipeline); the full host, 24 NVDEC + 88
# software, looping the 4 s clip and then a 20 s one made of it (an NVDEC decoder is made
# anew at each loop: five times fewer with the longer clip). Drops are told by kind (nvN, swN).
set -u
cd "$(dirname "$0")/../.."
R=$OUT/r
mkdir -p "$R"
start=$SECONDS
stamp() { echo "[$((SECONDS - start)) s] $*" | tee -a "$R/steps.txt"; }
export CONVSTREAM_KERNEL_CACHE=/tmp/kc
xz -dc gpu-carry/convstream.xz >/tmp/convstream && chmod +x /tmp/convstream
nvidia-smi -L >"$R/gpus.txt" 2>&1
stamp doctor
timeout -k 5 30 /tmp/convstream doctor >"$R/doctor.txt" 2>&1
grep -E "NVDEC seats|predicted live" "$R/doctor.txt" | cut -c1-300
fill() { # NAME CLIP NVDEC SOFTWARE WINDOW
    stamp "serve $1: $3 NVDEC + $4 software, $2"
    mkdir -p "$R/$1"
    OUT="$R/$1" timeout -k 5 150 scripts/host-fill-check.sh /tmp/convstream "gpu-carry/$2" "$3" "$4" "$5" >/dev/null 2>&1
    cat "$R/$1"/*/summary.log | grep -vE "^  convstream_pinned|^[0-9], NVIDIA"
    tar czf "$OUT/results.tgz" -C "$R" .
}
fill nv24 clip1080.mp4 24 0 30
fill full-4s clip1080.mp4 24 88 45
fill full-20s clip1080-20s.mp4 24 88 45
stamp done
tar czf "$OUT/results.tgz" -C "$R" .
