"""Channels-last (NHWC) images on the GPU: convstream on a (N, H, W, C) tensor against the same
samples laid out as planes (N, C, H, W), and against NVIDIA CV-CUDA's operators on the NHWC
tensor where CV-CUDA is installed (``cvcuda-cu12``). Every call writes into an output made
beforehand (``out=``, CV-CUDA's ``*_into``) on torch's current stream, on a batch of 4 images;
a row's figure is the median, over ``--repeat`` rounds, of CUDA-event times of 10 calls queued
back to back divided by 10 (the GPU's time a call with its queue kept full, not the host's),
after warm-up calls.

Usage: python3 python/bench/nhwc_gpu.py [--repeat 20] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
from typing import Callable, Dict, List, Optional

import torch

import convstream

try:
    import cvcuda
except ImportError:  # CV-CUDA is optional: its rows then read "-"
    cvcuda = None

SIZES = {"1080p": (1080, 1920), "2160p": (2160, 3840)}


#: Calls queued between two events: enough that the GPU never waits for the host.
CALLS = 10


def event_ms(call: Callable[[], None], repeat: int) -> float:
    """A call's share of CUDA-event time over `CALLS` calls queued back to back on the
    current stream, the median of `repeat` rounds, after 5 warm-up calls."""
    for _ in range(5):
        call()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(CALLS):
            call()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / CALLS)
    return statistics.median(times)


def cvcuda_call(name: str, nhwc: torch.Tensor, out: torch.Tensor) -> Optional[Callable[[], None]]:
    """CV-CUDA's operator for the row, into `out`, on torch's current stream; None without it."""
    if cvcuda is None:
        return None
    src, dst = cvcuda.as_tensor(nhwc, "NHWC"), cvcuda.as_tensor(out, "NHWC")
    stream = cvcuda.as_stream(torch.cuda.current_stream())
    border = cvcuda.Border.REFLECT101
    if name.startswith("gaussian"):
        k = int(name.split("=")[1])
        sigma = 0.3 * ((k - 1) * 0.5 - 1) + 0.8
        return lambda: cvcuda.gaussian_into(dst, src, (k, k), (sigma, sigma), border, stream=stream)
    if name.startswith("box"):
        k = int(name.split("=")[1])
        return lambda: cvcuda.averageblur_into(dst, src, (k, k), (-1, -1), border, stream=stream)
    if name == "laplacian":
        return lambda: cvcuda.laplacian_into(dst, src, 1, 1.0, border, stream=stream)
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--json")
    args = parser.parse_args()
    device = torch.cuda.get_device_name()
    print(f"GPU: {device}; torch {torch.__version__}; CV-CUDA {getattr(cvcuda, '__version__', 'not installed')}")
    print(f"{'mask':14} {'image':22} {'NCHW ms':>8} {'NHWC ms':>8} {'NHWC/NCHW':>9} {'CV-CUDA ms':>10} {'ours/CV-CUDA':>12}")
    rows: List[Dict] = []
    specs = {"gaussian:size=5": "gaussian=5", "gaussian:size=13": "gaussian=13", "box:size=5": "box=5", "laplacian": "laplacian"}
    for size, (height, width) in SIZES.items():
        for dtype in (torch.uint8, torch.float32):
            nhwc = torch.randint(0, 256, (4, height, width, 3), device="cuda").to(dtype)
            nchw = nhwc.permute(0, 3, 1, 2).contiguous()
            nhwc_out, nchw_out, cv_out = torch.empty_like(nhwc), torch.empty_like(nchw), torch.empty_like(nhwc)
            for spec, cv_name in specs.items():
                f = convstream.Filter(spec, border="mirror", device="cuda")
                planes = event_ms(lambda: f(nchw, out=nchw_out), args.repeat)
                channels_last = event_ms(lambda: f(nhwc, out=nhwc_out, layout="NHWC"), args.repeat)
                theirs = cvcuda_call(cv_name, nhwc, cv_out)
                cv_ms = event_ms(theirs, args.repeat) if theirs else None
                image = f"4x {size} x3 {str(dtype).split('.')[1]}"
                row = {"mask": spec, "image": image, "nchw_ms": planes, "nhwc_ms": channels_last, "cvcuda_ms": cv_ms}
                rows.append(row)
                cv_text = f"{cv_ms:10.4f} {channels_last / cv_ms:12.2f}" if cv_ms else f"{'-':>10} {'-':>12}"
                print(f"{spec:14} {image:22} {planes:8.4f} {channels_last:8.4f} {channels_last / planes:9.2f} {cv_text}", flush=True)
    if args.json:
        with open(args.json, "w") as file:
            json.dump({"device": device, "rows": rows}, file, indent=1)


if __name__ == "__main__":
    main()
