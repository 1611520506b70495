"""Rows in f32 lanes (float32 images, and Gaussians whose taps are not whole numbers over a
power of two) on 720p arrays, timed alone: each row's median of 201 calls, printed as JSON
{row: ms}. Run with RAYON_NUM_THREADS=1 for one thread's work alone (this VM's neighbours move
two-thread figures by up to 1.5x).

Usage: python3 rows.py   (with the convstream package installed)
"""

import json
import statistics
import time

import numpy as np

import convstream

REFLECT_101 = 4
rng = np.random.default_rng(1)
bgr = rng.integers(0, 256, (720, 1280, 3), dtype=np.uint8)
gray = np.ascontiguousarray(bgr[..., 1])
gray_f = (gray / 255.0).astype(np.float32)
bgr_f = (bgr / 255.0).astype(np.float32)
rows = {
    "gray float32 Sobel": ("sobel-x", gray_f),
    "gray float32 Laplacian": ("laplacian", gray_f),
    "BGR float32 GaussianBlur 5": ("gaussian:size=5", bgr_f),
    "gray uint8 GaussianBlur 13": ("gaussian:size=13", gray),
    "BGR uint8 GaussianBlur 13": ("gaussian:size=13", bgr),
}
results = {}
for name, (spec, array) in rows.items():
    mask = convstream.Filter(spec, border=REFLECT_101, device="cpu")
    mask(array)
    times = []
    for _ in range(201):
        start = time.perf_counter()
        mask(array)
        times.append(time.perf_counter() - start)
    results[name] = statistics.median(times) * 1e3
print(json.dumps(results))
