#!/usr/bin/env bash
# NVDEC pictures that wait for the engine with no host memory (pending planes), on a 2-GPU host at
# the predicted NVDEC seats (12 + 12): 24 NVDEC pipelines with this build and with the one before
# (363032b) in the same call, ready time (ready now also waits for the real-time pace), drops
# after ready, RSS and page-locked memory per pipeline; the same 24 with 2 CUDA streams each (what
# the driver maps per stream); the full host (24 NVDEC + 88 software) with this build.
#   run.sh host     (nvidia-h200-x2 / nvidia-h100-x2)
#   run.sh host-loops (the same host, after NVDEC loops kept their decoder)
#   run.sh again    (the same host: the first serve of a call watched, then both builds warm)
#   run.sh first    (one GPU: the first serve of a machine against later ones, the engines' GPU
#                    tests, a short soak)
#   run.sh verify   (one GPU: the engines' GPU tests the first call cut off; 12 NVDEC started
#                    together looping the 20 s clip)
#   run.sh loops    (one GPU: NVDEC loops that keep their decoder, byte for byte and started
#                    together)
#   run.sh engines  (any GPU: the engines' GPU tests, then a 5-minute light-sampled soak)
set -u
cd "$(dirname "$0")/../../.."
R=$OUT/r
mkdir -p "$R"
start=$SECONDS
stamp() { echo "[$((SECONDS - start)) s] $*" | tee -a "$R/steps.txt"; }
export CONVSTREAM_KERNEL_CACHE=/tmp/kc
xz -dc gpu-carry/convstream.xz >/tmp/convstream && chmod +x /tmp/convstream
xz -dc gpu-carry/convstream-base.xz >/tmp/convstream-363032b && chmod +x /tmp/convstream-363032b
nvidia-smi -L >"$R/gpus.txt" 2>&1
fill() { # NAME BINARY CLIP NVDEC SOFTWARE WINDOW [SOAK]
    stamp "serve $1: $4 NVDEC + $5 software, $3, $(basename "$2") ${FILTER:+($FILTER)}"
    mkdir -p "$R/$1"
    OUT="$R/$1" timeout -k 5 "${LIMIT:-170}" scripts/gpu-check.sh host-fill "$2" "gpu-carry/$3" "$4" "$5" "$6" "${7:-0}" >/dev/null 2>&1
    cat "$R/$1"/*/summary.log | grep -vE "^  convstream_pinned|^[0-9], NVIDIA"
    tar czf "$OUT/results.tgz" -C "$R" .
}
watch() { # NAME SECONDS: once a second, GPU clocks and decoder use, and the pipelines' late and
    # dropped frames by GPU, while a run starts (for what happens around ready)
    timeout "$2" nvidia-smi --query-gpu=timestamp,index,pstate,clocks.sm,clocks.video,utilization.gpu,utilization.decoder \
        --format=csv,noheader -lms 1000 >"$R/$1-gpu.csv" 2>&1 &
    timeout "$2" vmstat 1 >"$R/$1-vmstat.txt" 2>&1 &
    (sleep 30 && top -b -H -n 1 -w 200 | head -n 40 >"$R/$1-top.txt" 2>&1) &
    timeout "$2" python3 - "$R/$1-pipelines.txt" <<'PY' &
import collections, json, sys, time, urllib.request
out = open(sys.argv[1], "w", buffering=1)
began = time.monotonic()
while True:
    time.sleep(1)
    try:
        body = urllib.request.urlopen("http://127.0.0.1:18690/pipelines", timeout=2).read()
    except Exception:
        continue
    by = collections.defaultdict(lambda: [0, 0, 0])
    for p in json.loads(body)["pipelines"]:
        c = by[str(p.get("device"))]
        c[0] += p["counters"]["frames_decoded"]; c[1] += p["counters"]["frames_late"]; c[2] += p["counters"]["frames_dropped"]
    out.write(f"{time.monotonic() - began:.0f} s " + " ".join(f"{d}: decoded {v[0]} late {v[1]} dropped {v[2]}" for d, v in sorted(by.items())) + "\n")
PY
}
case "${1:-host}" in
again)
    # The first serve of a call dropped and the later ones did not: the first again, watched,
    # then each build warm, and 12 against 24 NVDEC pipelines (RSS per added pipeline).
    watch first 75
    fill nv24-new-first /tmp/convstream clip1080.mp4 24 0 30
    fill nv24-new-warm /tmp/convstream clip1080.mp4 24 0 30
    fill nv24-363032b-warm /tmp/convstream-363032b clip1080.mp4 24 0 30
    fill nv12-new /tmp/convstream clip1080.mp4 12 0 20
    ;;
first)
    # Is it the machine's first process, or a kernel cache to fill? Three serves of 12 NVDEC
    # pipelines: an empty cache, another empty cache, that cache filled. Then the engines' GPU
    # tests and a short soak of the full one-GPU host (24 NVDEC + 40 software).
    for run in 1 2 3; do
        cache=/tmp/kc-$(( run == 1 ? 1 : 2 ))
        watch "twelve-$run" 45
        CONVSTREAM_KERNEL_CACHE=$cache fill "nv12-run$run-cache$(( run == 1 ? 1 : 2 ))" /tmp/convstream clip1080.mp4 12 0 20
        grep -hE "decode .* s, filter" "$R"/nv12-run$run-*/*/serve-tail.log | head -n 2 | cut -c1-240
    done
    stamp engines
    CONVSTREAM_TEST_GPU=1 timeout -k 5 150 gpu-carry/engines gpu:: --include-ignored --test-threads 1 >"$R/engines.txt" 2>&1
    echo "rc=$?" >>"$R/engines.txt"
    grep -E "^test result|FAILED|panicked|rc=" "$R/engines.txt" | head -20
    tar czf "$OUT/results.tgz" -C "$R" .
    LIMIT=$((585 - (SECONDS - start))) fill soak-new /tmp/convstream clip1080.mp4 24 40 20 "${SOAK:-150}"
    ;;
verify)
    # The engines' GPU tests the first call's time limit cut off (the new pending-planes test
    # among them; the random-planes parity in its quick form), then the loop's part: 12 NVDEC
    # pipelines started together (an empty kernel cache) looping the 20 s clip, watched.
    stamp engines
    CONVSTREAM_TEST_GPU=1 timeout -k 5 150 gpu-carry/engines gpu:: --include-ignored --test-threads 1 \
        --skip gpu_parity_at_high_bit_depths --skip gpu_parity_with_cpu_on_random_planes \
        --skip ffmpeg_arithmetic --skip exact_ties --skip frames_come_back --skip gpu_lane_throughput \
        --skip a_picture_on --skip a_planes_switch >"$R/engines.txt" 2>&1
    echo "rc=$?" >>"$R/engines.txt"
    CONVSTREAM_TEST_QUICK=1 CONVSTREAM_TEST_GPU=1 timeout -k 5 100 gpu-carry/engines gpu::gpu_parity --include-ignored \
        --test-threads 1 --nocapture >"$R/engines-parity-quick.txt" 2>&1
    echo "rc=$?" >>"$R/engines-parity-quick.txt"
    grep -hE "^test |^test result|FAILED|panicked|rc=|cases" "$R"/engines*.txt | head -40
    tar czf "$OUT/results.tgz" -C "$R" .
    watch twelve-20s 70
    CONVSTREAM_KERNEL_CACHE=/tmp/kc-20s fill nv12-20s-cold /tmp/convstream clip1080-20s.mp4 12 0 40
    ;;
