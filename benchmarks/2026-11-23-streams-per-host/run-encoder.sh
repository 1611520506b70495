#!/usr/bin/env bash
# The default encoder on a GPU host without NVENC: the probe answers, OpenH264 is chosen.
set -uo pipefail
d=gpu-carry; export CONVSTREAM_KERNEL_CACHE=/tmp/ck
bash $d/unpack.sh
$d/convstream doctor 2>&1 | grep -E "NVENC|default video|^GPU|NVIDIA" | head -5
s=$(date +%s.%N)
timeout -k 5 120 $d/convstream run -y -i $d/clip1080.mp4 --decoder nvdec --device cuda --mask sharpen --no-progress -o /tmp/o.mp4 2>&1 | grep -E "video encoder|PCIe|frames in"
echo "run took $(awk -v s=$s -v e=$(date +%s.%N) 'BEGIN{printf "%.1f", e-s}') s"
$d/ffmpeg -v error -i /tmp/o.mp4 -f null - && echo "the .mp4 decodes cleanly"
$d/ffmpeg -hide_banner -i /tmp/o.mp4 2>&1 | grep -E "Video:" | head -1
