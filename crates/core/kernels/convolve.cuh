// Shared definitions of the convolution kernels: the parameter struct (mirrored in Rust by
// `engine::cuda::kernels::PlaneGeometry`), border handling, the final pixel step, and the
// tiled kernels' tile geometry and common steps (window loads, accumulators, tap sums).
//
// Every kernel is specialised at compile time by these defines (set by the engine):
//   MASK_W, MASK_H   mask size (odd, 1..=63)
//   CH               interleaved channels per pixel (1 planar, 2 NV12 UV, 3 packed RGB)
//   BORDER           one of the BORDER_* values below
//   PX, PY           outputs per thread in x (bytes) and y (register blocking)
//   BLOCK_X, BLOCK_Y threads per block
//   UNROLL_ROWS      1 to unroll the loop over mask rows fully, 0 to keep it rolled
//   MAGNITUDE        1 for a gradient magnitude: two masks, sqrt(a^2 + b^2) (default 0)
//   SAMPLE_BITS      significant bits per sample, 8 (one byte) or 9..16 (a little-endian
//                    16-bit word) (default 8)
//   SAMPLE_SHIFT     how far those bits sit from the word's low end: 6 for P010 (default 0)
//   SAMPLE_FLOAT     0 for integer samples (default), 32 for float32 values, 16 for float16
//                    values: read as floats and written as the float sum / DIVISOR + bias, unrounded
//                    and unclamped (float16 results rounded to nearest even once)
//
// Columns are counted in samples (pixel * CH + channel), pitches in bytes.
//
//   FFMPEG_RDIV_BITS the bits of an f32 rdiv: FFmpeg's final step instead (see ffmpeg_rounded)
//
// Arithmetic contract (identical to the CPU engine): f32 sums with fmaf, taps added mask row
// by mask row, left to right; separable masks add the row pass first, then the column pass
// over its f32 results; then / DIVISOR (an integer mask's taps are its whole numbers and the
// divisor is applied here, by one IEEE division, so exact halves stay exact; 1 otherwise),
// + bias (already scaled to the depth by the host), round half away from zero, clamp to
// 0..2^SAMPLE_BITS - 1. A gradient magnitude sums both masks that way into a and b, then
// takes __fsqrt_rn(fmaf(a, a, b * b)) (each step rounded once, never contracted further)
// before the division and the bias.

#pragma once

#define BORDER_CONSTANT 0
#define BORDER_NEAREST 1
#define BORDER_REFLECT 2
#define BORDER_MIRROR 3
#define BORDER_WRAP 4
#define BORDER_FFMPEG 5

#ifndef MAGNITUDE
#define MAGNITUDE 0
#endif
#ifndef SAMPLE_BITS
#define SAMPLE_BITS 8
#endif
#ifndef SAMPLE_SHIFT
#define SAMPLE_SHIFT 0
#endif
#ifndef SAMPLE_FLOAT
#define SAMPLE_FLOAT 0
#endif

#if SAMPLE_FLOAT == 32
typedef float sample_t;
#elif SAMPLE_FLOAT == 16
typedef unsigned short sample_t;  // the half's bits; converted with cvt, no header needed
#elif SAMPLE_BITS > 8
typedef unsigned short sample_t;
#else
typedef unsigned char sample_t;
#endif
#define SAMPLE_BYTES ((int)sizeof(sample_t))
#define MAX_SAMPLE ((1 << SAMPLE_BITS) - 1)

// Row `y` of a plane whose rows are `pitch` bytes apart, as samples.
__device__ __forceinline__ const sample_t* sample_row(const unsigned char* base, int pitch, int y) {
    return reinterpret_cast<const sample_t*>(base + (size_t)y * pitch);
}
__device__ __forceinline__ sample_t* sample_row(unsigned char* base, int pitch, int y) {
    return reinterpret_cast<sample_t*>(base + (size_t)y * pitch);
}

// Correlation taps (the mask rotated by 180 degrees), row-major, then the separable row
// taps and column taps (zero for masks that are not separable), then, for a gradient
// magnitude, the second mask's correlation taps, then the divisor every sum is divided by.
// One module holds all three kernels of a variant, so the baseline and the tiled kernels
// read the same taps.
__constant__ float c_taps[MASK_W * MASK_H * (1 + MAGNITUDE) + MASK_W + MASK_H + 1];
#define SECOND_TAPS (c_taps + MASK_W * MASK_H + MASK_W + MASK_H)
#define DIVISOR (c_taps[MASK_W * MASK_H * (1 + MAGNITUDE) + MASK_W + MASK_H])

