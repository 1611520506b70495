"""How long a CUDA process's exit takes, seen from its parent: the child makes a context (and
pinned blocks), optionally releases it first (timed), writes the time, exits; the parent notes
when wait() returns. Modes: none (no CUDA), exit, _exit, release (cuDevicePrimaryCtxRelease
then exit), reset (cuDevicePrimaryCtxReset then exit)."""
import ctypes, os, subprocess, sys, time
if len(sys.argv) > 1 and sys.argv[1] == "child":
    mode, blocks = sys.argv[2], int(sys.argv[3])
    t0 = time.time()
    released = 0.0
    if mode != "none":
        cu = ctypes.CDLL("libcuda.so.1")
        cu.cuInit(0)
        dev = ctypes.c_int(); cu.cuDeviceGet(ctypes.byref(dev), 0)
        ctx = ctypes.c_void_p(); cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev); cu.cuCtxSetCurrent(ctx)
        p = ctypes.c_void_p()
        for _ in range(blocks):
            cu.cuMemHostAlloc(ctypes.byref(p), ctypes.c_size_t(3 << 20), 0)
        setup = time.time() - t0
        r0 = time.time()
        if mode == "release":
            cu.cuDevicePrimaryCtxRelease(dev)
        elif mode == "reset":
            cu.cuDevicePrimaryCtxReset(dev)
        released = time.time() - r0
    else:
        setup = 0.0
    print(setup, released, time.time(), flush=True)
    os._exit(0) if mode == "_exit" else sys.exit(0)
for mode, blocks in [("none", 0), ("exit", 0), ("_exit", 0), ("release", 0), ("reset", 0), ("exit", 60), ("release", 60)] * 3:
    p = subprocess.Popen([sys.executable, __file__, "child", mode, str(blocks)], stdout=subprocess.PIPE)
    setup, released, before_exit = map(float, p.stdout.readline().split())
    p.wait()
    print(f"{mode:7} blocks={blocks:3} setup={setup:.3f}s release={released:.3f}s exit_seen_after={time.time() - before_exit:.3f}s")
