#!/usr/bin/env python3
"""OpenCV on one 1920x1080 8-bit plane, the way `convstream bench --suite kernel` times its
CPU engine: the same masks (a dense Laplacian of Gaussian and a Gaussian at each size), the
same border (reflect: OpenCV's BORDER_REFLECT), every core (cv2.setNumThreads), medians of
repeated calls after a warm-up. Prints one JSON object per line.

    opencv_planes.py SIZE...
"""
import json
import os
import sys
import time

import cv2
import numpy as np


def median_us(call, repetitions=15):
    call()
    samples = []
    for _ in range(repetitions):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1e6)
    samples.sort()
    return samples[len(samples) // 2]


def main():
    threads = os.cpu_count()
    cv2.setNumThreads(threads)
    rng = np.random.default_rng(1)
    plane = rng.integers(0, 256, (1080, 1920), dtype=np.uint8)
    border = cv2.BORDER_REFLECT
    for size in map(int, sys.argv[1:]):
        dense = rng.uniform(-1, 1, (size, size)).astype(np.float32)
        dense /= np.abs(dense).sum()
        gaussian = cv2.getGaussianKernel(size, 0)
        rows = {
            "filter2D (dense)": lambda: cv2.filter2D(plane, -1, dense, borderType=border),
            "sepFilter2D (gaussian)": lambda: cv2.sepFilter2D(plane, -1, gaussian, gaussian, borderType=border),
            "GaussianBlur": lambda: cv2.GaussianBlur(plane, (size, size), 0, borderType=border),
        }
        for name, call in rows.items():
            us = median_us(call)
            print(json.dumps({"tool": "opencv " + cv2.__version__, "threads": threads, "size": size,
                              "operation": name, "median_us": round(us, 1)}))


if __name__ == "__main__":
    main()
