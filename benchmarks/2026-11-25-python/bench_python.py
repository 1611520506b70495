#!/usr/bin/env python3
"""convstream from Python against the GPU and CPU filters Python users reach for, in one run on
one GPU: the same uint8 plane, the same Gaussian taps, each timed after a warm-up.

    python3 benchmarks/2026-11-25-python/bench_python.py --out results.json

Needs the convstream wheel and, for the peers present: cupy (cupyx.scipy.ndimage.convolve),
torch (torch.nn.functional.conv2d, cuDNN, with cudnn.benchmark on), kornia
(kornia.filters.filter2d) and opencv-python(-headless) (cv2.filter2D and, with the Gaussian's
rank-one factors, cv2.sepFilter2D, on the CPU; and a 3x3 sharpen, CPU only). A peer that
cannot be imported is listed as missing, not timed.

Every case filters one H x W uint8 plane (1080p and 2160p) with a k x k Gaussian (k = 3, 7, 13;
`gaussian:size=k`, whose float taps every peer is given) and SciPy's `reflect` border (torch
and kornia pad with their own `reflect`, which is SciPy's `mirror`: the same work). GPU times
come from CUDA events on the current stream around the whole call, including whatever
conversions the peer needs to take and give uint8 (torch and kornia filter floats: uint8 ->
float32 -> conv -> round -> uint8 is timed as `..., uint8 in/out`, the convolution alone as
`..., float32`). convstream's call on a device array is queued on the current stream (no host
wait since the stream-ordered device calls; benchmarks/2026-11-27-python-stream times them in
detail): the events still bracket its GPU work.
The median of --repeats runs is reported, with p10 and p90; CPU times use perf_counter.
convstream's output is checked equal to its CPU engine's on every case before it is timed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from typing import Callable, Dict, List, Optional

import numpy as np

import convstream

SIZES = {"1080p": (1080, 1920), "2160p": (2160, 3840)}


def percentile(values: List[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def summary(name: str, size: str, k: int, times_ms: List[float], pixels: int, note: str = "") -> Dict:
    median = statistics.median(times_ms)
    return {
        "impl": name,
        "size": size,
        "k": k,
        "median_ms": round(median, 4),
        "p10_ms": round(percentile(times_ms, 0.1), 4),
        "p90_ms": round(percentile(times_ms, 0.9), 4),
        "mpix_per_s": round(pixels / median / 1e3, 1),
        "runs": len(times_ms),
        "note": note,
    }


def time_gpu(call: Callable[[], object], warmup: int, repeats: int, torch_mod=None, cupy_mod=None) -> List[float]:
    """Milliseconds per call from CUDA events recorded on the current stream."""
    for _ in range(warmup):
        call()
    times = []
    for _ in range(repeats):
        if torch_mod is not None:
            start, end = torch_mod.cuda.Event(enable_timing=True), torch_mod.cuda.Event(enable_timing=True)
            start.record()
            call()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        else:
            start, end = cupy_mod.cuda.Event(), cupy_mod.cuda.Event()
            start.record()
            call()
            end.record()
            end.synchronize()
            times.append(cupy_mod.cuda.get_elapsed_time(start, end))
    return times


def time_cpu(call: Callable[[], object], warmup: int, repeats: int) -> List[float]:
    for _ in range(warmup):
        call()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1e3)
    return times


def optional(name: str):
    try:
        return __import__(name)
    except Exception as error:  # an import that fails for any reason: listed, not timed
        print(f"{name}: not available ({error})", file=sys.stderr)
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="results.json")
    parser.add_argument("--sizes", default="1080p,2160p")
    parser.add_argument("--kernels", default="3,7,13")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--cpu-repeats", type=int, default=10)
    parser.add_argument("--device", default="cuda:0")
    args = parser.parse_args()

    cupy = optional("cupy")
    cupyx_ndimage = optional("cupyx.scipy.ndimage") if cupy is not None else None
    if cupyx_ndimage is not None:
        import cupyx.scipy.ndimage as cupyx_ndimage  # the submodule, not the package
    torch = optional("torch")
    kornia = optional("kornia") if torch is not None else None
    cv2 = optional("cv2")
    if torch is not None:
        import torch.nn.functional as F

        torch.backends.cudnn.benchmark = True
    ordinal = int(args.device.split(":")[-1]) if ":" in args.device else 0

    environment = {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "convstream": convstream.__version__,
        "cupy": getattr(cupy, "__version__", None),
        "torch": getattr(torch, "__version__", None),
        "cudnn": torch.backends.cudnn.version() if torch is not None else None,
        "kornia": getattr(kornia, "__version__", None),
        "opencv": getattr(cv2, "__version__", None),
        "opencv_threads": cv2.getNumThreads() if cv2 is not None else None,
        "cpu_count": os.cpu_count(),
        "gpu": torch.cuda.get_device_name(ordinal) if torch is not None and torch.cuda.is_available() else None,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    rows: List[Dict] = []
    rng = np.random.default_rng(1)
    for size in args.sizes.split(","):
        height, width = SIZES[size]
        pixels = height * width
        host = rng.integers(0, 256, size=(height, width), dtype=np.uint8)
        for k in (int(x) for x in args.kernels.split(",")):
            spec = f"gaussian:size={k}"
            weights, _ = convstream.mask_coefficients(spec)
            reference = convstream.Filter(spec, border="reflect", device="cpu")(host)
            ours = convstream.Filter(spec, border="reflect", device=f"cuda:{ordinal}")
            print(f"{size} k={k}", file=sys.stderr)

            if torch is not None:
                x = torch.from_numpy(host).to(f"cuda:{ordinal}")
                out = ours(x)
                assert np.array_equal(out.cpu().numpy(), reference), "convstream (torch) differs from its CPU engine"
                rows.append(summary("convstream, torch.Tensor uint8", size, k,
                                    time_gpu(lambda: ours(x), args.warmup, args.repeats, torch_mod=torch), pixels))
                assert ours.pcie_bytes() is None, "device arrays never reach the engine's copies"
                weight = torch.from_numpy(np.ascontiguousarray(weights[::-1, ::-1])).to(x.device)[None, None]
                xf = x.float()[None, None]
                pad = k // 2

                def conv_float():
                    return F.conv2d(F.pad(xf, (pad, pad, pad, pad), mode="reflect"), weight)

                def conv_uint8():
                    y = F.conv2d(F.pad(x.float()[None, None], (pad, pad, pad, pad), mode="reflect"), weight)
                    return y.round_().clamp_(0, 255).to(torch.uint8)

                rows.append(summary("torch conv2d (cuDNN), float32", size, k,
                                    time_gpu(conv_float, args.warmup, args.repeats, torch_mod=torch), pixels))
                rows.append(summary("torch conv2d (cuDNN), uint8 in/out", size, k,
                                    time_gpu(conv_uint8, args.warmup, args.repeats, torch_mod=torch), pixels))
                if kornia is not None:
                    kernel = torch.from_numpy(np.ascontiguousarray(weights[::-1, ::-1])).to(x.device)[None]

                    def kornia_float():
                        return kornia.filters.filter2d(xf, kernel, border_type="reflect")

                    def kornia_uint8():
                        y = kornia.filters.filter2d(x.float()[None, None], kernel, border_type="reflect")
                        return y.round_().clamp_(0, 255).to(torch.uint8)

                    rows.append(summary("kornia filter2d, float32", size, k,
                                        time_gpu(kornia_float, args.warmup, args.repeats, torch_mod=torch), pixels))
                    rows.append(summary("kornia filter2d, uint8 in/out", size, k,
                                        time_gpu(kornia_uint8, args.warmup, args.repeats, torch_mod=torch), pixels))

            if cupy is not None:
                with cupy.cuda.Device(ordinal):
                    xc = cupy.asarray(host)
                    out = ours(xc)
                    assert np.array_equal(cupy.asnumpy(out), reference), "convstream (cupy) differs from its CPU engine"
                    rows.append(summary("convstream, cupy uint8", size, k,
                                        time_gpu(lambda: ours(xc), args.warmup, args.repeats, cupy_mod=cupy), pixels))
                    wc = cupy.asarray(weights)
                    xcf = xc.astype(cupy.float32)
                    rows.append(summary("cupyx.scipy.ndimage.convolve, float32", size, k,
                                        time_gpu(lambda: cupyx_ndimage.convolve(xcf, wc, mode="reflect"),
                                                 args.warmup, args.repeats, cupy_mod=cupy), pixels))
                    rows.append(summary("cupyx.scipy.ndimage.convolve, uint8 in/out", size, k,
                                        time_gpu(lambda: cupyx_ndimage.convolve(xc, wc, mode="reflect"),
                                                 args.warmup, args.repeats, cupy_mod=cupy), pixels,
                                        "output uint8 as SciPy casts it"))

            if cv2 is not None:
                taps = np.ascontiguousarray(weights[::-1, ::-1])
                rows.append(summary(f"cv2.filter2D (CPU, {cv2.getNumThreads()} threads), uint8", size, k,
                                    time_cpu(lambda: cv2.filter2D(host, -1, taps, borderType=cv2.BORDER_REFLECT),
                                             2, args.cpu_repeats), pixels))
                # The Gaussian's rank-one factors, as a separable filter is given them.
                column = np.ascontiguousarray(taps[:, k // 2])
                across = np.ascontiguousarray(taps[k // 2, :] / taps[k // 2, k // 2])
                rows.append(summary(f"cv2.sepFilter2D (CPU, {cv2.getNumThreads()} threads, float taps), uint8",
                                    size, k,
                                    time_cpu(lambda: cv2.sepFilter2D(host, -1, across, column,
                                                                     borderType=cv2.BORDER_REFLECT),
                                             2, args.cpu_repeats), pixels))
            cpu = convstream.Filter(spec, border="reflect", device="cpu")
            rows.append(summary(f"convstream CPU engine ({os.cpu_count()} cores), uint8", size, k,
                                time_cpu(lambda: cpu(host), 2, args.cpu_repeats), pixels))
        # A 3x3 sharpen (whole-number taps: the CPU engine's integer lanes) on the CPU.
        sharpen = np.array([[0, -1, 0], [-1, 5, -1], [0, -1, 0]], dtype=np.float32)
        if cv2 is not None:
            rows.append(summary(f"cv2.filter2D (CPU, {cv2.getNumThreads()} threads), uint8, sharpen", size, 3,
                                time_cpu(lambda: cv2.filter2D(host, -1, sharpen, borderType=cv2.BORDER_REFLECT),
                                         2, args.cpu_repeats), pixels))
        cpu = convstream.Filter("sharpen", border="reflect", device="cpu")
        rows.append(summary(f"convstream CPU engine ({os.cpu_count()} cores), uint8, sharpen", size, 3,
                            time_cpu(lambda: cpu(host), 2, args.cpu_repeats), pixels))

    result = {"environment": environment, "rows": rows}
    with open(args.out, "w") as out:
        json.dump(result, out, indent=2)
    print(f"| size | k | implementation | median ms | p10 | p90 | Mpx/s |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['size']} | {row['k']} | {row['impl']} | {row['median_ms']} | {row['p10_ms']} | "
              f"{row['p90_ms']} | {row['mpix_per_s']} |")
    print(f"written: {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
