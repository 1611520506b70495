#!/usr/bin/env bash
# Final one-run table: host jitter, bench --suite all on 1080p, e2e on 2160p.
set -u
cd "$(dirname "$0")"
export R=/tmp/results4; mkdir -p $R
export CONVSTREAM_KERNEL_CACHE=/tmp/kc
snap() { tar czf "$OUT/results.tgz" -C /tmp results4; }
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version --format=csv; ./convstream --version; nproc; uptime; } > $R/host.txt 2>&1
cat $R/host.txt > $R/summary.txt
./convstream run -i media/h264-1080p-600.mp4 -o null --device cuda --mask gaussian:size=13,sigma=3 --no-progress > $R/warm.log 2>&1
echo "== host jitter, idle host (20 s)" | tee -a $R/summary.txt
./host_jitter 20 2 4 | tee -a $R/summary.txt; snap
./convstream bench --device cuda --suite all --input media/h264-1080p.mp4 --out $R/all > $R/all.log 2>&1
echo "bench all exit $?" >> $R/summary.txt; snap
./convstream bench --device cuda --suite e2e --input media/h264-2160p.mp4 --out $R/e2e-2160p > $R/e2e-2160p.log 2>&1
echo "bench e2e 2160p exit $?" >> $R/summary.txt; snap
