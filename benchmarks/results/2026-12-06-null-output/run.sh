#!/usr/bin/env bash
# `-vf sobel -f null -` on 300 1080p frames: FFmpeg's own command against convstream's, the same
# words, in alternating rounds (each round starts at the other program), wall clock of the whole
# process, medians. The clip: FFmpeg's testsrc2 with noise, H.264 (libx264, CRF 18), 25 frames/s.
#
#   bash benchmarks/results/2026-12-06-null-output/run.sh [CONVSTREAM] [ROUNDS]
#   (CONVSTREAM: target/release/convstream; FFmpeg: `ffmpeg` on PATH, or $FFMPEG)
set -euo pipefail
convstream="${1:-target/release/convstream}"
rounds="${2:-7}"
ffmpeg="${FFMPEG:-ffmpeg}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$ffmpeg" -hide_banner -loglevel error -f lavfi -i testsrc2=size=1920x1080:rate=25 -vf noise=alls=12:allf=t \
    -frames:v 300 -c:v libx264 -crf 18 -pix_fmt yuv420p "$work/clip.mp4"
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores; $("$ffmpeg" -version | head -n 1); $("$convstream" --version)"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
timed() { local t0=$EPOCHREALTIME; "$@" >/dev/null 2>"$work/last.log" || { cat "$work/last.log"; exit 1; }; python3 -c "print(f'{$EPOCHREALTIME - $t0:.3f}')"; }
ours=(); theirs=()
for round in $(seq "$rounds"); do
    if ((round % 2)); then
        theirs+=("$(timed "$ffmpeg" -hide_banner -nostdin -i "$work/clip.mp4" -vf sobel -f null -)")
        ours+=("$(timed "$convstream" run -i "$work/clip.mp4" -vf sobel -f null - --no-progress)")
    else
        ours+=("$(timed "$convstream" run -i "$work/clip.mp4" -vf sobel -f null - --no-progress)")
        theirs+=("$(timed "$ffmpeg" -hide_banner -nostdin -i "$work/clip.mp4" -vf sobel -f null -)")
    fi
done
grep -o "output: .*" "$work/last.log" || true
"$convstream" run -i "$work/clip.mp4" -vf sobel -f null - --no-progress 2>&1 | grep -o "frames in.*" | head -n 1
python3 - "${theirs[*]}" "${ours[*]}" <<'PY'
import statistics, sys
theirs, ours = ([float(x) for x in a.split()] for a in sys.argv[1:3])
print("ffmpeg     s:", " ".join(f"{x:.2f}" for x in theirs), f"median {statistics.median(theirs):.2f}")
print("convstream s:", " ".join(f"{x:.2f}" for x in ours), f"median {statistics.median(ours):.2f}")
print(f"convstream / ffmpeg: {statistics.median(ours) / statistics.median(theirs):.2f}")
PY
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
