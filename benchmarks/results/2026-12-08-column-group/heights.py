"""Other mask heights than vs_opencv.py's, both builds in one process in turns (as pair.py):
720p BGR uint8 and gray float32, reflect-101 borders, 100 pairs a row.

Usage: python3 heights.py BASE_DIR NEW_DIR
"""
import sys, statistics, time, numpy as np
import os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pair import load
base, new = load(sys.argv[1], "cs_b"), load(sys.argv[2], "cs_n")
rng = np.random.default_rng(1)
bgr = rng.integers(0, 256, size=(720, 1280, 3), dtype=np.uint8)
gray_f = rng.random((720, 1280), dtype=np.float32)
for spec in ["gaussian:size=9", "gaussian:size=11", "gaussian:size=15", "box:size=9", "gaussian:size=21"]:
    for name, a in [("BGR u8", bgr), ("gray f32", gray_f)]:
        fb, fn = base.Filter(spec, border=4, device="cpu"), new.Filter(spec, border=4, device="cpu")
        assert np.array_equal(fb(a), fn(a))
        t = ([], [])
        for i in range(100):
            for b in ((0, 1) if i % 2 == 0 else (1, 0)):
                f = (fb, fn)[b]; s = time.perf_counter(); f(a); t[b].append(time.perf_counter() - s)
        print(f"| {spec} | {name} | {statistics.median(t[0])*1e3:.3f} | {statistics.median(t[1])*1e3:.3f} | {statistics.median([n/b for b, n in zip(*t)]):.3f} |", flush=True)
