"""The box rows of vs_opencv.py (and a gray one) against OpenCV, at 720p, 1080p and 2160p: each
row's median of 101 calls (convstream's, then cv2's), printed as JSON {row: [convstream ms,
cv2 ms]}; every row's result is checked equal to cv2's first (a build whose box is not cv2's mean
checks nothing: CHECK=0).

Usage: python3 box.py   (with the convstream package and opencv-python-headless installed)
"""

import json
import os
import statistics
import time

import cv2
import numpy as np

import convstream

REFLECT_101 = 4
cv2.setNumThreads(2)


def median_ms(call, array, repeat=101):
    call(array)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call(array)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


rng = np.random.default_rng(1)
results = {}
for size, (height, width) in {"720p": (720, 1280), "1080p": (1080, 1920), "2160p": (2160, 3840)}.items():
    bgr = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
    planar = np.ascontiguousarray(bgr.transpose(2, 0, 1))[None]
    gray = np.ascontiguousarray(bgr[..., 1])
    box = lambda w, h: convstream.Filter(f"box:width={w},height={h}", border=REFLECT_101, device="cpu")
    rows = {
        "BGR blur 7x3": (bgr, box(7, 3), lambda a: cv2.blur(a, (7, 3))),
        "planar blur 5": (planar, box(5, 5), lambda a: np.stack([cv2.blur(p, (5, 5)) for p in a[0]])[None]),
        "gray blur 5": (gray, box(5, 5), lambda a: cv2.blur(a, (5, 5))),
    }
    for name, (array, ours, theirs) in rows.items():
        assert os.environ.get("CHECK") == "0" or np.array_equal(ours(array), theirs(array)), name
        results[f"{name} {size}"] = (median_ms(ours, array), median_ms(theirs, array))
print(json.dumps(results))
