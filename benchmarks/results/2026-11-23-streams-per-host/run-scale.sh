#!/usr/bin/env bash
# bench --suite scale on a real 1080p25 H.264 clip: DECODER and the pipeline counts PIPELINES.
set -uo pipefail
d=gpu-carry; out=/tmp/scale-$1; mkdir -p $out
export CONVSTREAM_KERNEL_CACHE=/tmp/ck
bash $d/unpack.sh
ulimit -n 65536 2>/dev/null
nproc; free -g | head -2
timeout -k 10 ${3:-540} $d/convstream bench --suite scale --device cuda --decoder $1 --input $d/clip1080.mp4 \
  --pipelines $2 --scale-seconds ${SCALE_SECONDS:-6} --out $out > $out/bench.log 2>&1
echo "bench exit $?"
grep -E "INFO scale " $out/bench.log | sed 's/^.*INFO //'
grep -E "^\|" $out/results.md
grep -iE "error|warn|fail" $out/bench.log | sort | uniq -c | sort -rn | head -8
tar czf $OUT/scale-$1.tgz -C $out --exclude='*.mp4' .
