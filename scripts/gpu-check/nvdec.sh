#!/usr/bin/env bash
# nvdec: NVDEC on streams it cannot decode as they are (size, depth and 4:4:4 changes), stops, DELETE
#
# NVDEC on streams it cannot decode as they are, on a GPU host, from the portable build:
# an H.264 MPEG-TS whose size grows mid-stream (FFmpeg's cuvid wrapper cannot follow it), one
# whose size shrinks, an HEVC one that goes from 8 to 10 bits, one that turns 4:4:4 mid-stream
# (NVDEC has no H.264 4:4:4), and a 1921x1081 H.264 High 4:4:4 file. Each runs with --decoder software (the reference), auto
# and nvdec: exit codes, frame counts equal to the software decoder's, no hang (every run
# has a time limit), a stop (SIGTERM) that ends a looping NVDEC run within seconds with its
# output readable, and a DELETE in `serve` that ends the pipeline's threads.
#
#   scripts/gpu-check.sh nvdec --make-media DIR   make the clips (needs the ffmpeg CLI with libx264)
#   scripts/gpu-check.sh nvdec [DIST] [MEDIA]     run the checks (DIST: dist/portable; MEDIA: DIST/nvdec-media)
#
# The GPU host has no FFmpeg CLI, so the clips are made where the build runs and carried
# with the binaries. Results go to $OUT (or ./nvdec-results): nvdec-check.log.
set -uo pipefail

make_media() {
    local dir="$1"
    mkdir -p "$dir"
    cd "$dir" || exit 1
    local codec_args=(-c:v libx264 -preset veryfast -g 25 -bsf:v h264_mp4toannexb)
    clip() { # clip NAME SIZE PIX_FMT FRAMES OFFSET [EXTRA...]
        local name="$1" size="$2" pix="$3" frames="$4" offset="$5"; shift 5
        ffmpeg -hide_banner -loglevel error -y -f lavfi -i "testsrc2=size=$size:rate=25" \
            -frames:v "$frames" -pix_fmt "$pix" "${codec_args[@]}" "$@" -output_ts_offset "$offset" -f mpegts "$name"
    }
    clip small.ts 320x240 yuv420p 50 0
    clip large.ts 640x480 yuv420p 50 2
    clip small-later.ts 320x240 yuv420p 50 2
    clip small-444.ts 320x240 yuv444p 50 2 -profile:v high444
    codec_args=(-c:v libx265 -preset veryfast -x265-params keyint=25:log-level=error)
    clip hevc8.ts 320x240 yuv420p 50 0
    clip hevc10.ts 320x240 yuv420p10le 50 2
    cat small.ts large.ts >grows.ts
    cat large.ts small-later.ts >shrinks.ts
    cat small.ts small-444.ts >turns-444.ts
    cat hevc8.ts hevc10.ts >hevc-deepens.ts
    ffmpeg -hide_banner -loglevel error -y -f lavfi -i testsrc2=size=1922x1082:rate=25 -vf scale=1921:1081 \
        -frames:v 20 -pix_fmt yuv444p -c:v libx264 -preset veryfast -profile:v high444 h444.mp4
    rm -f small.ts large.ts small-later.ts small-444.ts hevc8.ts hevc10.ts
    ls -l "$dir"
}

if [[ ${1:-} == --make-media ]]; then
    make_media "${2:?usage: $0 --make-media DIR}"
    exit 0
fi

dist="${1:-dist/portable}"
media="${2:-$dist/nvdec-media}"
bin="$(cd "$(dirname "$dist/convstream")" && pwd)/convstream"
[[ -x $bin && -d $media ]] || { echo "usage: $0 [DIST] [MEDIA]: no $bin or no $media" >&2; exit 2; }
media="$(cd "$media" && pwd)"
out="${OUT:-nvdec-results}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
log="$out/nvdec-check.log"
work="$(mktemp -d)"
cd "$work" || exit 1
export CONVSTREAM_KERNEL_CACHE="${CONVSTREAM_KERNEL_CACHE:-/tmp/convstream-kernels}"
failures=0

