#!/usr/bin/env python3
"""convstream's `Filter(..., device="cpu")` on a NumPy 1080p uint8 plane against OpenCV, in one
process, rounds interleaved: a 3x3 sharpen against cv2.filter2D, and a 13x13 Gaussian (its own
taps) against cv2.sepFilter2D (float taps, the Gaussian's rank-one factors) and
cv2.GaussianBlur. The sharpen's output is checked equal to cv2.filter2D's first.

    python3 benchmarks/results/2026-11-27-cpu-small-masks/compare_python.py   (the wheel and opencv installed)
"""

from __future__ import annotations

import os
import statistics
import time

import cv2
import numpy as np

import convstream


def median_ms(call, runs: int = 20) -> float:
    for _ in range(3):
        call()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1e3)
    return statistics.median(times)


def main() -> None:
    plane = np.random.default_rng(1).integers(0, 256, (1080, 1920), dtype=np.uint8)
    gaussian = convstream.Filter("gaussian:size=13", border="reflect", device="cpu")
    sharpen = convstream.Filter("sharpen", border="reflect", device="cpu")
    weights, _ = convstream.mask_coefficients("gaussian:size=13")
    taps = np.ascontiguousarray(np.array(weights, dtype=np.float32)[::-1, ::-1])
    column = np.ascontiguousarray(taps[:, 6])
    across = np.ascontiguousarray(taps[6, :] / taps[6, 6])
    kernel = np.array([[0, -1, 0], [-1, 5, -1], [0, -1, 0]], dtype=np.float32)
    border = cv2.BORDER_REFLECT
    assert np.array_equal(sharpen(plane), cv2.filter2D(plane, -1, kernel, borderType=border))
    calls = {
        "Filter('sharpen')": lambda: sharpen(plane),
        "cv2.filter2D, sharpen": lambda: cv2.filter2D(plane, -1, kernel, borderType=border),
        "Filter('gaussian:size=13')": lambda: gaussian(plane),
        "cv2.sepFilter2D, 13x13": lambda: cv2.sepFilter2D(plane, -1, across, column, borderType=border),
        "cv2.GaussianBlur, 13x13": lambda: cv2.GaussianBlur(plane, (13, 13), 0, borderType=border),
    }
    times: dict = {}
    for _ in range(5):
        for name, call in calls.items():
            times.setdefault(name, []).append(median_ms(call))
    medians = {name: statistics.median(values) for name, values in times.items()}
    print(f"load average {os.getloadavg()}, cv2 {cv2.__version__} with {cv2.getNumThreads()} threads")
    for name, value in medians.items():
        print(f"{name:28s} {value:7.3f} ms")
    print(f"sharpen: Filter / cv2.filter2D = {medians['Filter(' + repr('sharpen') + ')'] / medians['cv2.filter2D, sharpen']:.2f}x")
    gauss = medians["Filter('gaussian:size=13')"]
    print(f"13x13: Filter / cv2.sepFilter2D = {gauss / medians['cv2.sepFilter2D, 13x13']:.2f}x, "
          f"/ cv2.GaussianBlur = {gauss / medians['cv2.GaussianBlur, 13x13']:.2f}x")


if __name__ == "__main__":
    main()
