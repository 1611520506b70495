#!/usr/bin/env bash
# serve with four looping NVDEC pipelines on the 1080p clip: the GPU metrics beside nvidia-smi.
set -uo pipefail
d=gpu-carry; out="${OUT:-gpu-results}"; mkdir -p "$out"
export CONVSTREAM_KERNEL_CACHE=/tmp/ck
work=$(mktemp -d); port=18686
{
echo '[server]'; echo "listen = \"127.0.0.1:$port\""; echo 'watch = false'
for i in 1 2 3 4; do
  echo '[[pipeline]]'; echo "name = \"n$i\""
  echo "source = { url = \"$PWD/$d/clip1080.mp4\", decoder = \"nvdec\", loop = true }"
  echo 'filter = { mask = "gaussian:size=13,sigma=3", device = "cuda" }'
  echo 'sink = { url = "null" }'
done
} > $work/serve.toml
$d/convstream-new serve --config $work/serve.toml > $out/serve.log 2>&1 &
server=$!
sleep 6
for n in 1 2; do
  curl -s http://127.0.0.1:$port/metrics > $out/metrics-$n.txt
  nvidia-smi --query-gpu=index,uuid,utilization.gpu,utilization.decoder,memory.used,memory.total --format=csv,noheader,nounits > $out/smi-$n.txt
  sleep 2
done
kill -TERM $server; wait $server; echo "serve exit $?"
for n in 1 2; do
  echo "--- scrape $n"; grep -E '^convstream_(gpu|nvdec)|^convstream_frames_per_second|^process_(cpu|threads|resident)|^convstream_build' $out/metrics-$n.txt
  echo "nvidia-smi: $(cat $out/smi-$n.txt)"
done