step() { printf '\n=== %s\n' "$*" | tee -a "$log"; }
record() { # record DESCRIPTION STATUS
    if [[ $2 == 0 ]]; then echo "ok: $1" | tee -a "$log"; else echo "FAILED: $1" | tee -a "$log"; failures=$((failures + 1)); fi
}
frames_out() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['pipelines'][0]['frames_out'])" "$1" 2>/dev/null || echo none; }
restarts() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['pipelines'][0]['decoder_restarts'])" "$1" 2>/dev/null || echo none; }
# same_frames A B: "N of M" frames of two y4m files that are byte-identical.
same_frames() { python3 - "$1" "$2" <<'EOF'
import sys
def frames(path):
    try:
        return open(path, 'rb').read().split(b'FRAME')[1:]
    except OSError:
        return []
a, b = frames(sys.argv[1]), frames(sys.argv[2])
differ = [i for i in range(max(len(a), len(b))) if i >= len(a) or i >= len(b) or a[i] != b[i]]
ranges, start = [], None
for i, n in enumerate(differ):
    if start is None:
        start = n
    if i + 1 == len(differ) or differ[i + 1] != n + 1:
        pairs = [(a[k], b[k]) for k in range(start, n + 1) if k < len(a) and k < len(b)]
        mad = max((sum(abs(x - y) for x, y in zip(p, q)) / max(len(p), 1) for p, q in pairs), default=0)
        ranges.append(("{}" if start == n else "{}-{}").format(*sorted({start, n})) + f" mean |diff| <= {mad:.2f}")
        start = None
print(f"{max(len(a), len(b)) - len(differ)} of {max(len(a), len(b))}" + (f" (differ: {', '.join(ranges)})" if ranges else ""))
EOF
}
y4m_frames() { python3 -c "import sys; print(open(sys.argv[1],'rb').read().count(b'FRAME'))" "$1" 2>/dev/null || echo 0; }
# convstream NAME DECODER INPUT [ARGS...]: one run with a 60 s limit; sets $code, $took, and
# leaves NAME.y4m, NAME.json and NAME.log.
convstream() {
    local name="$1" decoder="$2" input="$3"; shift 3
    local started=$SECONDS
    timeout -k 5 60 "$bin" run -i "$media/$input" -o "$name.y4m" --device cuda --decoder "$decoder" \
        --mask gaussian:size=5,sigma=1 --no-progress --stats-json "$name.json" "$@" >"$name.log" 2>&1
    code=$?
    took=$((SECONDS - started))
    { echo "--- $name ($decoder, $input): exit $code in ${took}s"; tail -n 6 "$name.log"; } >>"$log"
}

step "host"
{ nvidia-smi -L; "$bin" --version; } 2>&1 | tee -a "$log"

for input in grows.ts shrinks.ts hevc-deepens.ts h444.mp4; do
    step "$input: software (reference), auto, nvdec"
    base="${input%.*}"
    convstream "$base-sw" software "$input"
    reference=$(frames_out "$base-sw.json")
    record "$input software: exit $code, $reference frames" $((code != 0))
    convstream "$base-auto" auto "$input"
    record "$input auto: exit $code, $(frames_out "$base-auto.json") frames = software's" \
        $((code != 0 || $(y4m_frames "$base-auto.y4m") != reference))
    convstream "$base-nvdec" nvdec "$input"
    if [[ $input == h444.mp4 ]]; then
        # NVDEC has no H.264 4:4:4: refused at once with the reason, nothing written.
        grep -q 'does not decode H.264 4:4:4' "$base-nvdec.log"
        reason=$?
        record "$input nvdec: exit $code (2 expected) in ${took}s with the reason" $((code != 2 || took > 20 || reason != 0))
        record "$input nvdec: no output left behind" $([[ ! -e $base-nvdec.y4m ]]; echo $?)
    else
        got=$(y4m_frames "$base-nvdec.y4m")
        record "$input nvdec: exit $code, $got frames = software's $reference (decoder made anew $(restarts "$base-nvdec.json") time(s))" \
            $((code != 0 || got != reference))
        echo "info: $input nvdec frames identical to the software decoder's: $(same_frames "$base-sw.y4m" "$base-nvdec.y4m")" | tee -a "$log"
    fi