// The gradient magnitude of the two sums, rounded as the CPU engine rounds it.
__device__ __forceinline__ float magnitude(float a, float b) {
    return __fsqrt_rn(__fmaf_rn(a, a, __fmul_rn(b, b)));
}

struct PlaneGeometry {
    int width;      // pixels
    int height;     // rows
    int src_pitch;  // bytes between source rows
    int dst_pitch;  // bytes between output rows
    int src_pixel;  // bytes between source pixels (a strided view); 0: CH samples side by side
    float bias;     // in sample units (the mask's 8-bit bias times 2^(SAMPLE_BITS - 8))
    long long src_plane;  // bytes between the source planes of a batch (blockIdx.z)
    long long dst_plane;  // bytes between the output planes of a batch
};

// A batch launch (gridDim.z planes) moves each block to its own plane's source and output;
// put first in every kernel (one plane: blockIdx.z is 0).
#define BATCH_PLANE(src, dst, g)                    \
    src += (long long)blockIdx.z * (g).src_plane; \
    dst += (long long)blockIdx.z * (g).dst_plane

// A stored sample as the float the sums take: an integer sample's significant bits, or a
// float value as it is.
__device__ __forceinline__ float sample_value(sample_t s) {
#if SAMPLE_FLOAT == 32
    return s;
#elif SAMPLE_FLOAT == 16
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(s));
    return f;
#else
    return (float)(s >> SAMPLE_SHIFT);
#endif
}

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
#elif BORDER == BORDER_FFMPEG
    // FFmpeg's 3x3 rule (the host gives other mask sizes BORDER_MIRROR): mirror before the
    // start, reflect past the end, as `map_index` takes each further out.
    if (i < 0) {
        if (n == 1) return 0;
        const int period = 2 * n - 2;
        int m = i % period;
        if (m < 0) m += period;
        return m < n ? m : period - m;
    }
    const int period = 2 * n;
    const int m = i % period;
    return m < n ? m : period - 1 - m;
#else
#error "unknown BORDER"
#endif
}

// Reads sample column `col` (pixel * CH + channel, possibly outside the row) of row `row`
// (possibly outside the plane), applying the border mode to the pixel index.
__device__ __forceinline__ float sample(const unsigned char* __restrict__ src, const PlaneGeometry& g, int row,
                                        int col) {
    const int y = map_index(row, g.height);
    // floor division, so that channel stays in 0..CH-1 left of the plane
    const int pixel = col >= 0 ? col / CH : -((-col + CH - 1) / CH);
    const int channel = col - pixel * CH;
    const int x = map_index(pixel, g.width);
    if (y < 0 || x < 0) return 0.0f;
    if (g.src_pixel == 0) return sample_value(sample_row(src, g.src_pitch, y)[x * CH + channel]);
    const unsigned char* at = src + (size_t)y * g.src_pitch + (size_t)x * g.src_pixel + channel * SAMPLE_BYTES;
    return sample_value(*reinterpret_cast<const sample_t*>(at));
}

#ifdef FFMPEG_RDIV_BITS
// FFmpeg's arithmetic (a mask's `rdiv`): `(int)(sum * rdiv + bias + 0.5f)` as its
// `convolution` filter computes it, each operation rounded once (never fused into an FMA),
// truncated toward zero. The sums of whole-number taps are exact, so this is FFmpeg's result.
__device__ __forceinline__ int ffmpeg_rounded(float sum, float bias) {
    return __float2int_rz(__fadd_rn(__fadd_rn(__fmul_rn(sum, __uint_as_float(FFMPEG_RDIV_BITS)), bias), 0.5f));
}
#endif

// A sum divided by the divisor (one IEEE division, skipped for 1, which changes nothing)
// plus the bias: what is rounded to a sample.
__device__ __forceinline__ float divided_plus_bias(float sum, float bias) {
    const float divisor = DIVISOR;
    return __fadd_rn(divisor == 1.0f ? sum : __fdiv_rn(sum, divisor), bias);
}

// The final step: / divisor, + bias, round half away from zero, clamp, shift into place.
// Float values keep the divided sum + bias as it is (float16 rounded to nearest even);
// FFmpeg's arithmetic (`rdiv`, whose divisor is 1) rounds as FFmpeg does.
__device__ __forceinline__ sample_t to_sample(float sum, float bias) {
#if SAMPLE_FLOAT == 32
    return divided_plus_bias(sum, bias);
#elif SAMPLE_FLOAT == 16
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(divided_plus_bias(sum, bias)));
    return h;
