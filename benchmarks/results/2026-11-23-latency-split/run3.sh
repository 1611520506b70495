#!/usr/bin/env bash
# Same binary on another host kind: host jitter, paced latency, 2160p e2e; the GPU tests the
# last call's time limit cut.
set -u
cd "$(dirname "$0")"
export R=/tmp/results3; mkdir -p $R
export CONVSTREAM_KERNEL_CACHE=/tmp/kc
snap() { tar czf "$OUT/results.tgz" -C /tmp results3; }
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version --format=csv; ./convstream --version; nproc; lscpu | grep -E 'Model name'; uptime; } > $R/host.txt 2>&1
cat $R/host.txt > $R/summary.txt
./convstream run -i media/h264-1080p-600.mp4 -o null --device cuda --mask gaussian:size=13,sigma=3 --no-progress > $R/warm.log 2>&1
echo "== host jitter, idle host (20 s)" | tee -a $R/summary.txt
./host_jitter 20 2 4 | tee -a $R/summary.txt; snap
bash paced.sh paced-1 0; snap
bash paced.sh paced-2 0; snap
./convstream bench --suite e2e --input media/h264-2160p.mp4 --out $R/e2e-2160p > $R/e2e-2160p.log 2>&1
grep -A14 "End to end" $R/e2e-2160p/results.md | head -10 | tee -a $R/summary.txt; snap
echo "== GPU tests not reached last time" | tee -a $R/summary.txt
for t in large_planes_take_wide_tiles_and_match_the_cpu missing_gpu_is_a_clear_error_and_auto_falls_back pooled_frames_go_direct_and_match_the_cpu; do
  CONVSTREAM_TEST_GPU=1 timeout 150 ./tests/gpu $t --exact --test-threads=1 > $R/test-$t.log 2>&1; echo "$t exit $?" | tee -a $R/summary.txt
  grep "test result" $R/test-$t.log | tee -a $R/summary.txt; snap
done
