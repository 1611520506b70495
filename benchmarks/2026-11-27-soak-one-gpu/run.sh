#!/usr/bin/env bash
# A 30-minute soak of a full one-GPU host at the predicted NVDEC seats: 24 NVDEC + 40 software
# pipelines in one `serve` (scripts/host-fill-check.sh: ready, drops after ready, memory per
# pipeline, then RSS and GPU memory every 30 s). A device call lasts at most 10 minutes, so the
# check runs under setsid with its results on the machine's disk, and the calls that follow
# (each made within the machine's idle window of the last) read them:
#   run.sh start SECONDS    unpack, doctor, start the soak, then watch it for SECONDS
#   run.sh watch SECONDS    watch for SECONDS more
#   run.sh finish SECONDS   wait up to SECONDS for its SIGTERM line, then return everything
# What each call sees goes to $OUT; the binary, the clip and the script are copied to /var/tmp
# first so that a later call's fresh working tree cannot change them under the running soak.
set -u
cd "$(dirname "$0")/../.."
phase="$1" seconds="$2"
home=${SOAK_HOME:-/var/tmp/soak-run} && results=$home/results
start=$SECONDS
copy_out() {
    cp "$home"/steps.txt "$home"/load.txt "$OUT/" 2>/dev/null
    cat "$results"/*/summary.log >"$OUT/summary.log" 2>/dev/null
    tail -n 5 "$OUT/summary.log" 2>/dev/null
}
case "$phase" in
start)
    mkdir -p "$home" "$results"
    xz -dc gpu-carry/convstream.xz >"$home/convstream" && chmod +x "$home/convstream"
    cp gpu-carry/clip1080.mp4 scripts/host-fill-check.sh "$home/"
    nvidia-smi -L >"$OUT/gpus.txt" 2>&1
    CONVSTREAM_KERNEL_CACHE=/tmp/kc timeout -k 5 30 "$home/convstream" doctor >"$OUT/doctor.txt" 2>&1
    echo "[$(date -u +%T)] soak started" >"$home/steps.txt"
    # Load average and free memory every 30 s, beside the check's own samples.
    setsid nohup bash -c "while sleep 30; do echo \"\$(date -u +%T) \$(cut -d' ' -f1-3 /proc/loadavg) \$(awk '/MemAvailable/{print int(\$2/1024)}' /proc/meminfo) MB available\"; done" \
        >"$home/load.txt" 2>&1 </dev/null &
    CONVSTREAM_KERNEL_CACHE=/tmp/kc OUT="$results" setsid nohup timeout -k 10 2100 \
        "$home/host-fill-check.sh" "$home/convstream" "$home/clip1080.mp4" "${NVDEC:-24}" "${SOFTWARE:-40}" 20 "${SOAK:-1770}" \
        >"$home/check.log" 2>&1 </dev/null &
    ;;
watch | finish) ;;
*) echo "unknown phase $phase" && exit 2 ;;
esac
while ((SECONDS - start < seconds)); do
    sleep 10
    [[ $phase == finish ]] && grep -q "^SIGTERM:" "$results"/*/summary.log 2>/dev/null && break
done
echo "[$(date -u +%T)] $phase ended after $((SECONDS - start)) s" >>"$home/steps.txt"
copy_out
if [[ $phase == finish ]]; then
    tar czf "$OUT/results.tgz" -C "$home" results steps.txt load.txt check.log
fi
