"""Two builds of the Python package in one process, call by call: each of vs_opencv.py's rows
(at the sizes asked) runs the base build's and the new build's filter in turns (base, new,
new, base, ...), so a slow moment of this shared VM falls on both alike, and prints each
build's median and the median of the new call's time over the base call's beside it.

Usage: python3 pair.py BASE_DIR NEW_DIR [--sizes 720p] [--pairs 200]
(each DIR holds a `convstream` package: the Python files and `_convstream.abi3.so`.)
"""
import argparse, importlib.util, os, shutil, statistics, sys, tempfile, time

import cv2
PAUSE = float(os.environ.get("PAUSE", "0"))
import numpy as np


def load(package_dir: str, name: str):
    """The convstream package in `package_dir`, imported as the module `name`."""
    root = tempfile.mkdtemp()
    shutil.copytree(os.path.join(package_dir, "convstream"), os.path.join(root, name))
    spec = importlib.util.spec_from_file_location(name, os.path.join(root, name, "__init__.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("base")
    parser.add_argument("new")
    parser.add_argument("--sizes", default="720p")
    parser.add_argument("--pairs", type=int, default=200)
    args = parser.parse_args()
    builds = [load(args.base, "cs_base"), load(args.new, "cs_new")]
    # vs_opencv.py's rows, made with each build (it imports `convstream`: the base build first).
    sys.modules["convstream"] = builds[0]
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../python/bench"))
    import vs_opencv

    print("| case | size | base ms | new ms | new / base (median of pairs) |")
    print("|---|---|---:|---:|---:|")
    for size in args.sizes.split(","):
        height, width = vs_opencv.SIZES[size]
        rows = []
        for build in builds:
            vs_opencv.convstream = build
            rows.append(vs_opencv.cases(height, width))
        for (name, array, _, base, _), (_, _, _, new, _) in zip(*rows):
            assert np.array_equal(base(array), new(array)), name
            times = ([], [])
            for i in range(args.pairs):
                order = (0, 1) if i % 2 == 0 else (1, 0)
                for b in order:
                    call = (base, new)[b]
                    start = time.perf_counter()
                    call(array)
                    times[b].append(time.perf_counter() - start)
                    # The other build's threads asleep before its call: each build has its own pool.
                    time.sleep(PAUSE)
            ratios = [n / b for b, n in zip(*times)]
            med = [statistics.median(t) * 1e3 for t in times]
            print(f"| {name} | {size} | {med[0]:.3f} | {med[1]:.3f} | {statistics.median(ratios):.3f} |", flush=True)


if __name__ == "__main__":
    main()