#elif defined(FFMPEG_RDIV_BITS)
    const int p = ffmpeg_rounded(sum, bias);
    return (sample_t)((unsigned int)(p < 0 ? 0 : p > MAX_SAMPLE ? MAX_SAMPLE : p) << SAMPLE_SHIFT);
#else
    const unsigned int v = (unsigned int)fminf(fmaxf(roundf(divided_plus_bias(sum, bias)), 0.0f), (float)MAX_SAMPLE);
    return (sample_t)(v << SAMPLE_SHIFT);
#endif
}

// Tile geometry shared by the tiled kernels and the host (which sizes shared memory).
#define TILE_W (BLOCK_X * PX)
#define TILE_H (BLOCK_Y * PY)
#define HALO_W ((MASK_W - 1) * CH)
#define HALO_H (MASK_H - 1)
#define SHARED_W (TILE_W + HALO_W)
#define SHARED_H (TILE_H + HALO_H)

// Shared tile rows start at the 4-sample-aligned source column at or before the left halo, so
// that every row is filled with aligned 4-sample loads (32 or 64 bits) and conflict-free
// float4 stores. Tile
// columns are multiples of 4, so that column sits SHIFT samples before the halo in every
// block; readers skip it with compile-time register indices.
#define HALO_LEFT ((MASK_W / 2) * CH)
#define SHIFT ((4 - HALO_LEFT % 4) % 4)
// Floats a thread reads from one tile row: the shift, its PX outputs and the horizontal
// halo, rounded up to whole float4 loads. Rows of the shared tile are padded so those loads
// stay inside; a row is SHARED_PITCH / 4 aligned words of the source.
#define V_LEN (SHIFT + PX + HALO_W)
#define V_VEC ((V_LEN + 3) / 4)
#define SHARED_PITCH (TILE_W - PX + 4 * V_VEC)
#define ROW_WORDS (SHARED_PITCH / 4)

#if PX % 4 != 0
#error "PX must be a multiple of 4 (float4 shared loads, 4-sample stores)"
#endif

// Unpacks N float4 loads from `src` into 4N floats, in order.
template <int N>
__device__ __forceinline__ void unpack_float4s(float (&v)[4 * N], const float4* src) {
#pragma unroll
    for (int q = 0; q < N; ++q) {
        const float4 f = src[q];
        v[4 * q] = f.x;
        v[4 * q + 1] = f.y;
        v[4 * q + 2] = f.z;
        v[4 * q + 3] = f.w;
    }
}

// Reads a thread's V_LEN floats of one shared row with float4 loads.
__device__ __forceinline__ void load_window(float (&v)[4 * V_VEC], const float* __restrict__ row) {
    unpack_float4s<V_VEC>(v, reinterpret_cast<const float4*>(row));
}

// Zeroes a thread's accumulators: one row of PX outputs, or PY rows of them.
__device__ __forceinline__ void zero_row(float (&row)[PX]) {
#pragma unroll
    for (int px = 0; px < PX; ++px) row[px] = 0.0f;
}

__device__ __forceinline__ void zero_accumulators(float (&acc)[PY][PX]) {
#pragma unroll
    for (int py = 0; py < PY; ++py) zero_row(acc[py]);
}

// Adds one mask row's MASK_W taps, left to right, to a row of PX outputs whose window `v`
// holds from index OFF on: sum[px] = fmaf(taps[j], v[OFF + px + j * CH], sum[px]).
template <int OFF, int N>
__device__ __forceinline__ void accumulate_at(float (&sum)[PX], const float* taps, const float (&v)[N]) {
#pragma unroll
    for (int j = 0; j < MASK_W; ++j) {
        const float t = taps[j];
#pragma unroll
        for (int px = 0; px < PX; ++px) sum[px] = fmaf(t, v[OFF + px + j * CH], sum[px]);
    }
}

// The same for a window from load_window (its first SHIFT floats skipped).
__device__ __forceinline__ void accumulate_taps(float (&sum)[PX], const float* taps, const float (&v)[4 * V_VEC]) {
    accumulate_at<SHIFT>(sum, taps, v);
}

// Put before a loop over the rows a thread needs (PY + MASK_H - 1): unrolled fully, or kept
// rolled for tall masks (UNROLL_ROWS) to bound code size.
#if UNROLL_ROWS
#define UNROLL_MASK_ROWS _Pragma("unroll")
#else
#define UNROLL_MASK_ROWS _Pragma("unroll 1")
#endif
