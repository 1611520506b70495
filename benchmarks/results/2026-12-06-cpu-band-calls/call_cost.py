"""The cost of one small call from Python (a 16 x 16 float32 Sobel), the median of 20,001
calls, for the package in the folder given.

Usage: python3 call_cost.py PACKAGE_FOLDER   (a folder holding a `convstream` package)
"""

import statistics
import sys
import time

sys.path.insert(0, sys.argv[1])

import numpy as np  # noqa: E402

import convstream  # noqa: E402

image = np.random.default_rng(0).random((16, 16), dtype=np.float32)
sobel = convstream.Filter("sobel-x", border=4, device="cpu")
sobel(image)
times = []
for _ in range(20001):
    start = time.perf_counter()
    sobel(image)
    times.append(time.perf_counter() - start)
print(f"{sys.argv[1]}: 16x16 call {statistics.median(times) * 1e6:.2f} us")
