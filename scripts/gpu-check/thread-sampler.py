#!/usr/bin/env python3
"""Where the threads of a process wait, every half second: a line of counts by the state the
kernel gives each thread (R running, S sleeping, D uninterruptible, T stopped) and by the first
telling frame of its kernel stack (/proc/PID/task/TID/stack, readable by root; else its wchan),
and, for threads not asleep in the usual places, their names (digits dropped: sw12-gpu-done ->
sw-gpu-done). A hold-up of the whole process shows which it was: threads queued on the address
space's lock (rwsem_down_*, lock_mm_and_find_vma: page faults behind mmap/munmap), on a futex
(a lock or a condition of the process's own, the driver's user-space locks), in the GPU driver
(nvidia ioctls), or just running.
    scripts/gpu-check/thread-sampler.py PID SECONDS [PERIOD (0.5)]"""
import collections
import os
import sys
import time
from datetime import datetime, timezone

pid, seconds = sys.argv[1], float(sys.argv[2])
period = float(sys.argv[3]) if len(sys.argv) > 3 else 0.5
# Frames every sleeping thread passes through on its way to the scheduler: not telling.
GENERIC = ("__schedule", "schedule", "schedule_timeout", "schedule_hrtimeout", "io_schedule",
           "do_nanosleep", "hrtimer_nanosleep", "common_nsleep", "entry_SYSCALL", "do_syscall_64",
           "__x64_sys", "__do_sys", "x64_sys_call", "preempt_schedule")
# Where threads of an idle pipeline sleep anyway: counted, their names not listed.
USUAL = ("futex_", "do_epoll_wait", "ep_poll", "hrtimer_nanosleep", "clock_nanosleep", "do_sys_poll",
         "unix_stream_read", "inet_csk_accept", "pipe_read", "do_select", "?")


def first_telling_frame(tid):
    base = f"/proc/{pid}/task/{tid}"
    try:
        for line in open(f"{base}/stack"):
            name = line.split()[-1].split("+")[0] if line.split() else ""
            if name and not name.startswith(GENERIC):
                return name
    except OSError:
        pass
    try:
        wchan = open(f"{base}/wchan").read().strip()
        return wchan if wchan not in ("", "0") else "?"
    except OSError:
        return "?"


end = time.monotonic() + seconds
while time.monotonic() < end:
    began = time.monotonic()
    states, frames, names = collections.Counter(), collections.Counter(), collections.Counter()
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        break
    for tid in tids:
        try:
            stat = open(f"/proc/{pid}/task/{tid}/stat").read()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        state = stat[stat.rindex(")") + 2]
        frame = "running" if state == "R" else first_telling_frame(tid)
        states[state] += 1
        frames[frame] += 1
        if state != "S" or not frame.startswith(USUAL):
            names["".join(c for c in comm if not c.isdigit()) + f"@{frame}"] += 1
    stamp = datetime.now(timezone.utc).strftime("%H:%M:%S.%f")[:-3]
    print(f"{stamp} threads {sum(states.values())} " + " ".join(f"{k}={v}" for k, v in sorted(states.items()))
          + " | " + ", ".join(f"{k} {v}" for k, v in frames.most_common(6))
          + " | " + ", ".join(f"{k} {v}" for k, v in names.most_common(6)), flush=True)
    time.sleep(max(0.0, period - (time.monotonic() - began)))
