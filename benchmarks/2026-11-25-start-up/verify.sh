set -u
d=$PWD/gpu-carry; export LD_LIBRARY_PATH=$d CONVSTREAM_KERNEL_CACHE=/tmp/ck
python3 -c "
import lzma, shutil, os
for f in ['it','convstream-new','ffmpeg']:
    with lzma.open('gpu-carry/'+f+'.xz') as i, open('gpu-carry/'+f, 'wb') as o: shutil.copyfileobj(i, o)
    os.chmod('gpu-carry/'+f, 0o755)"
for i in 1 2 3; do timeout -k 5 120 $d/it gpu::pooled_frames_go_direct_and_match_the_cpu gpu::a_planes_switch_keeps_the_frame_pool --include-ignored 2>&1 | grep -E "panicked|test result"; done
now() { date +%s.%N; }
for mode in exit _exit; do for n in 0 60; do for r in 1 2 3; do s=$(now); python3 benchmarks/2026-11-25-start-up/exit_cost.py $mode $n; e=$(now); echo "$mode pinned=$n: $(python3 -c "print(round($e-$s,3))") s"; done; done; done
python3 benchmarks/2026-11-25-start-up/make_y4m.py /tmp/c.y4m 1920 1080 25 && $d/ffmpeg -v error -y -i /tmp/c.y4m -c:v libopenh264 -b:v 8M /tmp/c25.mp4
$d/convstream-new run --no-progress -i /tmp/c25.mp4 -o null --device cuda > /dev/null 2>&1
for r in 1 2 3; do for dev in cpu cuda; do s=$(now); RUST_LOG=info $d/convstream-new run --no-progress --log-format json -i /tmp/c25.mp4 -o null --device $dev > /tmp/l-$dev.txt 2>&1; e=$(now); echo "run 25 frames $dev: $(python3 -c "print(round($e-$s,3))") s"; done; done
head -c 600 /tmp/l-cuda.txt; tail -c 400 /tmp/l-cuda.txt
