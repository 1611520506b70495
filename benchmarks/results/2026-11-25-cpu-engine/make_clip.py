#!/usr/bin/env python3
"""A 1080p25 clip for the CPU engine's end-to-end comparison, made on the GPU host (which has
OpenCV but no FFmpeg libraries): moving, textured content (a zone plate drifting over
gradients, with noise) encoded as MPEG-4 Part 2 by OpenCV's FFmpeg, so that decoding is cheap
next to the filters being compared.

    make_clip.py OUT.mp4 FRAMES
"""
import sys

import cv2
import numpy as np


def main():
    path, frames = sys.argv[1], int(sys.argv[2])
    width, height = 1920, 1080
    writer = cv2.VideoWriter(path, cv2.VideoWriter_fourcc(*"mp4v"), 25, (width, height))
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    rng = np.random.default_rng(7)
    for index in range(frames):
        phase = index * 0.15
        plate = 127 + 100 * np.sin(((x - width / 2) ** 2 + (y - height / 2) ** 2) / 4000.0 + phase)
        ramp = (x + 3 * index) % 256
        noise = rng.normal(0, 6, (height, width))
        blue = np.clip(plate + noise, 0, 255)
        green = np.clip(0.5 * plate + 0.5 * ramp + noise, 0, 255)
        red = np.clip(ramp + noise, 0, 255)
        writer.write(np.dstack([blue, green, red]).astype(np.uint8))
    writer.release()


if __name__ == "__main__":
    main()
