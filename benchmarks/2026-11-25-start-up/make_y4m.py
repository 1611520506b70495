"""A moving, textured y4m clip (zone plate drifting over gradients, with noise): OUT W H FRAMES."""
import sys
import numpy as np
path, w, h, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
y, x = np.mgrid[0:h, 0:w].astype(np.float32)
rng = np.random.default_rng(7)
noise = rng.normal(0, 6, (4, h, w)).astype(np.float32)
with open(path, "wb") as f:
    f.write(f"YUV4MPEG2 W{w} H{h} F25:1 Ip A1:1 C420jpeg\n".encode())
    for i in range(n):
        plate = 127 + 100 * np.sin(((x - w / 2 + 4 * i) ** 2 + (y - h / 2) ** 2) / 4000.0 + i * 0.15)
        luma = np.clip(0.6 * plate + 0.4 * ((x + 3 * i) % 256) + noise[i % 4], 0, 255).astype(np.uint8)
        u = np.clip(128 + 40 * np.sin(x[::2, ::2] / 50.0 + i * 0.1), 0, 255).astype(np.uint8)
        v = np.clip(128 + 40 * np.cos(y[::2, ::2] / 40.0 + i * 0.1), 0, 255).astype(np.uint8)
        f.write(b"FRAME\n"); f.write(luma.tobytes()); f.write(u.tobytes()); f.write(v.tobytes())
