"""Fixed costs of CUDA start-up pieces, timed with ctypes (one process each run)."""
import ctypes, time, sys
t = time.perf_counter
def ms(a, b): return round((b - a) * 1e3, 2)
r = {}
a = t(); cu = ctypes.CDLL("libcuda.so.1"); b = t(); r["dlopen libcuda"] = ms(a, b)
a = t(); assert cu.cuInit(0) == 0; b = t(); r["cuInit"] = ms(a, b)
dev = ctypes.c_int(); cu.cuDeviceGet(ctypes.byref(dev), 0)
ctx = ctypes.c_void_p()
a = t(); assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0; b = t(); r["primary ctx retain"] = ms(a, b)
a = t(); assert cu.cuCtxSetCurrent(ctx) == 0; free_ = ctypes.c_size_t(); tot = ctypes.c_size_t(); cu.cuMemGetInfo_v2(ctypes.byref(free_), ctypes.byref(tot)); b = t(); r["set current + meminfo (first use)"] = ms(a, b)
ctx2 = ctypes.c_void_p()
a = t(); cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx2), dev); b = t(); r["second retain"] = ms(a, b)
import glob
a = t(); nv = ctypes.CDLL(sys.argv[1] if len(sys.argv) > 1 else "libnvrtc.so.13"); b = t(); r["dlopen libnvrtc"] = ms(a, b)
mj = ctypes.c_int(); mn = ctypes.c_int(); a = t(); nv.nvrtcVersion(ctypes.byref(mj), ctypes.byref(mn)); b = t(); r["nvrtcVersion"] = ms(a, b)
for mb in (3, 12, 100):
    p = ctypes.c_void_p()
    a = t(); assert cu.cuMemHostAlloc(ctypes.byref(p), ctypes.c_size_t(mb << 20), 0) == 0; b = t(); r[f"cuMemHostAlloc {mb} MB"] = ms(a, b)
    d = ctypes.c_uint64()
    a = t(); assert cu.cuMemAlloc_v2(ctypes.byref(d), ctypes.c_size_t(mb << 20)) == 0; b = t(); r[f"cuMemAlloc {mb} MB"] = ms(a, b)
s = ctypes.c_void_p(); a = t(); cu.cuStreamCreate(ctypes.byref(s), 1); b = t(); r["cuStreamCreate"] = ms(a, b)
nvc = None
try:
    nvc = ctypes.CDLL("libnvcuvid.so.1")
    a = t(); lk = ctypes.c_void_p(); b = t()
except OSError as e:
    r["nvcuvid"] = str(e)
for k, v in r.items(): print(f"{k}: {v}")
