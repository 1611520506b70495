"""One build of the Python package against OpenCV on the rows of vs_opencv.py that missed, at
720p, 1080p and on a 128 x 256 image: each row's median of 101 calls (convstream's, then
cv2's), printed as JSON {row: [convstream ms, cv2 ms]}.

Usage: python3 ab.py PACKAGE_FOLDER   (a folder holding a `convstream` package)
"""

import json
import statistics
import sys
import time

sys.path.insert(0, sys.argv[1])

import cv2  # noqa: E402
import numpy as np  # noqa: E402

import convstream  # noqa: E402

assert convstream.__file__.startswith(sys.argv[1]), convstream.__file__
REFLECT_101 = 4


def median_ms(call, array, repeat=101):
    call(array)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call(array)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def filter_of(spec):
    return convstream.Filter(spec, border=REFLECT_101, device="cpu")


rng = np.random.default_rng(1)
results = {}
for size, (height, width) in {"720p": (720, 1280), "1080p": (1080, 1920), "small": (128, 256)}.items():
    bgr = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
    bgr16 = rng.integers(0, 65536, (height, width, 3), dtype=np.uint16)
    gray = bgr[..., 1].astype(np.float32) / 255
    crop = bgr[height // 8 : height - height // 8, width // 8 : width - width // 8]
    planar = np.ascontiguousarray(bgr.transpose(2, 0, 1))[None]
    rows = {
        "sobel f32": (gray, filter_of("sobel-x"), lambda a: cv2.Sobel(a, cv2.CV_32F, 1, 0)),
        "laplacian f32": (gray, filter_of("laplacian"), lambda a: cv2.Laplacian(a, cv2.CV_32F)),
        "bgr g5": (bgr, filter_of("gaussian:size=5"), lambda a: cv2.GaussianBlur(a, (5, 5), 0)),
        "crop g5": (crop, filter_of("gaussian:size=5"), lambda a: cv2.GaussianBlur(a, (5, 5), 0)),
        "bgr16 g5": (bgr16, filter_of("gaussian:size=5"), lambda a: cv2.GaussianBlur(a, (5, 5), 0)),
        "planar box5": (
            planar,
            filter_of("box:size=5"),
            lambda a: np.stack([cv2.blur(p, (5, 5)) for p in a[0]])[None],
        ),
    }
    for name, (array, ours, theirs) in rows.items():
        results[f"{name} {size}"] = (median_ms(ours, array), median_ms(theirs, array))
print(json.dumps(results))
