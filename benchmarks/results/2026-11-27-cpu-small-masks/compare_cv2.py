#!/usr/bin/env python3
"""The CPU engine's time for one 1080p uint8 plane against OpenCV's on the same machine, in one
run, rounds interleaved (a round times OpenCV, then the engine's example binary, then OpenCV
again), so that a machine loaded by other work slows both alike and the ratios hold.

    cargo build --release -p convstream-core --example cpu_plane_speed
    python3 benchmarks/results/2026-11-27-cpu-small-masks/compare_cv2.py --binary target/release/examples/cpu_plane_speed

Each mask is given to OpenCV with the engine's own taps (the example prints them) and the same
border (SciPy's `reflect` is OpenCV's BORDER_REFLECT): `cv2.filter2D` for every mask,
`cv2.sepFilter2D` (float taps) for a rank-one one, `cv2.blur` for a box. Prints one line per
mask and peer: the median of the rounds' medians in ms and the engine's ratio to it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time

import cv2
import numpy as np

MASKS = ["sharpen", "box:size=3", "gaussian:size=13", "box:size=13"]


def median_ms(call, runs: int) -> float:
    for _ in range(3):
        call()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1e3)
    return statistics.median(times)


def peers(row: dict, plane: np.ndarray) -> dict:
    width = row["width"]
    taps = np.array(row["taps"], dtype=np.float32).reshape(-1, width)
    border = cv2.BORDER_REFLECT
    found = {"cv2.filter2D": lambda: cv2.filter2D(plane, -1, taps, borderType=border)}
    if row["factors"] is not None:
        column, across = (np.array(f, dtype=np.float32) for f in row["factors"])
        found["cv2.sepFilter2D"] = lambda: cv2.sepFilter2D(plane, -1, across, column, borderType=border)
    if row["mask"].startswith("box"):
        found["cv2.blur"] = lambda: cv2.blur(plane, (width, width), borderType=border)
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("masks", nargs="*", default=MASKS)
    args = parser.parse_args()
    cv2.setNumThreads(args.threads)
    plane = np.random.default_rng(1).integers(0, 256, (1080, 1920), dtype=np.uint8)
    ours: dict = {m: [] for m in args.masks}
    theirs: dict = {}
    rows: dict = {}
    for _ in range(args.rounds):
        out = subprocess.run([args.binary, "--runs", str(args.runs), *args.masks], check=True, capture_output=True, text=True)
        for line in out.stdout.splitlines():
            row = json.loads(line)
            rows[row["mask"]] = row
            ours[row["mask"]].append(row["median_ms"])
        for mask, row in rows.items():
            for name, call in peers(row, plane).items():
                theirs.setdefault((mask, name), []).append(median_ms(call, args.runs))
    print(f"load average before/after: {os.getloadavg()}; cv2 {cv2.__version__}, {args.threads} threads")
    for mask in args.masks:
        engine = statistics.median(ours[mask])
        print(f"{mask:20s} convstream CPU engine {engine:7.3f} ms")
        for (m, name), times in theirs.items():
            if m == mask:
                peer = statistics.median(times)
                print(f"{'':20s} {name:21s} {peer:7.3f} ms   engine/peer {engine / peer:5.2f}x")


if __name__ == "__main__":
    main()
