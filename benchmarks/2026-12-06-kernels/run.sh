#!/usr/bin/env bash
# One device call: exactness tests of the streaming kernels beside a cache-filling pass
# (NVRTC is CPU-bound), then the kernel-suite sweep and the NHWC/NCHW Python benchmark, timed alone.
d=gpu-k
export CONVSTREAM_KERNEL_CACHE=/tmp/kcache PYTHONUNBUFFERED=1
mkdir -p /tmp/kcache /tmp/w
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; cat $d/commit.txt; } > $OUT/gpu.txt 2>&1
py=/opt/torch/.venv/bin/python
$py -m pip install -q --no-deps --no-index --target /tmp/site $d/*.whl >> $OUT/gpu.txt 2>&1
export PYTHONPATH=/tmp/site
b() { timeout -k 5 50 $d/convstream bench --suite kernel --device cuda:0 --depths 8 --quick "$@"; }
cat > /tmp/runs <<'R'
policy|--mask-sizes 3,5,7 --plane-sizes 1920x1080,3840x2160
tiled-old|--mask-sizes 3,5,7 --plane-sizes 1920x1080,3840x2160 --dense-tiling 32x8x4x4 --separable-tiling 32x16x4x2
32x4x8x8s|--mask-sizes 3,5,7 --plane-sizes 1920x1080,3840x2160 --dense-tiling 32x4x8x8s --separable-tiling 32x4x8x8s
32x4x16x4s|--mask-sizes 3,5 --plane-sizes 1920x1080,3840x2160 --dense-tiling 32x4x16x4s --separable-tiling 32x4x16x4s
64x2x16x8s|--mask-sizes 3,5 --plane-sizes 1920x1080,3840x2160 --dense-tiling 64x2x16x8s --separable-tiling 64x2x16x8s
nhwc-policy|--channels 3 --mask-sizes 3,5,13 --plane-sizes 1920x1080,3840x2160
nhwc-sep-32x8x12x2|--channels 3 --mask-sizes 13 --plane-sizes 1920x1080,3840x2160 --separable-tiling 32x8x12x2
nhwc-sep-16x16x12x2|--channels 3 --mask-sizes 13 --plane-sizes 1920x1080,3840x2160 --separable-tiling 16x16x12x2
nhwc-sep-32x16x8x2|--channels 3 --mask-sizes 13 --plane-sizes 1920x1080,3840x2160 --separable-tiling 32x16x8x2
planar-13|--mask-sizes 13 --plane-sizes 1920x1080,3840x2160
R
# Phase A: tests and the cache-filling pass side by side.
(timeout -k 5 110 $d/engines streaming:: --include-ignored --test-threads=1 > /tmp/t1.txt 2>&1; echo "rc $?" >> /tmp/t1.txt) &
(timeout -k 5 110 $d/engines stream_call::channels_last stream_call::strided stream_call::batches --include-ignored --test-threads=3 > /tmp/t2.txt 2>&1; echo "rc $?" >> /tmp/t2.txt) &
(timeout -k 5 100 $py python/bench/nhwc_gpu.py --repeat 1 > /tmp/pywarm.txt 2>&1) &
i=0
while IFS='|' read -r label args; do
  i=$((i+1)); (b $args --out /tmp/w/$i > /tmp/w/$i.log 2>&1) &
done < /tmp/runs
wait
cat /tmp/t1.txt /tmp/t2.txt | grep -E "^test |test result|panicked|seed|streaming:|^rc |left|right|rror" > $OUT/tests.txt
tail -3 /tmp/pywarm.txt >> $OUT/tests.txt
grep -h -i -E "differ|error" /tmp/w/*.log | head -20 >> $OUT/tests.txt
# Phase B: timed alone, kernels from the cache.
b --mask-sizes 3 --plane-sizes 3840x2160 --out /tmp/warm > /dev/null 2>&1
while IFS='|' read -r label args; do
  b $args --out /tmp/s > /tmp/s.log 2>&1
  echo "### $label ($args)"; grep -E "^\| [0-9]" /tmp/s/results.md; grep -i -E "differ|skipp" /tmp/s.log /tmp/s/results.md | head -5
done < /tmp/runs > $OUT/sweep.txt 2>&1
timeout -k 5 60 $py python/bench/nhwc_gpu.py --repeat 20 --json $OUT/nhwc.json > $OUT/nhwc.txt 2>&1
ls /tmp/kcache | wc -l >> $OUT/gpu.txt
