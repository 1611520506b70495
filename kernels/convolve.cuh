// Shared definitions of the convolution kernels: the parameter struct (mirrored in Rust by
// `engine::cuda::kernels::PlaneGeometry`), border handling and the final pixel step.
//
// Every kernel is specialised at compile time by these defines (set by the engine):
//   MASK_W, MASK_H   mask size (odd, 1..=63)
//   CH               interleaved channels per pixel (1 planar, 2 NV12 UV, 3 packed RGB)
//   BORDER           one of the BORDER_* values below
//   PX, PY           outputs per thread in x (bytes) and y (register blocking)
//   BLOCK_X, BLOCK_Y threads per block
//   UNROLL_ROWS      1 to unroll the loop over mask rows fully, 0 to keep it rolled
//
// Arithmetic contract (identical to the CPU engine): f32 sums with fmaf, taps added mask row
// by mask row, left to right; separable masks add the row pass first, then the column pass
// over its f32 results; then + bias, round half away from zero, clamp to 0..255.

#pragma once

#define BORDER_CONSTANT 0
#define BORDER_NEAREST 1
#define BORDER_REFLECT 2
#define BORDER_MIRROR 3
#define BORDER_WRAP 4

// Correlation taps (the mask rotated by 180 degrees), row-major, then the separable row
// taps and column taps (zero for masks that are not separable). One module holds all three
// kernels of a variant, so the baseline and the tiled kernels read the same taps.
__constant__ float c_taps[MASK_W * MASK_H + MASK_W + MASK_H];

struct PlaneGeometry {
    int width;      // pixels
    int height;     // rows
    int src_pitch;  // bytes between source rows
    int dst_pitch;  // bytes between output rows
    float bias;
};

// Maps an index outside 0..n-1 onto the plane as SciPy does; -1 means "the constant 0".
__device__ __forceinline__ int map_index(int i, int n) {
    if (i >= 0 && i < n) return i;
#if BORDER == BORDER_CONSTANT
    return -1;
#elif BORDER == BORDER_NEAREST
    return i < 0 ? 0 : n - 1;
#elif BORDER == BORDER_REFLECT
    const int period = 2 * n;
    int m = i % period;
    if (m < 0) m += period;
    return m < n ? m : period - 1 - m;
#elif BORDER == BORDER_MIRROR
    if (n == 1) return 0;
    const int period = 2 * n - 2;
    int m = i % period;
    if (m < 0) m += period;
    return m < n ? m : period - m;
#elif BORDER == BORDER_WRAP
    int m = i % n;
    return m < 0 ? m + n : m;
#else
#error "unknown BORDER"
#endif
}

// Reads byte column `col` (pixel * CH + channel, possibly outside the row) of row `row`
// (possibly outside the plane), applying the border mode to the pixel index.
__device__ __forceinline__ float sample(const unsigned char* __restrict__ src, const PlaneGeometry& g, int row,
                                        int col) {
    const int y = map_index(row, g.height);
    // floor division, so that channel stays in 0..CH-1 left of the plane
    const int pixel = col >= 0 ? col / CH : -((-col + CH - 1) / CH);
    const int channel = col - pixel * CH;
    const int x = map_index(pixel, g.width);
    if (y < 0 || x < 0) return 0.0f;
    return (float)src[(size_t)y * g.src_pitch + x * CH + channel];
}

__device__ __forceinline__ unsigned char to_pixel(float sum, float bias) {
    return (unsigned char)fminf(fmaxf(roundf(sum + bias), 0.0f), 255.0f);
}

// Tile geometry shared by the tiled kernels and the host (which sizes shared memory).
#define TILE_W (BLOCK_X * PX)
#define TILE_H (BLOCK_Y * PY)
#define HALO_W ((MASK_W - 1) * CH)
#define HALO_H (MASK_H - 1)
#define SHARED_W (TILE_W + HALO_W)
#define SHARED_H (TILE_H + HALO_H)
