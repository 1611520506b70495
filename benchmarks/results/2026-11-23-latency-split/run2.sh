#!/usr/bin/env bash
# Host jitter, paced latency against steal time, 4K CPU use per thread, GPU tests.
set -u
cd "$(dirname "$0")"
export R=/tmp/results2; mkdir -p $R
export CONVSTREAM_KERNEL_CACHE=/tmp/kc
snap() { tar czf "$OUT/results.tgz" -C /tmp results2; }
{ nvidia-smi -L; ./convstream --version; uptime; } > $R/host.txt 2>&1
./convstream run -i media/h264-1080p-600.mp4 -o null --device cuda --mask gaussian:size=13,sigma=3 --no-progress > $R/warm.log 2>&1
echo "== host jitter, idle host (20 s)" | tee -a $R/summary.txt
./host_jitter 20 2 4 | tee -a $R/summary.txt; snap
# Paced run with /proc/stat sampled every 50 ms, to line slow frames up with steal.
(while :; do echo "T $(date +%s.%N)"; grep '^cpu' /proc/stat; sleep 0.05; done > $R/procstat.txt) & sampler=$!
date +%s.%N > $R/paced-start.txt
bash paced.sh paced-steal 0; kill $sampler; snap
echo "== host jitter during a paced run (20 s)" | tee -a $R/summary.txt
(./host_jitter 20 0 4 > $R/jitter-during-paced.txt) & j=$!
bash paced.sh paced-with-jitter 0; wait $j; cat $R/jitter-during-paced.txt | tee -a $R/summary.txt; snap
echo "== 2160p software, unpaced, CPU per thread" | tee -a $R/summary.txt
for i in 1 2; do
  bash watch.sh $R/threads-2160p-run-$i.txt -- ./convstream run -i media/h264-2160p.mp4 -o null --device cuda --mask edge:size=13,sigma=2 --decoder software --no-progress --stats-json $R/run-2160p-$i.json > $R/run-2160p-$i.log 2>&1
  tail -1 $R/run-2160p-$i.log | tee -a $R/summary.txt
  sort -t= -k2 -n -r $R/threads-2160p-run-$i.txt | awk '{s+=substr($2,8)} END {print "total cpu_ms", s}' | tee -a $R/summary.txt
  grep -v "^convstream " $R/threads-2160p-run-$i.txt | tee -a $R/summary.txt
done
snap
./convstream bench --suite e2e --input media/h264-2160p.mp4 --out $R/e2e-2160p > $R/e2e-2160p.log 2>&1
grep -A12 "End to end" $R/e2e-2160p/results.md | head -10 | tee -a $R/summary.txt; snap
echo "== GPU tests (full)" | tee -a $R/summary.txt
CONVSTREAM_TEST_GPU=1 timeout 330 ./tests/gpu --test-threads=1 --nocapture > $R/gpu-tests.log 2>&1; echo "gpu tests exit $?" | tee -a $R/summary.txt
grep -E "^test |parity:|test result" $R/gpu-tests.log | tee -a $R/summary.txt; snap
echo "== racecheck (quick parity)" | tee -a $R/summary.txt
CONVSTREAM_TEST_GPU=1 CONVSTREAM_TEST_QUICK=1 timeout 100 compute-sanitizer --tool racecheck --error-exitcode 3 ./tests/gpu gpu_parity_with_cpu_on_random_planes --test-threads=1 > $R/racecheck.log 2>&1; echo "racecheck exit $?" | tee -a $R/summary.txt
tail -3 $R/racecheck.log | tee -a $R/summary.txt
snap
