#!/usr/bin/env python3
"""What polling snapshots costs a pipeline: `convstream serve` on the CPU engine, one
pipeline, measured with and without a client fetching a snapshot every 200 ms (input and
output in turn, 480 px wide JPEG, as the console's previews do), the two alternating in one
run so that both see the same machine.

Usage: run.py CONVSTREAM [REPEATS] [SECONDS]   (writes results.json and prints a table)

Two pipelines shapes:
- unpaced: a 640x360 clip looped as fast as the engine goes (fps is the engine's throughput);
- paced: a 1280x720 clip looped at its 25 fps (latency is what a live input sees).
fps is frames written over the measured window (after a 3 s warm-up), p99 is the pipeline's
own frame latency (submit to filtered) from /console/status at the end of the window, and
the CPU `serve` used over the window (process_cpu_seconds_total) says what the snapshots cost
the machine.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

TOKEN = "bench-token"


def get(port, path):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, response.read()


def status(port):
    return json.loads(get(port, "/console/status")[1])["pipelines"][0]


def process_cpu_seconds(port):
    for line in get(port, "/metrics")[1].decode().splitlines():
        if line.startswith("process_cpu_seconds_total"):
            return float(line.split()[-1])
    return float("nan")


def free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def poll(port, stop, counts):
    stage = "input"
    while not stop.is_set():
        started = time.monotonic()
        try:
            code, body = get(port, f"/pipelines/bench/snapshot?stage={stage}&width=480")
            counts["ok" if code == 200 else "other"] += 1
            counts["bytes"] += len(body)
        except Exception:
            counts["other"] += 1
        stage = "output" if stage == "input" else "input"
        stop.wait(max(0.0, 0.2 - (time.monotonic() - started)))


def one_run(binary, folder, clip, realtime, polling, seconds):
    port = free_port()
    config = os.path.join(folder, "config.toml")
    with open(config, "w") as f:
        f.write(
            f'[server]\ntoken_env = "BENCH_TOKEN"\n[[pipeline]]\nname = "bench"\n'
            f'source = {{ url = "{clip}", loop = true, realtime = {str(realtime).lower()} }}\n'
            f'filter = {{ mask = "box", device = "cpu" }}\nsink = {{ url = "null" }}\n'
        )
    log = open(os.path.join(folder, "serve.log"), "w")
    serve = subprocess.Popen(
        [binary, "serve", "--config", config, "--listen", f"127.0.0.1:{port}"],
        env={**os.environ, "BENCH_TOKEN": TOKEN},
        stdout=subprocess.DEVNULL,
        stderr=log,
        cwd=folder,
    )
    try:
        for _ in range(100):
            try:
                if status(port)["state"] == "running":
                    break
            except Exception:
                pass
            time.sleep(0.1)
        time.sleep(3)  # warm-up
        stop = threading.Event()
        counts = {"ok": 0, "other": 0, "bytes": 0}
        poller = threading.Thread(target=poll, args=(port, stop, counts)) if polling else None
        first = status(port)["counters"]["frames_written"]
        cpu_first = process_cpu_seconds(port)
        started = time.monotonic()
        if poller:
            poller.start()
        time.sleep(seconds)
        last = status(port)
        elapsed = time.monotonic() - started
        cpu = process_cpu_seconds(port) - cpu_first
        stop.set()
        if poller:
            poller.join()
        return {
            "fps": (last["counters"]["frames_written"] - first) / elapsed,
            "p99_ms": last["latency_p99_ms"],
            "cpu_percent": 100 * cpu / elapsed,
            "dropped": last["counters"]["frames_dropped"],
            "snapshots": counts["ok"],
            "snapshot_failures": counts["other"],
            "snapshot_kb": counts["bytes"] / max(1, counts["ok"]) / 1024,
        }
    finally:
        serve.terminate()
        serve.wait(timeout=30)
        log.close()


def main():
    binary = os.path.abspath(sys.argv[1])
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 15
    results = {"machine": f"{os.cpu_count()} cores", "repeats": repeats, "seconds": seconds, "runs": []}
    with tempfile.TemporaryDirectory() as folder:
        clips = {}
        for name, size in [("unpaced", "640x360"), ("paced", "1280x720")]:
            clips[name] = f"{name}.y4m"
            subprocess.run(
                ["ffmpeg", "-loglevel", "error", "-y", "-f", "lavfi", "-i", f"testsrc2=size={size}:rate=25",
                 "-frames:v", "100", "-pix_fmt", "yuv420p", clips[name]],
                cwd=folder,
                check=True,
            )
        for repeat in range(repeats):
            for shape in ("unpaced", "paced"):
                for polling in ((False, True) if repeat % 2 == 0 else (True, False)):
                    run = one_run(binary, folder, clips[shape], shape == "paced", polling, seconds)
                    run.update(shape=shape, polling=polling, repeat=repeat)
                    print(json.dumps(run), flush=True)
                    results["runs"].append(run)
    with open("results.json", "w") as f:
        json.dump(results, f, indent=1)
    print("\n| pipeline | snapshots every 200 ms | fps (median) | p99 latency ms (median) | serve's CPU, % of a core (median) | runs (fps / p99) |")
    print("|---|---|---:|---:|---:|---|")
    for shape in ("unpaced", "paced"):
        for polling in (False, True):
            runs = [r for r in results["runs"] if r["shape"] == shape and r["polling"] == polling]
            fps = statistics.median(r["fps"] for r in runs)
            p99 = statistics.median(r["p99_ms"] for r in runs)
            cpu = statistics.median(r["cpu_percent"] for r in runs)
            each = ", ".join(f"{r['fps']:.1f} / {r['p99_ms']:.2f}" for r in runs)
            print(f"| {shape} | {'yes' if polling else 'no'} | {fps:.1f} | {p99:.2f} | {cpu:.1f} | {each} |")


if __name__ == "__main__":
    main()
