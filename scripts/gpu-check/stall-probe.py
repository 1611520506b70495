#!/usr/bin/env python3
"""Is the host, or a GPU, standing still? Run beside `serve` during a soak, in a process of its
own, so what it sees is not convstream's doing. Threads, each every 50 ms:
  - host: a 50 ms sleep, timed past its 50 ms (late = the process was not run: a paused VM, a
    starved CPU);
  - gpuN: a one-element kernel on GPU N and its synchronisation (late = that GPU, or its driver,
    held a process that shares nothing with convstream but the driver and the GPU);
  - pinnedN: once a second, 4 MB of page-locked memory allocated and freed on GPU N (late = the
    driver's page-locking path held up).
Prints one line per wait of THRESHOLD_MS (200) or more: UTC time, probe, milliseconds; and every
60 s a line of the longest wait per probe in that minute, so a quiet minute shows as quiet.
Needs cupy for the GPU probes (the host probe runs without it).
    scripts/gpu-check/stall-probe.py SECONDS [THRESHOLD_MS]"""
import sys
import threading
import time
from datetime import datetime, timezone

seconds = float(sys.argv[1])
threshold = float(sys.argv[2]) / 1e3 if len(sys.argv) > 2 else 0.2
lock = threading.Lock()
longest = {}


def say(line):
    with lock:
        print(f"{datetime.now(timezone.utc).strftime('%H:%M:%S.%f')[:-3]} {line}", flush=True)


def timed(name, step, period, expected):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        began = time.monotonic()
        step()
        took = time.monotonic() - began - expected
        with lock:
            longest[name] = max(longest.get(name, 0.0), took)
        if took >= threshold:
            say(f"{name} {took * 1e3:.0f} ms")
        time.sleep(max(0.0, period - (time.monotonic() - began)))


probes = [("host", lambda: time.sleep(0.05), 0.0, 0.05)]  # late by: the sleep's time past 50 ms
try:
    import cupy

    for index in range(cupy.cuda.runtime.getDeviceCount()):
        def gpu_step(index=index, state={}):
            with cupy.cuda.Device(index):
                if "a" not in state:
                    state["a"] = cupy.zeros(1, dtype=cupy.float32)
                state["a"] += 1
                cupy.cuda.Device(index).synchronize()

        def pinned_step(index=index):
            with cupy.cuda.Device(index):
                block = cupy.cuda.alloc_pinned_memory(4 << 20)
                del block

        probes += [(f"gpu{index}", gpu_step, 0.05, 0.0), (f"pinned{index}", pinned_step, 1.0, 0.0)]
except Exception as error:  # no cupy or no GPU: the host probe alone
    say(f"no GPU probes: {error}")

say(f"probing {', '.join(probe[0] for probe in probes)} for {seconds:.0f} s, waits of {threshold * 1e3:.0f} ms or more")
threads = [threading.Thread(target=timed, args=probe, daemon=True) for probe in probes]
for thread in threads:
    thread.start()
end = time.monotonic() + seconds
while time.monotonic() < end:
    time.sleep(min(60.0, max(0.0, end - time.monotonic())))
    with lock:
        minute = dict(longest)
        longest.clear()
    say("longest this minute (ms): " + " ".join(f"{k} {v * 1e3:.0f}" for k, v in sorted(minute.items())))
