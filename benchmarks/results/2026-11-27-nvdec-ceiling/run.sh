#!/usr/bin/env bash
# On a 2-GPU host: is the NVDEC ceiling seen by convstream (24 pipelines per GPU fall behind on
# two GPUs, not on one) also FFmpeg's own? FFmpeg's CLI decodes the same clip on the GPUs, one
# process per stream, with the two ways FFmpeg drives NVDEC: the `h264_cuvid` decoder (NVIDIA's
# parser, what convstream opens) and FFmpeg's own H.264 decoder with the `cuda` hwaccel.
# Unpaced: 12 decodes per GPU, frames/s from each process's final stats. Paced (-re): 24 per GPU
# for 12 s of video, a stream keeps up when its 300 frames take under 12.5 s.
set -u
cd "$(dirname "$0")/../../.."
R=$OUT/r
mkdir -p "$R"
start=$SECONDS
stamp() { echo "[$((SECONDS - start)) s] $*" | tee -a "$R/steps.txt"; }
export LD_LIBRARY_PATH="$PWD/gpu-carry/ffmpeg" CONVSTREAM_KERNEL_CACHE=/tmp/kc
ff="$PWD/gpu-carry/ffmpeg/ffmpeg"
clip="$PWD/gpu-carry/clip1080.mp4"
{ nvidia-smi -L; nvidia-smi topo -m; nproc; lscpu | grep -E "Model name|NUMA|Socket"; } >"$R/host.txt" 2>&1
nvidia-smi dmon -s u -d 1 -o T >"$R/dmon.txt" 2>&1 &
dmon=$!
mode_args() { # cuvid | hwaccel
    case $1 in
    cuvid) echo "-hwaccel cuda -hwaccel_output_format cuda -c:v h264_cuvid" ;;
    hwaccel) echo "-hwaccel cuda -hwaccel_output_format cuda" ;;
    software) echo "" ;;
    esac
}
# unpaced NAME MODE "GPUS" PER_GPU
unpaced() {
    local d="$R/$1" g i pids=()
    mkdir -p "$d"
    stamp "unpaced $1"
    for g in $3; do for i in $(seq 1 "$4"); do
        timeout -k 5 60 "$ff" -hide_banner -v error -stats $(mode_args "$2") -hwaccel_device "$g" \
            -stream_loop 9 -i "$clip" -f null - 2>"$d/$g-$i.log" &
        pids+=($!)
    done; done
    wait "${pids[@]}"
    # the final "fps=" of each process: its frames over its own time
    echo "$1: $(cat "$d"/*.log | tr '\r' '\n' | grep -c '^frame=') lines;" \
        "fps per process: $(for f in "$d"/*.log; do tr '\r' '\n' <"$f" | grep '^frame=' | tail -n 1 | sed -E 's/.*fps= *([0-9.]+).*/\1/'; done | sort -n | tr '\n' ' ')" \
        "sum: $(for f in "$d"/*.log; do tr '\r' '\n' <"$f" | grep '^frame=' | tail -n 1 | sed -E 's/.*fps= *([0-9.]+).*/\1/'; done | awk '{s += $1} END {print s}')" | tee -a "$R/summary.txt"
    cp "$R/summary.txt" "$OUT/"
}
# paced NAME MODE "GPUS" PER_GPU
paced() {
    local d="$R/$1" g i pids=()
    mkdir -p "$d"
    stamp "paced $1"
    for g in $3; do for i in $(seq 1 "$4"); do
        (
            t0=$(date +%s.%N)
            timeout -k 5 60 "$ff" -hide_banner -v error -nostats $(mode_args "$2") -hwaccel_device "$g" \
                -re -stream_loop -1 -i "$clip" -t 12 -f null - 2>"$d/$g-$i.log"
            awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN {printf "%.2f\n", a - b}' >"$d/$g-$i.secs"
        ) &
        pids+=($!)
    done; done
    wait "${pids[@]}"
    echo "$1: seconds for 12 s of video, per process: $(cat "$d"/*.secs | sort -n | tr '\n' ' ')" | tee -a "$R/summary.txt"
    cp "$R/summary.txt" "$OUT/"
}
unpaced cuvid-gpu0 cuvid "0" 12
unpaced cuvid-both cuvid "0 1" 12
unpaced hwaccel-gpu0 hwaccel "0" 12
unpaced hwaccel-both hwaccel "0 1" 12
paced cuvid-24-gpu0 cuvid "0" 24
paced cuvid-24-both cuvid "0 1" 24
paced hwaccel-24-both hwaccel "0 1" 24
stamp "convstream bench, 24 nvdec per GPU"
xz -dc gpu-carry/convstream.xz >/tmp/convstream && chmod +x /tmp/convstream
timeout -k 5 100 /tmp/convstream bench --suite scale --decoder nvdec --gpus all --pipelines 24 \
    --scale-seconds 5 --input "$clip" --out "$R/convstream-bench" >"$R/convstream-bench.log" 2>&1
grep -E "INFO scale|capacity" "$R/convstream-bench.log" | tee -a "$R/summary.txt"
kill $dmon
stamp done
tar czf "$OUT/results.tgz" -C "$R" .
cp "$R/summary.txt" "$R/steps.txt" "$OUT/"
