#!/usr/bin/env bash
# soak: host memory of one looping `run` on the CUDA engine, printed every second
#
# Host memory over a long run: INPUT looped through the CUDA engine (13x13 dense on every plane)
# to the null sink, resident memory printed every second, stopped by SIGINT after SECONDS.
#   scripts/gpu-check.sh soak BINARY INPUT SECONDS      (stats JSON and log go to $OUT or ./soak-results)
set -u
bin="$1" input="$2" seconds="$3"
out="${OUT:-soak-results}"
mkdir -p "$out"
config="$(mktemp --suffix .toml)"
cat >"$config" <<TOML
[[pipeline]]
name = "soak"
[pipeline.source]
url = "$input"
loop = true
[pipeline.filter]
mask = "edge:size=13,sigma=2"
device = "cuda"
[pipeline.sink]
url = "null"
TOML
"$bin" run --config "$config" --no-progress --stats-json "$out/soak.json" 2>"$out/soak.log" &
pid=$!
for i in $(seq 1 "$seconds"); do
    sleep 1
    echo "t=${i}s rss_kb=$(awk '/VmRSS/{print $2}' "/proc/$pid/status")"
done
kill -INT "$pid"
wait "$pid"
echo "exit $?"
tail -n 2 "$out/soak.log"
rm -f "$config"
