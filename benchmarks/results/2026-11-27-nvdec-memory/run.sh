#!/usr/bin/env bash
# A soak of the full 2-GPU host at the predicted NVDEC seats (24 NVDEC + 88 software pipelines in
# one `serve`, from an empty kernel cache, as a new pod starts), after NVDEC loops kept their
# decoder; and, before it in the same call, what host memory an NVDEC decoder costs FFmpeg's own
# CLI against what an NVDEC pipeline costs convstream, and the loops byte for byte.
# A device call lasts at most 10 minutes, so the soak runs under setsid with its results on the
# machine's disk, and the calls that follow (each made within the machine's idle window of the
# last) read them:
#   run.sh start SECONDS    unpack, checks, start the soak (SOAK seconds, default 1260), watch
#   run.sh watch SECONDS    watch for SECONDS more
#   run.sh finish SECONDS   wait up to SECONDS for its SIGTERM line, then return everything
#   run.sh memory 0         (one GPU) FFmpeg's and convstream's memory per NVDEC decoder alone
# What each call sees goes to $OUT; the binaries, the clip and the script are copied to /var/tmp
# first so that a later call's fresh working tree cannot change them under the running soak.
set -u
cd "$(dirname "$0")/../../.."
phase="$1" seconds="$2"
home=${SOAK_HOME:-/var/tmp/soak-run} && results=$home/results
start=$SECONDS
stamp() { echo "[$(date -u +%T)] $*" | tee -a "$home/steps.txt"; }
copy_out() {
    cp "$home"/steps.txt "$home"/load.txt "$OUT/" 2>/dev/null
    cat "$results"/*/summary.log >"$OUT/summary.log" 2>/dev/null
    tail -n 5 "$OUT/summary.log" 2>/dev/null
}
# ffmpeg_rss NAME PER_GPU: one FFmpeg process decoding the clip with PER_GPU h264_cuvid decoders
# on each GPU (one CUDA device per GPU, shared by its decoders, as convstream shares one), in real
# time and looped; its RSS after 12 s, by kind of mapping.
ffmpeg_rss() {
    local args=(-hide_banner -nostats -loglevel error) g i n=0 pid
    for g in $(nvidia-smi --query-gpu=index --format=csv,noheader); do args+=(-init_hw_device "cuda=g$g:$g"); done
    for g in $(nvidia-smi --query-gpu=index --format=csv,noheader); do
        for ((i = 0; i < $2; i++)); do
            args+=(-hwaccel cuda -hwaccel_device "g$g" -hwaccel_output_format cuda -c:v h264_cuvid
                -re -stream_loop -1 -i "$home/clip1080.mp4") && n=$((n + 1))
        done
    done
    for ((i = 0; i < n; i++)); do args+=(-map "$i:v" -f null -); done
    # Started directly (not under `timeout`), so that $! is FFmpeg's own process.
    LD_LIBRARY_PATH=$home "$home/ffmpeg" "${args[@]}" 2>"$R/$1.log" &
    pid=$!
    sleep 12
    python3 - "$pid" "$1" "$n" <<'EOF' | tee -a "$R/memory.txt"
import collections, re, sys
pid, name, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
kinds, kind = collections.Counter(), None
for line in open(f"/proc/{pid}/smaps"):
    head = line.split()
    if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
        path = " ".join(head[5:])
        kind = "gpu driver" if path.startswith("/dev/nvidia") else "anonymous" if not path else "heap" if path == "[heap]" else "file"
    elif head and head[0] == "Rss:":
        kinds[kind] += int(head[1]) / 1024
rss = sum(kinds.values())
print(f"{name}: {n} decoders, RSS {rss:.0f} MB, {dict((k, round(v)) for k, v in kinds.most_common())}")
EOF
    kill -INT "$pid" 2>/dev/null
    sleep 3
    kill -KILL "$pid" 2>/dev/null
    wait "$pid"
}
case "$phase" in
start)
    mkdir -p "$home" "$results"
    R=$OUT/r && mkdir -p "$R"
    xz -dc gpu-carry/convstream.xz >"$home/convstream" && chmod +x "$home/convstream"
    xz -dc gpu-carry/convstream-base.xz >"$home/convstream-363032b" && chmod +x "$home/convstream-363032b"
    xz -dc gpu-carry/ffmpeg/ffmpeg.xz >"$home/ffmpeg" && chmod +x "$home/ffmpeg"
    cp gpu-carry/ffmpeg/libopenh264.so.7 gpu-carry/clip1080.mp4 scripts/gpu-check.sh host-fill "$home/"
    echo "[$(date -u +%T)] start" >"$home/steps.txt"
    { nvidia-smi -L; nproc; } >"$R/gpus.txt" 2>&1
    CONVSTREAM_KERNEL_CACHE=/tmp/kc timeout -k 5 30 "$home/convstream" doctor >"$R/doctor.txt" 2>&1
    grep -E "NVDEC seats" "$R/doctor.txt" | cut -c1-200
    # The loops byte for byte: 230 frames (2.3 passes) through NVDEC with this build (the decoder
    # kept), with 363032b (made anew each pass) and through the software decoder.
    stamp loops
    for run in "new nvdec $home/convstream" "old nvdec $home/convstream-363032b" "new software $home/convstream"; do
        set -- $run
        CONVSTREAM_KERNEL_CACHE=/tmp/kc timeout -k 5 60 "$3" run -i "$home/clip1080.mp4" --loop --frames 230 \
            --decoder "$2" --device cuda --mask gaussian:size=5 -y -o "/tmp/$1-$2.y4m" >"$R/loop-$1-$2.txt" 2>&1
        echo "rc=$? $(stat -c %s "/tmp/$1-$2.y4m" 2>/dev/null) bytes" >>"$R/loop-$1-$2.txt"
    done
    for pair in "new-nvdec new-software" "old-nvdec new-software" "new-nvdec old-nvdec"; do
        set -- $pair
        cmp "/tmp/$1.y4m" "/tmp/$2.y4m" && echo "$1 = $2: identical" || echo "$1 differs from $2"
    done | tee "$R/loop-compare.txt"
    rm -f /tmp/*.y4m
    # Host memory of NVDEC decoders: FFmpeg's CLI with 6 + 6 and 12 + 12 decoders, convstream with
    # 12 and 24 NVDEC pipelines (the same split over the GPUs), each the second over the first.
    stamp memory
    ffmpeg_rss ffmpeg-6-per-gpu 6
    ffmpeg_rss ffmpeg-12-per-gpu 12
    for n in 12 24; do
        CONVSTREAM_KERNEL_CACHE=/tmp/kc OUT="$R/nv$n" timeout -k 5 90 "$home/host-fill-check.sh" "$home/convstream" \
            "$home/clip1080.mp4" "$n" 0 10 >/dev/null 2>&1
        grep -E "^RSS|dropped,|readyz" "$R/nv$n"/*/summary.log | sed "s/^/convstream $n NVDEC: /" | tee -a "$R/memory.txt"
    done
    tar czf "$OUT/checks.tgz" -C "$R" .
    stamp "soak started"
    # Load average and free memory every 30 s, beside the check's own samples.
    setsid nohup bash -c "while sleep 30; do echo \"\$(date -u +%T) \$(cut -d' ' -f1-3 /proc/loadavg) \$(awk '/MemAvailable/{print int(\$2/1024)}' /proc/meminfo) MB available\"; done" \
        >"$home/load.txt" 2>&1 </dev/null &
    CONVSTREAM_KERNEL_CACHE=/tmp/kc-soak OUT="$results" setsid nohup timeout -k 10 2100 \
        "$home/host-fill-check.sh" "$home/convstream" "$home/clip1080.mp4" "${NVDEC:-24}" "${SOFTWARE:-88}" 20 "${SOAK:-1260}" \
        >"$home/check.log" 2>&1 </dev/null &
    ;;
memory)
    # The memory measure again on one GPU (the start call's FFmpeg figures read the `timeout`
    # wrapper's memory, not FFmpeg's): FFmpeg's CLI with 6 and 12 decoders, convstream with 6
    # and 12 NVDEC pipelines, on the same GPU in the same call.
    mkdir -p "$home" && R=$OUT/r && mkdir -p "$R"
    xz -dc gpu-carry/convstream.xz >"$home/convstream" && chmod +x "$home/convstream"
    xz -dc gpu-carry/ffmpeg/ffmpeg.xz >"$home/ffmpeg" && chmod +x "$home/ffmpeg"
    cp gpu-carry/ffmpeg/libopenh264.so.7 gpu-carry/clip1080.mp4 scripts/gpu-check.sh host-fill "$home/"
    echo "[$(date -u +%T)] memory" >"$home/steps.txt"
    nvidia-smi -L >"$R/gpus.txt" 2>&1
    ffmpeg_rss ffmpeg-6 6
    ffmpeg_rss ffmpeg-12 12
    for n in 6 12; do
        CONVSTREAM_KERNEL_CACHE=/tmp/kc OUT="$R/nv$n" timeout -k 5 90 "$home/host-fill-check.sh" "$home/convstream" \
            "$home/clip1080.mp4" "$n" 0 10 >/dev/null 2>&1
        grep -E "^RSS|dropped,|readyz" "$R/nv$n"/*/summary.log | sed "s/^/convstream $n NVDEC: /" | tee -a "$R/memory.txt"
    done
    tar czf "$OUT/memory.tgz" -C "$R" .
    exit 0
    ;;
watch | finish) ;;
*) echo "unknown phase $phase" && exit 2 ;;
esac
while ((SECONDS - start < seconds)); do
    sleep 5
    [[ $phase == finish ]] && grep -q "^SIGTERM:" "$results"/*/summary.log 2>/dev/null && break
done
stamp "$phase ended after $((SECONDS - start)) s"
copy_out
if [[ $phase == finish ]]; then
    sleep 2
    tar czf "$OUT/results.tgz" -C "$home" results steps.txt load.txt check.log
fi
