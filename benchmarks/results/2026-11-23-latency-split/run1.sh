#!/usr/bin/env bash
# Paced latency split into parts, with variants; 2160p e2e repeats.
set -u
cd "$(dirname "$0")"
export R=/tmp/results1; mkdir -p $R
export CONVSTREAM_KERNEL_CACHE=/tmp/kc
snap() { tar czf "$OUT/results.tgz" -C /tmp results1; }
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,pstate,clocks.sm --format=csv; ./convstream --version; nproc
  for f in scaling_governor scaling_driver scaling_cur_freq scaling_max_freq; do echo "$f: $(cat /sys/devices/system/cpu/cpu0/cpufreq/$f 2>&1)"; done
  for s in /sys/devices/system/cpu/cpu0/cpuidle/state*; do echo "idle $(cat $s/name) latency=$(cat $s/latency)us disable=$(cat $s/disable)"; done
  cat /sys/module/intel_idle/parameters/max_cstate 2>&1; lscpu | grep -E 'Model name|MHz|NUMA|Socket|Thread'; cat /proc/cmdline; uptime; } > $R/host.txt 2>&1
cat $R/host.txt
top -b -n1 -w 200 | head -40 > $R/top-start.txt
(vmstat -t 1 > $R/vmstat.txt 2>&1 &)
hold_cstates() { python3 -c "import os,struct,time; fd=os.open('/dev/cpu_dma_latency',os.O_WRONLY); os.write(fd,struct.pack('i',0)); time.sleep(60)" & echo $!; }
# warm the kernel cache and the GPU
./convstream run -i media/h264-1080p-600.mp4 -o null --device cuda --mask gaussian:size=13,sigma=3 --no-progress > $R/warm.log 2>&1
bash paced.sh base-1 0; snap
c=$(hold_cstates); sleep 0.5; bash paced.sh cstate0-1 0; kill $c; snap
bash paced.sh threads2-1 2; snap
CONVSTREAM_SPIN_US=0 bash paced.sh spin0-1 0; snap
bash paced.sh base-2 0 --trace; snap
c=$(hold_cstates); sleep 0.5; bash paced.sh cstate0-2 0; kill $c; snap
bash paced.sh threads2-2 2; snap
for run in default-1 spin0 default-2; do
  [[ $run == spin0 ]] && export CONVSTREAM_SPIN_US=0 || unset CONVSTREAM_SPIN_US
  ./convstream bench --suite e2e --input media/h264-2160p.mp4 --out $R/e2e-2160p-$run > $R/e2e-2160p-$run.log 2>&1
  grep -A12 "End to end" $R/e2e-2160p-$run/results.md | head -14 | tee -a $R/summary.txt; snap
done
unset CONVSTREAM_SPIN_US
cat $R/summary.txt
pkill vmstat
top -b -n1 -w 200 | head -40 > $R/top-end.txt
snap
