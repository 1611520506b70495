#!/usr/bin/env bash
# One device call: NV12/RGB parity against the CPU engine on random planes (the whole set)
# beside making the 1,000-frame clip, then whole commands against FFmpeg's decode-only on 1,000
# and 10,000 frames and Python's NVDEC into torch beside PyNvVideoCodec, timed alone.
# CARRY: the folder carried to the GPU host (xz'd binaries, the wheel, PyNvVideoCodec's folder).
d=${CARRY:-gpu-a}; B=/tmp/dist; mkdir -p $B/wheels /tmp/pynv /tmp/kc
for f in convstream engines ffmpeg; do xz -dc $d/$f.xz > $B/$f; chmod +x $B/$f; done
cp $d/libopenh264.so.7 $d/convstream-kernels.pack $B/; cp $d/*.whl $B/wheels/
py=/opt/torch/.venv/bin/python
tar -xJf $d/pynv.tar.xz -C /tmp/pynv
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; nproc; cat $d/commit.txt; $py --version; } > $OUT/gpu.txt 2>&1
(CONVSTREAM_KERNEL_CACHE=/tmp/kc timeout -k 5 200 $B/engines gpu_parity_with_cpu_on_random_planes --include-ignored --nocapture > $OUT/parity.txt 2>&1; echo "rc $?" >> $OUT/parity.txt) &
(PATH=$B:/opt/torch/.venv/bin:$PATH LD_LIBRARY_PATH=$B timeout -k 5 140 bash scripts/gpu-check.sh startup --make-media $B/startup-media > $OUT/media.txt 2>&1; echo "rc $?" >> $OUT/media.txt) &
wait
mkdir -p $OUT/startup
OUT=$OUT/startup PYTHON=$py PYTHONPATH=/tmp/pynv ROUNDS=3 timeout -k 5 320 bash scripts/gpu-check.sh startup $B $B/startup-media > $OUT/startup.txt 2>&1; echo "rc $?" >> $OUT/startup.txt
