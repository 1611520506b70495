#!/usr/bin/env bash
# One device call through the GPU check entry point (scripts/gpu-check.sh):
#  1. side by side, nothing timed: NV12/RGB parity against the CPU engine on random planes (the
#     quick set), the graph in `serve`, the 1,000-frame clip;
#  2. Python's NVDEC reads into torch and CuPy, several frames in flight, against software decoding;
#  3. timed alone: `startup` (the 10,000-frame clip skipped), PyNvVideoCodec importable;
#  4. timed alone: the 10,000-frame clip with the completion thread's spin-wait and without it.
# CARRY: the folder carried to the GPU host (xz'd binaries, the wheel, PyNvVideoCodec's folder).
d=${CARRY:-gpu-a}; B=/tmp/dist; mkdir -p $B/wheels /tmp/pynv /tmp/kc /tmp/site
for f in convstream engines ffmpeg; do xz -dc $d/$f.xz > $B/$f; chmod +x $B/$f; done
cp $d/libopenh264.so.7 $d/convstream-kernels.pack $B/; cp $d/*.whl $B/wheels/
py=/opt/torch/.venv/bin/python
tar -xJf $d/pynv.tar.xz -C /tmp/pynv
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; nproc; cat $d/commit.txt; } > $OUT/gpu.txt 2>&1
bash scripts/gpu-check.sh help > $OUT/help.txt 2>&1
(CONVSTREAM_KERNEL_CACHE=/tmp/kc CONVSTREAM_TEST_QUICK=1 timeout -k 5 150 $B/engines gpu_parity_with_cpu_on_random_planes --include-ignored --nocapture > $OUT/parity.txt 2>&1; echo "rc $?" >> $OUT/parity.txt) &
(PATH=$B:/opt/torch/.venv/bin:$PATH LD_LIBRARY_PATH=$B timeout -k 5 140 bash scripts/gpu-check.sh startup --make-media $B/startup-media > $OUT/media.txt 2>&1; echo "rc $?" >> $OUT/media.txt) &
(mkdir -p $OUT/graph; cp -r $B /tmp/gdist; OUT=$OUT/graph timeout -k 5 200 bash scripts/gpu-check.sh graph-serve /tmp/gdist > $OUT/graph.txt 2>&1; echo "rc $?" >> $OUT/graph.txt) &
wait
$py -m zipfile -e $B/wheels/*.whl /tmp/site
(PYTHONPATH=/tmp/site CONVSTREAM_BIN=$B/convstream timeout -k 5 70 $py -m pytest -q -p no:cacheprovider -m gpu python/tests/test_gpu.py -k "read_as_torch or nvdec_pictures" > $OUT/pytests.txt 2>&1; echo "rc $?" >> $OUT/pytests.txt)
mkdir -p $OUT/startup
OUT=$OUT/startup PYTHON=$py PYTHONPATH=/tmp/pynv ROUNDS=3 CONVSTREAM_CHECK_SKIP=long timeout -k 5 130 bash scripts/gpu-check.sh startup $B $B/startup-media > $OUT/startup.txt 2>&1; echo "rc $?" >> $OUT/startup.txt
M=$B/startup-media; cd /tmp
LD_LIBRARY_PATH=$B $B/ffmpeg -v error -stream_loop 9 -i $M/c1000.mp4 -c copy -y /tmp/c10000.mp4
printf '[[pipeline]]\nname = "main"\n[pipeline.source]\nurl = "x.mp4"\n[pipeline.filter]\nmask = "identity"\n[pipeline.filter.gpu]\nspin_us = 0\n[pipeline.sink]\nurl = "null"\n' > /tmp/spin0.toml
run_args="-i /tmp/c10000.mp4 --mask gaussian:size=13 --planes all --decoder software --device cuda --no-progress -f null -"
TIMEFORMAT='%R %U %S'
for round in 1 2 3; do
  for what in ffmpeg spin300 spin0; do
    case $what in
      ffmpeg) cmd="LD_LIBRARY_PATH=$B $B/ffmpeg -hide_banner -nostdin -i /tmp/c10000.mp4 -f null -" ;;
      spin300) cmd="$B/convstream run $run_args" ;;
      spin0) cmd="$B/convstream run --config /tmp/spin0.toml $run_args" ;;
    esac
    t=$( { time timeout -k 5 40 bash -c "$cmd" > /tmp/$what.log 2>&1; } 2>&1 )
    echo "$round $what $t"
  done
done > $OUT/spin.txt 2>&1
tail -n 1 /tmp/spin300.log /tmp/spin0.log >> $OUT/spin.txt
