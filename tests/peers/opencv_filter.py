#!/usr/bin/env python3
"""OpenCV as the peer of convstream's mask conventions (tests/it/peers.rs runs it).

Filters every plane of an 8-bit YUV4MPEG2 file (4:2:0 or mono) with OpenCV and writes the
result as YUV4MPEG2 with the same header:

    opencv_filter.py IN OUT filter2d KERNEL_JSON BORDER   # cv2.filter2D, kernel as written
    opencv_filter.py IN OUT gaussian SIZE                 # cv2.GaussianBlur((SIZE, SIZE), 0)
    opencv_filter.py IN OUT gaussian-float SIZE           # the same on float32 planes, rounded

BORDER is an OpenCV border name: constant, replicate, reflect, reflect_101.
"""
import json
import sys

import cv2
import numpy as np

BORDERS = {
    "constant": cv2.BORDER_CONSTANT,
    "replicate": cv2.BORDER_REPLICATE,
    "reflect": cv2.BORDER_REFLECT,
    "reflect_101": cv2.BORDER_REFLECT_101,
}


def plane_sizes(header):
    fields = dict((field[0], field[1:]) for field in header.split()[1:])
    width, height = int(fields["W"]), int(fields["H"])
    colorspace = fields.get("C", "420jpeg")
    if colorspace.startswith("mono"):
        return [(height, width)]
    if not colorspace.startswith("420"):
        sys.exit(f"only 8-bit 4:2:0 or mono y4m, not C{colorspace}")
    chroma = ((height + 1) // 2, (width + 1) // 2)
    return [(height, width), chroma, chroma]


def main():
    source, target, operation = sys.argv[1:4]
    data = open(source, "rb").read()
    end = data.index(b"\n")
    header = data[:end].decode()
    sizes = plane_sizes(header)
    if operation == "filter2d":
        kernel = np.array(json.loads(sys.argv[4]), dtype=np.float64)
        border = BORDERS[sys.argv[5]]

        def apply(plane):
            return cv2.filter2D(plane, -1, kernel, borderType=border)

    elif operation == "gaussian":
        size = int(sys.argv[4])

        def apply(plane):
            return cv2.GaussianBlur(plane, (size, size), 0)

    elif operation == "gaussian-float":
        size = int(sys.argv[4])

        def apply(plane):
            blurred = cv2.GaussianBlur(plane.astype(np.float32), (size, size), 0)
            return np.clip(np.floor(blurred + 0.5), 0, 255).astype(np.uint8)

    else:
        sys.exit(f"unknown operation {operation}")
    out = [data[: end + 1]]
    at = end + 1
    while at < len(data):
        line_end = data.index(b"\n", at)
        out.append(data[at : line_end + 1])
        at = line_end + 1
        for height, width in sizes:
            plane = np.frombuffer(data[at : at + height * width], dtype=np.uint8).reshape(height, width)
            out.append(np.ascontiguousarray(apply(plane)).tobytes())
            at += height * width
    assert at == len(data), "a frame is cut short"
    open(target, "wb").write(b"".join(out))


if __name__ == "__main__":
    main()
