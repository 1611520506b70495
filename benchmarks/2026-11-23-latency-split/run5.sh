#!/usr/bin/env bash
# A/B: decoder threads at nice 0 against nice 10 (the new default), unpaced software decoding,
# alternated; thread priorities seen in /proc; e2e bench at 2160p with the default.
set -u
cd "$(dirname "$0")"
export R=/tmp/results5; mkdir -p $R
export CONVSTREAM_KERNEL_CACHE=/tmp/kc
snap() { tar czf "$OUT/results.tgz" -C /tmp results5; }
{ nvidia-smi -L; ./convstream --version; uptime; } > $R/summary.txt 2>&1
./convstream run -i media/h264-1080p-600.mp4 -o null --device cuda --mask gaussian:size=13,sigma=3 --no-progress > $R/warm.log 2>&1
config() { # config FILE INPUT NICE
cat > "$1" <<TOML
[[pipeline]]
name = "ab"
[pipeline.source]
url = "$2"
decoder = "software"
decoder_nice = $3
[pipeline.filter]
mask = "edge:size=13,sigma=2"
device = "cuda"
[pipeline.sink]
url = "null"
TOML
}
for input in h264-1080p.mp4 h264-2160p.mp4; do
  for round in 1 2 3; do
    for nice in 0 10; do
      name=ab-${input%.mp4}-nice$nice-$round
      config $R/$name.toml media/$input $nice
      ./convstream run --config $R/$name.toml --no-progress --stats-json $R/$name.json > $R/$name.log 2>&1 &
      pid=$!
      sleep 0.6; for t in /proc/$pid/task/*; do echo "$(cat $t/comm 2>/dev/null) nice=$(awk '{print $19}' $t/stat 2>/dev/null)"; done | sort | uniq -c > $R/$name-nice.txt
      wait $pid
      python3 -c "import json,sys; p=json.load(open('$R/$name.json'))['pipelines'][0]; print('$name', round(p['fps'],1), 'fps, p50', p['latency_p50_ms'], 'p99', p['latency_p99_ms'])" | tee -a $R/summary.txt
    done
  done
  snap
done
cat $R/ab-h264-1080p-nice10-1-nice.txt $R/ab-h264-1080p-nice0-1-nice.txt >> $R/summary.txt
./convstream bench --device cuda --suite e2e --input media/h264-2160p.mp4 --out $R/e2e-2160p > $R/e2e-2160p.log 2>&1
grep -E "^\|" $R/e2e-2160p/results.md | tee -a $R/summary.txt
snap
