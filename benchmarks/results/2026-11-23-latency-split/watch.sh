#!/usr/bin/env bash
# watch.sh OUTFILE -- COMMAND...: runs COMMAND, keeping the last snapshot of its threads'
# scheduling counts and CPU time (utime+stime ticks, 10 ms each) in OUTFILE.
outfile="$1"; shift 2
"$@" &
pid=$!
while kill -0 $pid 2>/dev/null; do
    snapshot=$(for t in /proc/$pid/task/*; do awk -v c="$(cat $t/comm 2>/dev/null)" -v v="$(grep -h voluntary_ctxt_switches $t/status 2>/dev/null | awk '{printf "%s=%s ", $1, $2}')" \
        '{printf "%-16s cpu_ms=%d %s\n", c, ($14+$15)*10, v}' $t/stat 2>/dev/null; done)
    [[ -n "$snapshot" ]] && echo "$snapshot" > "$outfile"
    sleep 0.2
done
wait $pid
