#!/usr/bin/env bash
# convstreamfilter behind GStreamer's own decoders on a GPU host that has no GStreamer (it is
# carried: `scripts/build-portable.sh ffmpeg binary ffmpeg-shared gst`, packed as
# gpu-carry/gst.tar.xz with the clips decoders.rs made, gpu-carry/clips):
#   1. the element's tests with CONVSTREAM_TEST_GPU=1 (device=cuda against device=cpu, ...);
#   2. decoders.rs with CONVSTREAM_TEST_GPU=1: the element on the CUDA engine behind avdec_h264
#      (frame threads, rendering into the pinned pool), openh264dec, avdec_h265 10-bit,
#      avdec_vp9, vp9dec and, ignored elsewhere, nvh264dec; each frame against convstream run
#      (software decoding, CPU engine);
#   3. compute-sanitizer memcheck over avdec_h264 and nvh264dec pipelines into device=cuda.
# `run-gpu.sh tests|checks|speed` runs parts 1-2, 3 or 4. Results under $OUT.
set -uo pipefail
part=${1:-all}
runs() { [ "$part" = all ] || [ "$part" = "$1" ]; }
d="$(cd "$(dirname "$0")" && pwd)"
carry="$(cd "$d/../../.." && pwd)/gpu-carry"
out=${OUT:-/tmp/out}; mkdir -p "$out"
root=/tmp/cs; rm -rf $root; mkdir -p $root
python3 -c "import tarfile,sys; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" "$carry/gst.tar.xz" $root
source $root/gst/env.sh
rel=$root/gst/release
export CONVSTREAM_KERNEL_CACHE=/tmp/ck
t() { timeout -k 5 "$@"; }
{ nvidia-smi -L; nproc; gst-launch-1.0 --version | head -2; gst-inspect-1.0 nvh264dec | head -3; } > "$out/host.txt" 2>&1

if runs tests; then
  (cd $rel/deps && CONVSTREAM_TEST_GPU=1 t 270 ./element --include-ignored --test-threads=1 --nocapture) > "$out/element.txt" 2>&1
  echo "rc=$?" >> "$out/element.txt"
  (cd $rel/deps && CONVSTREAM_TEST_GPU=1 CONVSTREAM_TEST_CLIPS="$carry/clips" t 270 ./decoders --include-ignored \
      --skip tee_videoconvert --test-threads=1 --nocapture) > "$out/decoders.txt" 2>&1
  echo "rc=$?" >> "$out/decoders.txt"
fi
export GST_PLUGIN_PATH=$root/gst/plugin
runs checks && for dec in avdec_h264 nvh264dec; do
  t 200 compute-sanitizer --tool memcheck --error-exitcode 9 gst-launch-1.0 -q \
    filesrc location="$carry/clips/avdec_h264-1920x1080.mp4" ! qtdemux ! h264parse ! $dec ! \
    convstreamfilter mask=gaussian:size=9 device=cuda name=f ! fakesink > "$out/sanitizer-$dec.txt" 2>&1
  echo "rc=$?" >> "$out/sanitizer-$dec.txt"
done

# 4. Frames/s behind avdec_h264 at 1080p (gaussian 13x13 on CUDA), three rounds alternating:
#    the decoder rendering into the element's pinned pool (lent, no copy), the same with
#    `identity drop-allocation=true` (the pool refused: each picture copied in), and
#    convstream run on the same file (software decoding) as the baseline. Steady state: (N2 -
#    N1) frames over the difference of the wall times of an N2- and an N1-frame clip, so
#    start-up (CUDA context, kernels, pinning the pool) cancels out. The clips are encoded here
#    (openh264enc, a moving zone plate: no clip that long fits the carry).
now() { date +%s.%N; }
wall() { local a b; a=$(now); t 120 bash -c "$1" > /dev/null 2>>"$out/speed-errors.txt" || echo "FAILED: $1" >> "$out/speed.txt"; b=$(now); python3 -c "print($b - $a)"; }
n1=300; n2=2100
rate() {
  local short long
  short=$(wall "${2//CLIP//tmp/bench-$n1.mp4}"); long=$(wall "${2//CLIP//tmp/bench-$n2.mp4}")
  python3 -c "print('$1', round(($n2 - $n1) / ($long - $short), 1), 'fps steady; wall', round($long, 2), 's for $n2 frames')" >> "$out/speed.txt"
}
tail="convstreamfilter mask=gaussian:size=13 device=cuda name=f ! fakesink"
if runs speed; then
  for n in $n1 $n2; do
    t 200 gst-launch-1.0 -q videotestsrc num-buffers=$n pattern=zone-plate kx2=20 ky2=20 kt=1 ! \
      video/x-raw,format=I420,width=1920,height=1080,framerate=25/1 ! openh264enc bitrate=8000000 ! \
      h264parse ! mp4mux ! filesink location=/tmp/bench-$n.mp4
  done
  ls -la /tmp/bench-*.mp4 >> "$out/speed.txt"
  for round in 1 2 3; do
    rate "element-pool" "gst-launch-1.0 -q filesrc location=CLIP ! qtdemux ! h264parse ! avdec_h264 ! queue ! $tail"
    rate "element-copy" "gst-launch-1.0 -q filesrc location=CLIP ! qtdemux ! h264parse ! avdec_h264 ! identity drop-allocation=true ! queue ! $tail"
    rate "convstream-run" "$rel/convstream run --no-progress --device cuda --decoder software --mask gaussian:size=13 -i CLIP -o null"
  done
fi
