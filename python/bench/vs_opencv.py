"""convstream against OpenCV on the arrays OpenCV users hold: interleaved BGR images, gray and
float32 images, planar stacks, at 720p, 1080p and 2160p, on the CPU (both with every core:
``cv2.setNumThreads`` left at its default, rayon's pool at one thread a core).

Each row times the same operation both ways on the same array (convstream's translation of
the cv2 call, as the table of docs/masks.md gives it) and prints the medians and their ratio
(convstream / cv2: below 1 is faster). ``--smoke`` runs every row once on a small image and
checks the results agree (no timing claim): the CI run.

Usage: python3 python/bench/vs_opencv.py [--sizes 720p,1080p,2160p] [--repeat 15] [--json FILE] [--smoke]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from typing import Callable, Dict, List, Tuple

import cv2
import numpy as np

import convstream

SIZES = {"720p": (720, 1280), "1080p": (1080, 1920), "2160p": (2160, 3840), "smoke": (67, 93)}


def cases(height: int, width: int) -> List[Tuple[str, np.ndarray, Callable, Callable, float]]:
    """Rows: (name, input, cv2 call, convstream call, largest difference allowed in --smoke)."""
    rng = np.random.default_rng(1)
    bgr = rng.integers(0, 256, size=(height, width, 3), dtype=np.uint8)
    bgr16 = rng.integers(0, 65536, size=(height, width, 3), dtype=np.uint16)
    gray = np.ascontiguousarray(bgr[..., 1])
    gray_f = (gray.astype(np.float32) / 255.0).astype(np.float32)
    bgr_f = (bgr.astype(np.float32) / 255.0).astype(np.float32)
    planar = np.ascontiguousarray(bgr.transpose(2, 0, 1))[None]
    crop = bgr[height // 8 : height - height // 8, width // 8 : width - width // 8]
    reflect_101 = cv2.BORDER_REFLECT_101
    g13 = convstream.Filter("gaussian:size=13", border=reflect_101, device="cpu")
    g5 = convstream.Filter("gaussian:size=5", border=reflect_101, device="cpu")
    blur73 = convstream.Filter("box:width=7,height=3", border=reflect_101, device="cpu")
    k7 = np.random.default_rng(2).integers(-3, 4, size=(7, 7)).astype(np.float32)
    f2d = convstream.Filter(k7, mode="correlate", border=reflect_101, device="cpu")
    sobel = convstream.Filter("sobel-x", border=reflect_101, device="cpu")
    laplacian = convstream.Filter("laplacian", border=reflect_101, device="cpu")
    box5 = convstream.Filter("box:size=5", border=reflect_101, device="cpu")
    return [
        # cv2 sums 8-bit Gaussians in fixed point: a level or two from the exact sums.
        ("BGR uint8 GaussianBlur 13", bgr, lambda a: cv2.GaussianBlur(a, (13, 13), 0), g13, 2),
        ("BGR uint8 GaussianBlur 5", bgr, lambda a: cv2.GaussianBlur(a, (5, 5), 0), g5, 2),
        ("BGR uint8 blur 7x3", bgr, lambda a: cv2.blur(a, (7, 3)), blur73, 0),
        ("BGR uint8 crop GaussianBlur 5", crop, lambda a: cv2.GaussianBlur(a, (5, 5), 0), g5, 2),
        ("BGR uint16 GaussianBlur 5", bgr16, lambda a: cv2.GaussianBlur(a, (5, 5), 0), g5, 1),
        ("BGR float32 GaussianBlur 5", bgr_f, lambda a: cv2.GaussianBlur(a, (5, 5), 0), g5, 1e-5),
        ("gray uint8 GaussianBlur 13", gray, lambda a: cv2.GaussianBlur(a, (13, 13), 0), g13, 2),
        ("gray uint8 filter2D 7x7", gray, lambda a: cv2.filter2D(a, -1, k7), f2d, 0),
        ("gray float32 Sobel", gray_f, lambda a: cv2.Sobel(a, cv2.CV_32F, 1, 0), sobel, 1e-5),
        ("gray float32 Laplacian", gray_f, lambda a: cv2.Laplacian(a, cv2.CV_32F), laplacian, 1e-5),
        (
            "planar (1,3,H,W) uint8 blur 5",
            planar,
            lambda a: np.stack([cv2.blur(p, (5, 5)) for p in a[0]])[None],
            box5,
            1,
        ),
    ]


def median_ms(calls: List[Callable], array: np.ndarray, repeat: int) -> List[float]:
    """Each call's median time, the calls taken in turn (so a busy moment of the machine
    falls on both sides alike), after a warm-up call each (thread pools started, buffers made)."""
    times: List[List[float]] = [[] for _ in calls]
    for call in calls:
        call(array)
    for _ in range(repeat):
        for call, spent in zip(calls, times):
            start = time.perf_counter()
            call(array)
            spent.append((time.perf_counter() - start) * 1000.0)
    return [statistics.median(spent) for spent in times]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="720p,1080p,2160p")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--json", help="also write the rows to this file")
    parser.add_argument("--smoke", action="store_true", help="each row once on a small image, results compared")
    args = parser.parse_args()
    sizes = ["smoke"] if args.smoke else args.sizes.split(",")
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
    # The machine's load before and after: on a shared machine, other work's share of the
    # cores moves every figure, so the figures carry it.
    load_before = os.getloadavg()
    print(f"CPU: {cpu}, {os.cpu_count()} cores; OpenCV {cv2.__version__} ({cv2.getNumThreads()} threads); convstream {convstream.__version__}")
    print(f"load average before: {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}")
    rows: List[Dict] = []
    print(f"{'case':34} {'size':6} {'cv2 ms':>8} {'ours ms':>8} {'ratio':>6}")
    for size in sizes:
        height, width = SIZES[size]
        for name, array, cv2_call, ours, tolerance in cases(height, width):
            if args.smoke:
                want, got = cv2_call(array), ours(array)
                difference = float(np.max(np.abs(want.astype(np.float64) - got.astype(np.float64))))
                if difference > tolerance:
                    raise SystemExit(f"\n{name}: convstream differs from cv2 by {difference} (allowed {tolerance})")
                print(f"{name:34} {size:6} agrees (largest difference {difference:g})")
                continue
            cv2_ms, ours_ms = median_ms([cv2_call, ours], array, args.repeat)
            rows.append({"case": name, "size": size, "cv2_ms": cv2_ms, "convstream_ms": ours_ms, "ratio": ours_ms / cv2_ms})
            print(f"{name:34} {size:6} {cv2_ms:8.2f} {ours_ms:8.2f} {ours_ms / cv2_ms:6.2f}", flush=True)
    load_after = os.getloadavg()
    print(f"load average after: {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
    if args.json:
        with open(args.json, "w") as file:
            json.dump(
                {
                    "cpu": cpu,
                    "cores": os.cpu_count(),
                    "opencv": cv2.__version__,
                    "repeat": args.repeat,
                    "load_before": load_before,
                    "load_after": load_after,
                    "rows": rows,
                },
                file,
                indent=1,
            )


if __name__ == "__main__":
    main()
