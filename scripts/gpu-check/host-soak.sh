#!/usr/bin/env bash
# host-soak: a long host-fill soak over several 10-minute commands (start, watch, finish)
#
# A soak of a full host on a GPU machine whose commands are cut at 10 minutes: one `serve` of
# NVDEC and software pipelines (scripts/gpu-check.sh host-fill: ready, the window after it, then
# SOAK seconds sampled every 10 s and once a second) runs under setsid with its results on the
# machine's disk, and each later call, made within the machine's idle window of the last, watches
# it and copies what it has so far to $OUT.
#   scripts/gpu-check.sh host-soak start SECONDS BINARY CLIP   copy BINARY and CLIP aside, start, watch
#   scripts/gpu-check.sh host-soak watch SECONDS               watch for SECONDS more
#   scripts/gpu-check.sh host-soak finish SECONDS              wait up to SECONDS for the stop, return all
# NVDEC (24), SOFTWARE (88), WINDOW (20) and SOAK (1260) set the run; the kernel cache starts
# empty, as in a new pod. BINARY may be xz-compressed (name ending in .xz).
set -u
phase="$1" seconds="$2"
home=${SOAK_HOME:-/var/tmp/host-soak} && results=$home/results
out=${OUT:-./host-soak-results} && mkdir -p "$out"
start=$SECONDS
stamp() { echo "[$(date -u +%T)] $*" | tee -a "$home/steps.txt"; }
case "$phase" in
start)
    bin="$3" clip="$4"
    mkdir -p "$home" "$results"
    # Copies, so that a later call's fresh working tree cannot change them under the soak.
    if [[ $bin == *.xz ]]; then xz -dc "$bin" >"$home/convstream"; else cp "$bin" "$home/convstream"; fi
    chmod +x "$home/convstream"
    cp "$clip" "$home/clip.mp4"
    cp "$(dirname "$0")/host-fill.sh" "$(dirname "$0")/stall-probe.py" "$(dirname "$0")/thread-sampler.py" "$home/"
    { nvidia-smi -L; nproc; } >"$out/host.txt" 2>&1
    stamp "soak started: ${NVDEC:-24} NVDEC + ${SOFTWARE:-88} software, ${SOAK:-1260} s"
    setsid nohup timeout $((${SOAK:-1260} + 400)) bash -c "while sleep 30; do echo \"\$(date -u +%T) \$(cut -d' ' -f1-3 /proc/loadavg) \$(awk '/MemAvailable/{print int(\$2/1024)}' /proc/meminfo) MB available\"; done" \
        >"$home/load.txt" 2>&1 </dev/null &
    CONVSTREAM_KERNEL_CACHE=$home/kernel-cache OUT="$results" setsid nohup timeout -k 10 $((${SOAK:-1260} + 400)) \
        "$home/host-fill.sh" "$home/convstream" "$home/clip.mp4" "${NVDEC:-24}" "${SOFTWARE:-88}" "${WINDOW:-20}" "${SOAK:-1260}" \
        >"$home/check.log" 2>&1 </dev/null &
    ;;
watch | finish) ;;
*) echo "unknown phase $phase (start, watch or finish)" && exit 2 ;;
esac
while ((SECONDS - start < seconds)); do
    sleep 5
    [[ $phase == finish ]] && grep -q "^SIGTERM:" "$results"/*/summary.log 2>/dev/null && break
done
stamp "$phase ended after $((SECONDS - start)) s"
cp "$home"/steps.txt "$home"/load.txt "$out/" 2>/dev/null
cat "$results"/*/summary.log >"$out/summary.log" 2>/dev/null
tail -n 5 "$out/summary.log" 2>/dev/null
if [[ $phase == finish ]]; then
    sleep 2
    tar czf "$out/results.tgz" -C "$home" results steps.txt load.txt check.log
fi
