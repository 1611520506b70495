#!/usr/bin/env bash
# One device call: the graph in `serve` (NVDEC and software), NHWC parity tests and the row-pass
# chunk sweep, then the NHWC/NCHW Python benchmark, timed alone.
d=gpu-a; B=/tmp/bin; mkdir -p $B /tmp/kcache /tmp/w
for f in convstream engines; do xz -dc $d/$f.xz > $B/$f; chmod +x $B/$f; done
cp $d/convstream-kernels.pack $B/ 2>/dev/null
export CONVSTREAM_KERNEL_CACHE=/tmp/kcache PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; cat $d/commit.txt; } > $OUT/gpu.txt 2>&1
py=/opt/torch/.venv/bin/python
$py -m pip install -q --no-deps --no-index --target /tmp/site $d/*.whl >> $OUT/gpu.txt 2>&1
export PYTHONPATH=/tmp/site
b() { timeout -k 5 60 $B/convstream bench --suite kernel --device cuda:0 --depths 8 --quick "$@"; }
cat > /tmp/runs <<'R'
nhwc-policy|--channels 3 --mask-sizes 3,5,13 --plane-sizes 1920x1080,3840x2160
nhwc-32x16x4x2-old|--channels 3 --mask-sizes 5,13 --plane-sizes 1920x1080,3840x2160 --separable-tiling 32x16x4x2
nhwc-48x16x4x2|--channels 3 --mask-sizes 5,13 --plane-sizes 1920x1080,3840x2160 --separable-tiling 48x16x4x2
nhwc-24x8x4x4|--channels 3 --mask-sizes 5,13 --plane-sizes 1920x1080,3840x2160 --separable-tiling 24x8x4x4
nhwc-48x8x4x2|--channels 3 --mask-sizes 5,13 --plane-sizes 1920x1080,3840x2160 --separable-tiling 48x8x4x2
nhwc-24x32x4x1|--channels 3 --mask-sizes 5,13 --plane-sizes 1920x1080,3840x2160 --separable-tiling 24x32x4x1
uv-policy-row8|--channels 2 --mask-sizes 5,13 --plane-sizes 960x540,1920x1080
uv-33x16x4x2-row4|--channels 2 --mask-sizes 5,13 --plane-sizes 960x540,1920x1080 --separable-tiling 33x16x4x2
planar-policy|--mask-sizes 3,5,13 --plane-sizes 1920x1080,3840x2160
R
# Phase A: tests, the serve check and cache-filling passes side by side.
(timeout -k 5 200 $B/engines stream_call:: --include-ignored --test-threads=4 > /tmp/t1.txt 2>&1; echo "rc $?" >> /tmp/t1.txt) &
(timeout -k 5 200 $B/engines gpu_parity_with_cpu_on_random_planes gradient_magnitudes ffmpeg_arithmetic --include-ignored --test-threads=3 > /tmp/t2.txt 2>&1; echo "rc $?" >> /tmp/t2.txt) &
(mkdir -p $OUT/graph; cp -r $B /tmp/gdist; OUT=$OUT/graph timeout -k 5 200 bash scripts/gpu-check.sh graph-serve /tmp/gdist > /tmp/graph.txt 2>&1; echo "rc $?" >> /tmp/graph.txt) &
(timeout -k 5 150 $py -m pytest -q -x python/tests/test_opencv_layouts.py python/tests/test_device_calls.py > /tmp/pyt.txt 2>&1; echo "rc $?" >> /tmp/pyt.txt) &
(timeout -k 5 100 $py python/bench/nhwc_gpu.py --repeat 1 > /tmp/pywarm.txt 2>&1) &
i=0
while IFS='|' read -r label args; do i=$((i+1)); (b $args --out /tmp/w/$i > /tmp/w/$i.log 2>&1) & done < /tmp/runs
wait
cat /tmp/t1.txt /tmp/t2.txt | grep -E "^test |test result|panicked|seed|^rc |left|right|rror" > $OUT/tests.txt
tail -5 /tmp/pyt.txt >> $OUT/tests.txt; tail -3 /tmp/pywarm.txt >> $OUT/tests.txt
cp /tmp/graph.txt $OUT/graph.txt
grep -h -i -E "differ|error" /tmp/w/*.log | head -20 >> $OUT/tests.txt
# Phase B: timed alone, kernels from the cache.
b --mask-sizes 3 --plane-sizes 3840x2160 --out /tmp/warm > /dev/null 2>&1
while IFS='|' read -r label args; do
  b $args --out /tmp/s > /tmp/s.log 2>&1
  echo "### $label ($args)"; grep -E "^\| [0-9]" /tmp/s/results.md; grep -i -E "differ|skipp" /tmp/s.log /tmp/s/results.md | head -5
done < /tmp/runs > $OUT/sweep.txt 2>&1
timeout -k 5 90 $py python/bench/nhwc_gpu.py --repeat 20 --json $OUT/nhwc.json > $OUT/nhwc.txt 2>&1
ls /tmp/kcache | wc -l >> $OUT/gpu.txt
