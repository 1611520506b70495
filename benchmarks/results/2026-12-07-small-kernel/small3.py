"""An experiment on the GPU host: the engine's dense kernel (kernels/convolve.cu, as the engine
compiles it for a 3x3 mask over one 8-bit 3840 x 2160 plane: 32 x 8 threads of 4 x 4 outputs)
against small3.cu (no shared tile; see its header), both compiled by NVRTC through CuPy with the
engine's options. Checks every output byte of small3 against the engine's kernel on four random
planes and two real-valued masks (divisor 1 and 9, a bias) under every border, with outputs
poisoned first, then times each with CUDA events after a warm-up: the median of 50 launches each
between its own event pair, and 20 launches queued between one pair (per launch).

Usage: python3 small3.py [REPO_ROOT]   (prints JSON lines)
"""
import json, pathlib, statistics, sys
import cupy as cp
import numpy as np

here = pathlib.Path(__file__).resolve().parent
root = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else here.parents[2]
header = (root / "crates/core/kernels/convolve.cuh").read_text()
engine = (root / "crates/core/kernels/convolve.cu").read_text().replace('#include "convolve.cuh"', "")
small = (here / "small3.cu").read_text()
W, H = 3840, 2160
BORDERS = ["BORDER_CONSTANT", "BORDER_NEAREST", "BORDER_REFLECT", "BORDER_MIRROR", "BORDER_WRAP"]
geometry = np.dtype([("width", "<i4"), ("height", "<i4"), ("src_pitch", "<i4"), ("dst_pitch", "<i4"),
                     ("src_pixel", "<i4"), ("bias", "<f4"), ("src_plane", "<i8"), ("dst_plane", "<i8")])


def module(border, py):
    options = ("--gpu-architecture=sm_90", "-std=c++17", "-DMASK_W=3", "-DMASK_H=3", "-DCH=1",
               f"-DBORDER={border}", "-DPX=4", "-DPY=4", "-DBLOCK_X=32", "-DBLOCK_Y=8", "-DUNROLL_ROWS=1",
               "-DMAGNITUDE=0", "-DSAMPLE_BITS=8", "-DSAMPLE_SHIFT=0", "-DSAMPLE_FLOAT=0", f"-DSMALL_PY={py}")
    return cp.RawModule(code=header + engine + small, options=options, backend="nvrtc")


def set_taps(mod, taps, divisor):
    values = np.zeros(9 + 3 + 3 + 1, np.float32)
    values[:9] = taps.ravel()
    values[-1] = divisor
    ptr = mod.get_global("c_taps")
    ptr.copy_from_host(values.ctypes.data, values.nbytes)


def launchers(mod, py, by):
    dense, small3 = mod.get_function("convolve_dense"), mod.get_function("convolve_small3")
    tile_shared = (32 * 4 - 4 + 4 * 3) * (8 * 4 + 2) * 4  # SHARED_PITCH x SHARED_H floats
    def run_dense(src, dst, g):
        dense(((W + 127) // 128, (H + 31) // 32, 1), (32, 8, 1), (src, dst, g), shared_mem=tile_shared)
    def run_small(src, dst, g):
        small3(((W + 127) // 128, (H + by * py - 1) // (by * py), 1), (32, by, 1), (src, dst, g))
    return run_dense, run_small


def timed(run, planes, out, g):
    for _ in range(200):
        for p in planes:
            run(p, out, g)
    cp.cuda.Device().synchronize()
    starts, ends = cp.cuda.Event(), cp.cuda.Event()
    each = []
    for i in range(50):
        starts.record(); run(planes[i % 4], out, g); ends.record(); ends.synchronize()
        each.append(cp.cuda.get_elapsed_time(starts, ends) * 1e3)
    queued = []
    for i in range(10):
        starts.record()
        for k in range(20):
            run(planes[k % 4], out, g)
        ends.record(); ends.synchronize()
        queued.append(cp.cuda.get_elapsed_time(starts, ends) * 1e3 / 20)
    return statistics.median(each), statistics.median(queued)


rng = np.random.default_rng(7)
planes = [cp.asarray(rng.integers(0, 256, (H, W), dtype=np.uint8)) for _ in range(4)]
g = np.zeros((), geometry)
g["width"], g["height"], g["src_pitch"], g["dst_pitch"] = W, H, W, W
masks = {"LoG-like floats, divisor 1, bias 0.5": (rng.normal(0, 1, (3, 3)).astype(np.float32), 1.0, 0.5),
         "whole numbers / 9, bias 0": (rng.integers(-4, 5, (3, 3)).astype(np.float32), 9.0, 0.0)}
print(json.dumps({"device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode()}))
# Planes of other sizes (a partial last word, rows not a whole block), checked too.
odd_sizes = [(1, 1), (5, 3), (130, 67), (3842, 2161)]
for py, by in [(8, 8), (4, 8), (16, 4), (8, 4)]:
    for border in BORDERS:
        mod = module(border, py)
        run_dense, run_small = launchers(mod, py, by)
        for name, (taps, divisor, bias) in masks.items():
            set_taps(mod, taps, divisor)
            g["bias"] = bias
            gstruct = g[()]
            for p in planes:
                a = cp.full((H, W), 0xA5, cp.uint8); b = cp.full((H, W), 0x5A, cp.uint8)
                run_dense(p, a, gstruct); run_small(p, b, gstruct)
                diff = int(cp.count_nonzero(a != b))
                assert diff == 0, f"{border} {name} py {py} by {by}: {diff} bytes differ"
            for (w, h) in odd_sizes:
                pitch = (w + 3) // 4 * 4
                src = cp.asarray(rng.integers(0, 256, (h, pitch), dtype=np.uint8))
                go = g.copy()
                go["width"], go["height"], go["src_pitch"], go["dst_pitch"] = w, h, pitch, pitch
                a = cp.full((h, pitch), 0xA5, cp.uint8); b = cp.full((h, pitch), 0xA5, cp.uint8)
                dense_grid = ((w + 127) // 128, (h + 31) // 32, 1)
                mod.get_function("convolve_dense")(dense_grid, (32, 8, 1), (src, a, go[()]),
                                                   shared_mem=(32 * 4 - 4 + 4 * 3) * (8 * 4 + 2) * 4)
                mod.get_function("convolve_small3")(((w + 127) // 128, (h + by * py - 1) // (by * py), 1), (32, by, 1),
                                                    (src, b, go[()]))
                diff = int(cp.count_nonzero(a != b))
                assert diff == 0, f"{border} {name} {w}x{h}: {diff} bytes differ"
        if border == "BORDER_REFLECT":
            set_taps(mod, masks["LoG-like floats, divisor 1, bias 0.5"][0], 1.0)
            g["bias"] = 0.5
            gstruct = g[()]
            out = cp.empty((H, W), cp.uint8)
            d = timed(run_dense, planes, out, gstruct)
            s = timed(run_small, planes, out, gstruct)
            print(json.dumps({"small py": py, "small block_y": by, "dense us": round(d[0], 2),
                              "dense queued us": round(d[1], 2), "small3 us": round(s[0], 2),
                              "small3 queued us": round(s[1], 2)}))
    print(json.dumps({"checked": f"py {py} by {by}: every byte equal under 5 borders, 2 masks, 4 planes and 4 other sizes"}))
