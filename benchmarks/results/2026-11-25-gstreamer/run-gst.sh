#!/usr/bin/env bash
# The GStreamer element on a GPU host that has no GStreamer (it is carried, built by
# `scripts/build-portable.sh binary gst` and packed as gpu-carry/gst.tar.xz):
#   1. the element's tests with CONVSTREAM_TEST_GPU=1: device=cuda against device=cpu in every
#      format and kernel path, EOS draining the CUDA lanes, gst-launch against convstream run;
#   2. compute-sanitizer over a short device=cuda pipeline;
#   3. frames/s of the element against `convstream run` on the same raw frames (a file in the
#      page cache: `filesrc ! convstreamfilter ! sink` and `convstream run -i raw.yuv -o null`),
#      and with a source that costs nothing (imagefreeze); into fakesink (the element copies
#      into the default layout) and fakevideosink (it reads VideoMeta: the element hands over
#      the engine's planes). Three rounds alternating. Each rate is steady-state: (N2 - N1)
#      frames over the difference of two runs' wall times, so start-up (CUDA context, kernels)
#      cancels out;
#   4. the pool the element proposes upstream, against copying each buffer in (below).
# `run-gst.sh tests|speed|pool` runs one part. Results under $OUT.
set -uo pipefail
d="$(cd "$(dirname "$0")" && pwd)"
out=${OUT:-/tmp/out}; mkdir -p "$out"
root=/tmp/cs; rm -rf $root; mkdir -p $root
python3 -c "import tarfile,sys; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" "$d/gst.tar.xz" $root
source $root/gst/env.sh
rel=$root/gst/release
export CONVSTREAM_KERNEL_CACHE=/tmp/ck
{ nvidia-smi -L; nproc; gst-launch-1.0 --version | head -2; } > "$out/host.txt" 2>&1
t() { timeout -k 5 "$@"; }
part=${1:-all}
now() { date +%s.%N; }
# wall seconds of one run of "$1" (a command line for bash -c); its output goes to $log-errors.txt
wall() { local a b; a=$(now); t 120 bash -c "$1" > /dev/null 2>>"$out/$log-errors.txt"; b=$(now); python3 -c "print($b - $a)"; }
# name n1 n2 command-with-NUM: steady-state frames/s, into $log.txt
rate() {
  local t1 t2
  t1=$(wall "${4//NUM/$2}"); t2=$(wall "${4//NUM/$3}")
  python3 -c "print('$1', round(($3 - $2) / ($t2 - $t1), 1), 'fps; wall', round($t2, 2), 's for $3')" >> "$out/$log.txt"
}
runs() { [ "$part" = all ] || [ "$part" = "$1" ]; }

if runs tests; then
  (cd $rel/deps && CONVSTREAM_TEST_GPU=1 t 400 ./element --test-threads=1 --nocapture) > "$out/tests.txt" 2>&1
  echo "rc=$?" >> "$out/tests.txt"
  GST_PLUGIN_PATH=$root/gst/plugin t 120 compute-sanitizer --tool memcheck --error-exitcode 9 gst-launch-1.0 -q videotestsrc num-buffers=12 ! \
    video/x-raw,format=P010_10LE,width=640,height=360 ! convstreamfilter mask=edge:size=13 device=cuda ! fakesink \
    > "$out/sanitizer.txt" 2>&1
  echo "rc=$?" >> "$out/sanitizer.txt"
fi

if runs speed; then
  export GST_PLUGIN_PATH=$root/gst/plugin
  log=speed
  mask=edge:size=13
  # size gst-format ffmpeg-format frame-bytes n1 n2
  for config in "1920x1080 I420 yuv420p 3110400 200 1000" "1920x1080 I420_10LE yuv420p10le 6220800 100 500" \
                "3840x2160 I420 yuv420p 12441600 50 250"; do
    read -r size gfmt ffmt fb n1 n2 <<<"$config"
    w=${size%x*}; h=${size#*x}
    caps="video/x-raw,format=$gfmt,width=$w,height=$h,framerate=25/1"
    # The same raw frames for the element and for convstream run, read from the page cache.
    rm -f /tmp/raw-*.yuv
    t 120 gst-launch-1.0 -q videotestsrc num-buffers=$n2 pattern=smpte ! $caps ! filesink location=/tmp/raw-$n2.yuv
    head -c $((n1 * fb)) /tmp/raw-$n2.yuv > /tmp/raw-$n1.yuv
    cat /tmp/raw-*.yuv > /dev/null
    file="gst-launch-1.0 -q filesrc location=/tmp/raw-NUM.yuv blocksize=$fb ! $caps"
    frozen="gst-launch-1.0 -q videotestsrc num-buffers=1 pattern=smpte ! $caps ! imagefreeze num-buffers=NUM"
    for round in 1 2 3; do
      echo "# $size $gfmt round $round" >> "$out/speed.txt"
      rate "frozen-element-copy" $n1 $n2 "$frozen ! convstreamfilter mask=$mask device=cuda ! fakesink sync=false"
      rate "frozen-element-planes" $n1 $n2 "$frozen ! convstreamfilter mask=$mask device=cuda ! fakevideosink sync=false"
      rate "file-source-only" $n1 $n2 "$file ! fakesink sync=false"
      rate "file-element-copy" $n1 $n2 "$file ! convstreamfilter mask=$mask device=cuda ! fakesink sync=false"
      rate "file-element-planes" $n1 $n2 "$file ! convstreamfilter mask=$mask device=cuda ! fakevideosink sync=false"
      rate "file-queue-element-planes" $n1 $n2 "$file ! queue ! convstreamfilter mask=$mask device=cuda ! fakevideosink sync=false"
      rate "file-element-planes-1x1" $n1 $n2 "$file ! convstreamfilter mask=$mask device=cuda streams=1 frames-per-stream=1 ! fakevideosink sync=false"
      rate "file-run-cuda" $n1 $n2 "$rel/convstream run --no-progress -i /tmp/raw-NUM.yuv --input-format rawvideo --size $size --pix-fmt $ffmt --framerate 25 --mask $mask --device cuda -o null"
    done
  done
  rm -f /tmp/raw-*.yuv
fi

# 4. The pool the element proposes upstream: videotestsrc (solid colour, cheap to paint) writes
#    into it and the engine reads those planes, against the same pipeline with the ALLOCATION
#    query stopped by `identity drop-allocation=true` (the element copies each buffer in).
if runs pool; then
  export GST_PLUGIN_PATH=$root/gst/plugin
  log=pool
  mask=edge:size=13
  for config in "1920x1080 500 3000" "3840x2160 100 600"; do
    read -r size n1 n2 <<<"$config"
    src="gst-launch-1.0 -q videotestsrc num-buffers=NUM pattern=solid-color ! video/x-raw,format=I420,width=${size%x*},height=${size#*x},framerate=25/1"
    for round in 1 2 3; do
      echo "# $size round $round" >> "$out/pool.txt"
      rate "source-only" $n1 $n2 "$src ! fakevideosink sync=false"
      rate "element-pool-lent" $n1 $n2 "$src ! convstreamfilter mask=$mask device=cuda ! fakevideosink sync=false"
      rate "element-copied-in" $n1 $n2 "$src ! identity drop-allocation=true ! convstreamfilter mask=$mask device=cuda ! fakevideosink sync=false"
    done
  done
fi
