"""Process exit with a CUDA context: normal exit (the driver's atexit teardown) against _exit."""
import ctypes, os, sys, time
cu = ctypes.CDLL("libcuda.so.1")
cu.cuInit(0)
dev = ctypes.c_int(); cu.cuDeviceGet(ctypes.byref(dev), 0)
ctx = ctypes.c_void_p(); cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev); cu.cuCtxSetCurrent(ctx)
p = ctypes.c_void_p()
for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 0):
    cu.cuMemHostAlloc(ctypes.byref(p), ctypes.c_size_t(3 << 20), 0)
sys.stdout.flush()
if sys.argv[1] == "_exit":
    os._exit(0)
