#!/usr/bin/env python3
"""convstream's stream-ordered device calls from PyTorch, against what a PyTorch user writes
instead, in one run on one GPU:

    python3 python/bench/bench_stream.py --out results.json

Rows (uint8 planes unless said; CUDA-event medians after a warm-up, on the current stream):

- ``convstream, stream-ordered``: ``f(x, out=y)`` queued on torch's current stream, no host
  wait; the events bracket one call, so host overhead that the GPU does not hide shows up.
- ``convstream, back to back``: 100 calls between two events, divided: the GPU time per call
  once the host keeps ahead (what a loop sees).
- ``torch whole path``: ``x.float()``, reflect pad, ``conv2d`` (cuDNN, ``cudnn.benchmark``),
  ``round``, ``clamp``, ``to(uint8)``: what a torch user writes to get the same uint8 result.
- ``torch conv2d f32 alone``: the convolution only, on a float tensor made beforehand.
- ``convstream float32``: a float32 tensor in and out (no rounding), against the line above.

Masks: ``gaussian:size=k`` (separable, fused kernel) and a dense k x k mask of random integer
weights (``dense``), k = 3..63, at 1080p and 2160p; batches of 8 x 3 x 1080p (Sobel x, one 3x3
mask; 13x13 Gaussian) against torch's grouped conv2d. Borders: convstream's ``mirror`` (what
torch's ``reflect`` pad does).

Checks, timed with ``perf_counter`` on the host:

- queued behind a 5 ms ``torch.cuda._sleep`` on the same stream, how long the Python call
  takes to return (target: < 50 us: it does not wait for the stream);
- a 1000-iteration loop (torch op, filter, torch op) timed end to end against the same loop
  without the filter: with no host synchronisation the difference is the filter's GPU time,
  and the GPU stays busy (``idle_ms`` = loop time - the GPU time of its parts).

Every convstream result is checked equal to its CPU engine (1080p) before it is timed.
Writes every row and the environment to ``--out`` and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from typing import Callable, Dict, List, Tuple

import numpy as np

import convstream

SIZES = {"1080p": (1080, 1920), "2160p": (2160, 3840)}


def events_ms(torch, call: Callable[[], object], warmup: int, repeats: int, inner: int = 1) -> List[float]:
    """Milliseconds per call from CUDA events on the current stream, ``inner`` calls between
    each pair of events."""
    for _ in range(warmup):
        call()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(inner):
            call()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / inner)
    return times


def row(impl: str, case: str, times: List[float], flops: float = 0.0, note: str = "") -> Dict:
    median = statistics.median(times)
    ordered = sorted(times)
    return {
        "impl": impl,
        "case": case,
        "median_ms": round(median, 4),
        "p10_ms": round(ordered[len(ordered) // 10], 4),
        "p90_ms": round(ordered[(9 * len(ordered)) // 10], 4),
        "tflops": round(flops / median / 1e9, 2) if flops else None,
        "note": note,
    }


def dense_mask(k: int, rng: np.random.Generator) -> np.ndarray:
    """A k x k mask of random small integers: not separable, so the dense kernel runs."""
    weights = rng.integers(1, 9, size=(k, k)).astype(np.float64)
    weights[k // 2, k // 2] += 1  # rank above one even at k = 1
    return weights


def torch_whole_path(torch, F, x, weight, pad, groups=1):
    """What a torch user writes for the uint8 result: float, pad, conv2d, round, clamp, uint8."""
    def call():
        y = F.conv2d(F.pad(x.float(), (pad, pad, pad, pad), mode="reflect"), weight, groups=groups)
        return y.round_().clamp_(0, 255).to(torch.uint8)

    return call


def plane_rows(torch, F, args, rng, rows: List[Dict]) -> None:
    device = torch.device(args.device)
    for size in args.sizes.split(","):
        height, width = SIZES[size]
        host = rng.integers(0, 256, size=(height, width), dtype=np.uint8)
        x = torch.from_numpy(host).to(device)
        y = torch.empty_like(x)
        xf = x.float()[None, None]
        for family in ("gaussian", "dense"):
            for k in (int(v) for v in args.kernels.split(",")):
                case = f"{size} {family} {k}x{k}"
                print(case, file=sys.stderr)
                if family == "gaussian":
                    made = dict(mask=f"gaussian:size={k}")
                    f = convstream.Filter(f"gaussian:size={k}", border="mirror", device=args.device)
                    weights, _ = convstream.mask_coefficients(f"gaussian:size={k}")
                    weights = weights.astype(np.float64)
                else:
                    raw = dense_mask(k, rng)
                    made = dict(mask=raw, divisor=float(raw.sum()))
                    f = convstream.Filter(raw, divisor=float(raw.sum()), border="mirror", device=args.device)
                    weights = raw / raw.sum()
                if size == "1080p":
                    cpu = convstream.Filter(**made, border="mirror", device="cpu")
                    f(x, out=y)
                    assert np.array_equal(y.cpu().numpy(), cpu(host)), f"{case}: differs from the CPU engine"
                flops = 2.0 * k * k * height * width
                rows.append(row("convstream, stream-ordered", case,
                                events_ms(torch, lambda: f(x, out=y), args.warmup, args.repeats), flops))
                rows.append(row("convstream, back to back", case,
                                events_ms(torch, lambda: f(x, out=y), 3, max(5, args.repeats // 10), 100), flops))
                weight = torch.from_numpy(np.ascontiguousarray(weights[::-1, ::-1]).astype(np.float32)).to(device)
                weight = weight[None, None]
                pad = k // 2
                if pad < min(height, width):
                    rows.append(row("torch whole path", case, events_ms(
                        torch, torch_whole_path(torch, F, x[None, None], weight, pad), args.warmup, args.repeats),
                        flops))
                    padded = F.pad(xf, (pad, pad, pad, pad), mode="reflect")
                    rows.append(row("torch conv2d f32 alone", case, events_ms(
                        torch, lambda: F.conv2d(padded, weight), args.warmup, args.repeats), flops))
                xf32 = x.float()
                yf32 = torch.empty_like(xf32)
                rows.append(row("convstream float32", case,
                                events_ms(torch, lambda: f(xf32, out=yf32), args.warmup, args.repeats), flops))


def batch_rows(torch, F, args, rng, rows: List[Dict]) -> None:
    device = torch.device(args.device)
    host = rng.integers(0, 256, size=(8, 3, 1080, 1920), dtype=np.uint8)
    x = torch.from_numpy(host).to(device)
    y = torch.empty_like(x)
    sobel = np.array([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]])
    cases = [("batch 8x3x1080p sobel-x 3x3", convstream.Filter(sobel, divisor=4, bias=128, border="mirror",
                                                               device=args.device), sobel / 4, 128.0),
             ("batch 8x3x1080p gaussian 13x13", convstream.Filter("gaussian:size=13", border="mirror",
                                                                  device=args.device),
              convstream.mask_coefficients("gaussian:size=13")[0].astype(np.float64), 0.0)]
    for case, f, weights, bias in cases:
        print(case, file=sys.stderr)
        k = weights.shape[0]
        flops = 2.0 * k * k * x.numel()
        rows.append(row("convstream, stream-ordered", case,
                        events_ms(torch, lambda: f(x, out=y), args.warmup, args.repeats), flops))
        taps = torch.from_numpy(np.ascontiguousarray(weights[::-1, ::-1]).astype(np.float32)).to(device)
        grouped = taps[None, None].repeat(3, 1, 1, 1)
        pad = k // 2

        def whole():
            z = F.conv2d(F.pad(x.float(), (pad, pad, pad, pad), mode="reflect"), grouped, groups=3) + bias
            return z.round_().clamp_(0, 255).to(torch.uint8)

        rows.append(row("torch whole path (grouped)", case, events_ms(torch, whole, args.warmup, args.repeats),
                        flops))


def queued_return_check(torch, args, rng) -> Dict:
    """How long the call takes to return when the stream is busy for 5 ms ahead of it."""
    device = torch.device(args.device)
    x = torch.from_numpy(rng.integers(0, 256, size=(2160, 3840), dtype=np.uint8)).to(device)
    y = torch.empty_like(x)
    f = convstream.Filter("gaussian:size=13", device=args.device)
    f(x, out=y)
    torch.cuda.synchronize()
    # The sleep kernel counts clock cycles: calibrate them to 5 ms.
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(10_000_000)
    end.record()
    end.synchronize()
    cycles = int(10_000_000 * 5.0 / start.elapsed_time(end))
    returns = []
    for _ in range(50):
        torch.cuda._sleep(cycles)
        started = time.perf_counter()
        f(x, out=y)
        returns.append((time.perf_counter() - started) * 1e6)
        torch.cuda.synchronize()
    synced = convstream.Filter("gaussian:size=13", device=args.device, sync=True)
    synced(x, out=y)
    waits = []
    for _ in range(10):
        torch.cuda._sleep(cycles)
        started = time.perf_counter()
        synced(x, out=y)
        waits.append((time.perf_counter() - started) * 1e6)
    return {"sleep_cycles": cycles, "return_us_median": round(statistics.median(returns), 1),
            "return_us_max": round(max(returns), 1), "sync_true_return_us_median": round(statistics.median(waits), 1),
            "target_us": 50}


def loop_check(torch, args, rng, iterations: int = 1000) -> Dict:
    """A (torch op, filter, torch op) loop end to end, against the loop without the filter."""
    device = torch.device(args.device)
    x = torch.from_numpy(rng.random((3, 1080, 1920), dtype=np.float32)).to(device)
    a = torch.empty_like(x)
    b = torch.empty_like(x)
    f = convstream.Filter("gaussian:size=13", device=args.device)

    def with_filter():
        torch.mul(x, 1.0001, out=a)
        f(a, out=b)
        b.add_(1.0)

    def without_filter():
        torch.mul(x, 1.0001, out=a)
        a.add_(1.0)

    def timed(body) -> Tuple[float, float]:
        for _ in range(20):
            body()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        started = time.perf_counter()
        start.record()
        for _ in range(iterations):
            body()
        end.record()
        end.synchronize()
        wall = (time.perf_counter() - started) * 1e3
        return start.elapsed_time(end), wall

    gpu_with, wall_with = timed(with_filter)
    gpu_without, wall_without = timed(without_filter)
    filter_alone = statistics.median(events_ms(torch, lambda: f(a, out=b), 3, 10, 100)) * iterations
    idle = gpu_with - gpu_without - filter_alone
    return {"iterations": iterations, "loop_ms": round(gpu_with, 2), "loop_without_filter_ms": round(gpu_without, 2),
            "filter_alone_ms": round(filter_alone, 2), "idle_ms": round(idle, 2),
            "host_wall_ms": round(wall_with, 2), "host_wall_without_filter_ms": round(wall_without, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="results.json")
    parser.add_argument("--sizes", default="1080p,2160p")
    parser.add_argument("--kernels", default="3,5,7,9,13,17,21,31,45,63")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--device", default="cuda:0")
    args = parser.parse_args()

    import torch
    import torch.nn.functional as F

    torch.backends.cudnn.benchmark = True
    torch.cuda.set_device(torch.device(args.device))
    properties = torch.cuda.get_device_properties(torch.device(args.device))
    environment = {
        "gpu": properties.name,
        "multiprocessors": properties.multi_processor_count,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "numpy": np.__version__,
        "convstream": convstream.__version__,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    rng = np.random.default_rng(1)
    rows: List[Dict] = []
    plane_rows(torch, F, args, rng, rows)
    batch_rows(torch, F, args, rng, rows)
    checks = {"queued_return": queued_return_check(torch, args, rng), "loop": loop_check(torch, args, rng)}
    with open(args.out, "w") as out:
        json.dump({"environment": environment, "rows": rows, "checks": checks}, out, indent=2)
    print(f"GPU: {environment['gpu']}, torch {environment['torch']}, cuDNN {environment['cudnn']}")
    print("| case | implementation | median ms | p10 | p90 | TFLOP/s |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['case']} | {r['impl']} | {r['median_ms']} | {r['p10_ms']} | {r['p90_ms']} | {r['tflops']} |")
    print(json.dumps(checks, indent=2))
    print(f"written: {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