done

step "turns-444.ts: NVDEC decodes the 4:2:0 part, then ends cleanly with the reason"
convstream turns-sw software turns-444.ts
reference=$(frames_out turns-sw.json)
record "turns-444.ts software: exit $code, $reference frames" $((code != 0))
convstream turns-auto auto turns-444.ts
record "turns-444.ts auto: $(y4m_frames turns-auto.y4m) frames = software's" $((code != 0 || $(y4m_frames turns-auto.y4m) != reference))
convstream turns-nvdec nvdec turns-444.ts
got=$(y4m_frames turns-nvdec.y4m)
grep -q 'the stream changes at frame 50 and NVDEC on this GPU does not decode H.264 4:4:4' turns-nvdec.log
reason=$?
record "turns-444.ts nvdec: exit $code (1 expected) in ${took}s, reason given, the 50 frames before the change written ($got)" \
    $((code != 1 || reason != 0 || got != 50 || took > 30))

# looping_pipeline SINK: a pipeline table that decodes grows.ts with NVDEC over and over.
looping_pipeline() {
    printf '[[pipeline]]\nname = "loop"\n[pipeline.source]\nurl = "%s"\ndecoder = "nvdec"\nloop = true\n' "$media/grows.ts"
    printf '[pipeline.filter]\nmask = "gaussian:size=5,sigma=1"\ndevice = "cuda"\n[pipeline.sink]\nurl = "%s"\n' "$1"
}

step "a stop ends a looping NVDEC run within seconds, output readable"
looping_pipeline loop.mkv >loop.toml
"$bin" run --config loop.toml --no-progress --stats-json loop.json >loop.log 2>&1 &
pid=$!
sleep 4
kill -TERM "$pid"
started=$SECONDS
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
stopped_in=$((SECONDS - started))
if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; fi
wait "$pid"
code=$?
tail -n 5 loop.log >>"$log"
written=$(frames_out loop.json)
timeout -k 5 60 "$bin" run -i loop.mkv -o null --device cpu --no-progress --stats-json reread.json >>"$log" 2>&1
reread=$(frames_out reread.json)
# A run stopped by SIGTERM finalises its output and exits 143 (README: 130/143 after a signal).
record "SIGTERM: exit $code (143 expected) after ${stopped_in}s, $written frames written, $reread read back" \
    $((code != 143 || stopped_in > 10 || written == 0 || written != reread))

step "serve: DELETE of an NVDEC pipeline ends its threads"
{ printf '[server]\nlisten = "127.0.0.1:18687"\nshutdown_timeout = 10.0\n'; looping_pipeline null; } >serve.toml
"$bin" serve --config serve.toml >serve.log 2>&1 &
pid=$!
threads() { ls "/proc/$pid/task" 2>/dev/null | wc -l; }
state() { python3 -c "import json,urllib.request; print(json.load(urllib.request.urlopen('http://127.0.0.1:18687/pipelines/loop', timeout=5))['state'])" 2>/dev/null; }
for _ in $(seq 100); do [[ $(state) == running ]] && break; sleep 0.1; done
sleep 2
running=$(threads)
python3 -c "import urllib.request; urllib.request.urlopen(urllib.request.Request('http://127.0.0.1:18687/pipelines/loop', method='DELETE'), timeout=15)" >>"$log" 2>&1
deleted=$?
sleep 3
after=$(threads)
record "DELETE answered, threads $running -> $after (the source, filter and sink threads gone)" \
    $((deleted != 0 || after > running - 3))
kill -TERM "$pid"
for _ in $(seq 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; record "serve ends on SIGTERM within 15 s" 1; else record "serve ends on SIGTERM within 15 s" 0; fi
tail -n 8 serve.log >>"$log"

step "summary"
echo "failures: $failures" | tee -a "$log"
rm -rf "$work"
exit $((failures > 0))
