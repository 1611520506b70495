#!/usr/bin/env bash
# Correctness of decoding into the frame pool and of NVDEC pictures kept on the GPU.
set -uo pipefail
d=gpu-carry; out=/tmp/dp-out; mkdir -p $out
export CONVSTREAM_KERNEL_CACHE=/tmp/ck
bash $d/unpack.sh
NVDEC_MEDIA=$d/nvdec-media OUT=$out timeout -k 10 300 scripts/gpu-check.sh engines "$d" --end-to-end > $out/e2e.log 2>&1
echo "gpu-check e2e exit $?"
grep -E '^(ok|FAILED|failures)' $out/e2e.log | grep -v "^ok: streams=" | sort | uniq -c | sort -rn
echo "(engine GPU tests skipped in this run)"

# A real 1080p H.264 clip: NVDEC pictures on the GPU (CUDA engine) against the CPU engine on
# the same NVDEC frames, and the software decoder's pool pictures against the CPU engine.
tmp=/tmp/dp; mkdir -p $tmp
for dec in nvdec software; do
  for planes in all luma chroma; do
    for dev in cpu cuda; do
      timeout -k 5 200 $d/convstream run -y -i $d/clip1080.mp4 --decoder $dec --mask gaussian:size=13,sigma=3 --planes $planes --device $dev --no-progress -o $tmp/$dec-$planes-$dev.y4m > $tmp/$dec-$planes-$dev.log 2>&1 || echo "run $dec $planes $dev failed: $(tail -2 $tmp/$dec-$planes-$dev.log)"
    done
    if cmp -s $tmp/$dec-$planes-cpu.y4m $tmp/$dec-$planes-cuda.y4m; then echo "ok: clip1080 $dec planes=$planes: CUDA identical to CPU ($(stat -c %s $tmp/$dec-$planes-cuda.y4m) bytes)"; else echo "FAILED: clip1080 $dec planes=$planes differs"; fi
    grep -h "PCIe per frame" $tmp/$dec-$planes-cuda.log | sed 's/^.*PCIe/  PCIe/'
    rm -f $tmp/$dec-$planes-*.y4m
  done
done
# The NVDEC path under compute-sanitizer (device-side memory errors in the copies and kernels).
timeout -k 10 200 compute-sanitizer --tool memcheck --error-exitcode 3 $d/convstream run -i $d/nvdec-media/grows.ts --decoder nvdec --device cuda --mask sharpen --no-progress -o null > $out/memcheck.log 2>&1
echo "memcheck nvdec exit $?"; tail -3 $out/memcheck.log
tar czf $OUT/dp.tgz -C $out . 2>/dev/null