loops)
    # NVDEC loops that keep their decoder: the frames of 2.3 passes through NVDEC (this build
    # and the one before) and through the software decoder, byte for byte; then 12 NVDEC
    # pipelines started together (an empty kernel cache) looping the 20 s clip and the 4 s one.
    stamp loops
    for run in "new nvdec /tmp/convstream" "old nvdec /tmp/convstream-363032b" "new software /tmp/convstream"; do
        set -- $run
        timeout -k 5 60 "$3" run -i gpu-carry/clip1080.mp4 --loop --frames 230 --decoder "$2" --device cuda \
            --mask gaussian:size=5 -y -o "/tmp/$1-$2.y4m" >"$R/loop-$1-$2.txt" 2>&1
        echo "rc=$? $(stat -c %s "/tmp/$1-$2.y4m" 2>/dev/null) bytes" >>"$R/loop-$1-$2.txt"
        tail -n 2 "$R/loop-$1-$2.txt" | cut -c1-200
    done
    for pair in "new-nvdec new-software" "old-nvdec new-software" "new-nvdec old-nvdec"; do
        set -- $pair
        cmp "/tmp/$1.y4m" "/tmp/$2.y4m" && echo "$1 = $2: identical" || echo "$1 differs from $2"
    done | tee "$R/loop-compare.txt"
    rm -f /tmp/*.y4m
    watch twelve-20s 70
    CONVSTREAM_KERNEL_CACHE=/tmp/kc-20s fill nv12-20s-cold /tmp/convstream clip1080-20s.mp4 12 0 40
    watch twelve-4s 45
    CONVSTREAM_KERNEL_CACHE=/tmp/kc-4s fill nv12-4s-cold /tmp/convstream clip1080.mp4 12 0 20
    ;;
host-loops)
    # The 2-GPU host again with NVDEC loops that keep their decoder, from an empty kernel
    # cache (pipelines start together): 24 NVDEC (the predicted seats), then the full host.
    watch nv24 50
    CONVSTREAM_KERNEL_CACHE=/tmp/kc-a fill nv24-cold /tmp/convstream clip1080.mp4 24 0 30
    LIMIT=120 CONVSTREAM_KERNEL_CACHE=/tmp/kc-b fill full-cold /tmp/convstream clip1080.mp4 24 88 30
    ;;
host)
    timeout -k 5 30 /tmp/convstream doctor >"$R/doctor.txt" 2>&1
    grep -E "NVDEC seats" "$R/doctor.txt" | cut -c1-200
    fill nv24-new /tmp/convstream clip1080.mp4 24 0 30
    fill nv24-363032b /tmp/convstream-363032b clip1080.mp4 24 0 30
    fill full-new /tmp/convstream clip1080.mp4 24 88 40
    FILTER='streams = 2' fill nv24-new-2streams /tmp/convstream clip1080.mp4 24 0 20
    ;;
engines)
    stamp engines
    CONVSTREAM_TEST_GPU=1 timeout -k 5 200 gpu-carry/engines gpu:: --include-ignored --test-threads 1 >"$R/engines.txt" 2>&1
    echo "rc=$?" >>"$R/engines.txt"
    grep -E "^test result|FAILED|panicked|rc=" "$R/engines.txt" | head -20
    tar czf "$OUT/results.tgz" -C "$R" .
    LIMIT=$((590 - (SECONDS - start))) fill soak-new /tmp/convstream clip1080.mp4 24 40 20 "${SOAK:-300}"
    ;;
esac
stamp done
tar czf "$OUT/results.tgz" -C "$R" .
