// 2D convolution of 8- to 16-bit planes: a shared-memory tiled kernel for dense masks, a fused
// separable kernel for rank-one masks, and the textbook global-memory kernel kept as the
// baseline the benchmark compares against. See convolve.cuh for the defines and the
// arithmetic contract.

#include "convolve.cuh"

// One word of the shared tile: source samples c..c+3 of row `r` (mapped row `y`), converted
// to floats. `fast`: the row is inside the plane and its 4-sample groups are aligned, so a
// group wholly inside the row is one aligned load (32 bits of 8-bit samples, 64 bits of
// 16-bit ones); anything else (and a source whose pixels are apart) goes sample by sample.
__device__ __forceinline__ void load_word(float* __restrict__ trow, const unsigned char* __restrict__ src,
                                          const PlaneGeometry& g, bool fast, int y, int row, int c, int w,
                                          int row_samples) {
    float4 f;
    if (fast && c >= 0 && c + 3 < row_samples) {
#if SAMPLE_FLOAT == 32
        f = *reinterpret_cast<const float4*>(sample_row(src, g.src_pitch, y) + c);
#elif SAMPLE_FLOAT == 16
        const uint2 v = *reinterpret_cast<const uint2*>(sample_row(src, g.src_pitch, y) + c);
        f = make_float4(sample_value((sample_t)(v.x & 0xffffu)), sample_value((sample_t)(v.x >> 16)),
                        sample_value((sample_t)(v.y & 0xffffu)), sample_value((sample_t)(v.y >> 16)));
#elif SAMPLE_BITS > 8
        const uint2 v = *reinterpret_cast<const uint2*>(sample_row(src, g.src_pitch, y) + c);
        f = make_float4((float)((v.x & 0xffffu) >> SAMPLE_SHIFT), (float)((v.x >> 16) >> SAMPLE_SHIFT),
                        (float)((v.y & 0xffffu) >> SAMPLE_SHIFT), (float)((v.y >> 16) >> SAMPLE_SHIFT));
#else
        const unsigned int v = *reinterpret_cast<const unsigned int*>(sample_row(src, g.src_pitch, y) + c);
        f = make_float4((float)(v & 0xffu), (float)((v >> 8) & 0xffu), (float)((v >> 16) & 0xffu), (float)(v >> 24));
#endif
    } else {
        f = make_float4(sample(src, g, row, c), sample(src, g, row, c + 1), sample(src, g, row, c + 2),
                        sample(src, g, row, c + 3));
    }
    reinterpret_cast<float4*>(trow)[w] = f;
}

// Fills the shared tile (SHARED_H rows of SHARED_PITCH floats) with the source window whose
// top-left sample is (row0, col0 - SHIFT), border mode applied. The block's threads walk the
// tile two words at a time, word w and word w + ROW_HALF of a row, so the row arithmetic is
// paid once per two words while a warp still reads 128 contiguous bytes and writes 512
// contiguous bytes of shared memory per access. Words that cross the plane's edge, and
// planes whose rows are not aligned to 4 samples, take the per-sample path.
#define ROW_HALF ((ROW_WORDS + 1) / 2)
__device__ __forceinline__ void load_tile(float* __restrict__ tile, const unsigned char* __restrict__ src,
                                          const PlaneGeometry& g, int row0, int col0) {
    const int row_samples = g.width * CH;
    const int first = col0 - SHIFT;
    // Pixels apart (a strided view) are read sample by sample.
    const bool aligned = g.src_pixel == 0 && ((((size_t)src) | (size_t)g.src_pitch) & (4 * SAMPLE_BYTES - 1)) == 0;
    for (int i = threadIdx.y * BLOCK_X + threadIdx.x; i < SHARED_H * ROW_HALF; i += BLOCK_X * BLOCK_Y) {
        const int r = i / ROW_HALF;
        const int w = i - r * ROW_HALF;
        const int y = map_index(row0 + r, g.height);
        const bool fast = aligned && y >= 0;
        float* trow = tile + r * SHARED_PITCH;
        load_word(trow, src, g, fast, y, row0 + r, first + 4 * w, w, row_samples);
        if (w + ROW_HALF < ROW_WORDS) {
            load_word(trow, src, g, fast, y, row0 + r, first + 4 * (w + ROW_HALF), w + ROW_HALF, row_samples);
        }
    }
}

#if SAMPLE_FLOAT == 32
// Four float results, each divided and + bias, as `to_sample` makes it.
__device__ __forceinline__ float4 pack_samples(float s0, float s1, float s2, float s3, float bias) {
    return make_float4(to_sample(s0, bias), to_sample(s1, bias), to_sample(s2, bias), to_sample(s3, bias));
}
#elif SAMPLE_FLOAT == 16 || SAMPLE_BITS > 8
// Four results as two words of 16-bit samples (or float16 values), each made as `to_sample` makes it.
__device__ __forceinline__ uint2 pack_samples(float s0, float s1, float s2, float s3, float bias) {
    return make_uint2((unsigned int)to_sample(s0, bias) | ((unsigned int)to_sample(s1, bias) << 16),
                      (unsigned int)to_sample(s2, bias) | ((unsigned int)to_sample(s3, bias) << 16));
}
#else
// Four results as one word of pixels: each rounded as `to_sample` does, then packed with
// saturation to 0..255 (two `cvt.pack.sat` instructions instead of a clamp per pixel).
__device__ __forceinline__ unsigned int pack_samples(float s0, float s1, float s2, float s3, float bias) {
#ifdef FFMPEG_RDIV_BITS
    const int p0 = ffmpeg_rounded(s0, bias);
    const int p1 = ffmpeg_rounded(s1, bias);
    const int p2 = ffmpeg_rounded(s2, bias);
    const int p3 = ffmpeg_rounded(s3, bias);
#else
    const int p0 = __float2int_rz(roundf(divided_plus_bias(s0, bias)));
    const int p1 = __float2int_rz(roundf(divided_plus_bias(s1, bias)));
    const int p2 = __float2int_rz(roundf(divided_plus_bias(s2, bias)));
    const int p3 = __float2int_rz(roundf(divided_plus_bias(s3, bias)));
#endif
    unsigned int high, word;
    // d = sat(b) | sat(a) << 8 | c << 16
    asm("cvt.pack.sat.u8.s32.b32 %0, %1, %2, %3;" : "=r"(high) : "r"(p3), "r"(p2), "r"(0u));
    asm("cvt.pack.sat.u8.s32.b32 %0, %1, %2, %3;" : "=r"(word) : "r"(p1), "r"(p0), "r"(high));
    return word;
}
#endif
#if SAMPLE_FLOAT == 32
typedef float4 sample_quad;
#elif SAMPLE_FLOAT == 16 || SAMPLE_BITS > 8
typedef uint2 sample_quad;
#else
typedef unsigned int sample_quad;
#endif

// Writes one row of a thread's PX outputs, four samples at a time where aligned and inside
// the plane (INTERIOR: the caller knows they are).
template <bool INTERIOR>
__device__ __forceinline__ void store_row(unsigned char* __restrict__ dst, const PlaneGeometry& g,
                                          const float (&acc)[PX], int row, int col) {
    const int row_samples = g.width * CH;
    sample_t* out = sample_row(dst, g.dst_pitch, row) + col;
#pragma unroll
    for (int q = 0; q < PX; q += 4) {
        const bool whole =
            INTERIOR || (col + q + 3 < row_samples && (((size_t)(out + q)) & (4 * SAMPLE_BYTES - 1)) == 0);
        if (whole) {
            *reinterpret_cast<sample_quad*>(out + q) = pack_samples(acc[q], acc[q + 1], acc[q + 2], acc[q + 3], g.bias);
        } else {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                if (col + q + e < row_samples) out[q + e] = to_sample(acc[q + e], g.bias);
            }
        }
    }
}

// Writes a thread's PY x PX outputs.
__device__ __forceinline__ void store_outputs(unsigned char* __restrict__ dst, const PlaneGeometry& g,
                                              const float (&acc)[PY][PX], int row, int col) {
#pragma unroll
    for (int py = 0; py < PY; ++py) {
        if (row + py >= g.height) return;
        store_row<false>(dst, g, acc[py], row + py, col);
    }
}

#define KERNEL_BOUNDS __launch_bounds__(BLOCK_X* BLOCK_Y)

// Dense masks. Each block filters a TILE_W x TILE_H tile; each thread PY rows of PX adjacent
// outputs. Looping over the tile rows a thread needs (not over mask rows) lets one window of
// shared values feed every output row it touches, while each output still adds its taps mask
// row by mask row: for output row py, tile row r carries mask row r - py.
extern "C" __global__ void KERNEL_BOUNDS
    convolve_dense(const unsigned char* __restrict__ src, unsigned char* __restrict__ dst, PlaneGeometry g) {
    BATCH_PLANE(src, dst, g);
    extern __shared__ float4 shared_raw[];
    float* tile = reinterpret_cast<float*>(shared_raw);
    const int tile_row = blockIdx.y * TILE_H;
    const int tile_col = blockIdx.x * TILE_W;
    load_tile(tile, src, g, tile_row - MASK_H / 2, tile_col - (MASK_W / 2) * CH);
    __syncthreads();

    const int r0 = threadIdx.y * PY;
    const int c0 = threadIdx.x * PX;
    float acc[PY][PX];
    zero_accumulators(acc);
#if MAGNITUDE
    float second[PY][PX];
    zero_accumulators(second);
#endif

    UNROLL_MASK_ROWS
    for (int r = 0; r < PY + MASK_H - 1; ++r) {
        float v[4 * V_VEC];
        load_window(v, tile + (r0 + r) * SHARED_PITCH + c0);
#pragma unroll
        for (int py = 0; py < PY; ++py) {
            const int i = r - py;
            if (i >= 0 && i < MASK_H) {
                accumulate_taps(acc[py], c_taps + i * MASK_W, v);
#if MAGNITUDE
                accumulate_taps(second[py], SECOND_TAPS + i * MASK_W, v);
#endif
            }
        }
    }
#if MAGNITUDE
#pragma unroll
    for (int py = 0; py < PY; ++py) {
#pragma unroll
        for (int px = 0; px < PX; ++px) acc[py][px] = magnitude(acc[py][px], second[py][px]);
    }
#endif
    store_outputs(dst, g, acc, tile_row + r0, tile_col + c0);
}

// Rank-one masks, both passes fused in shared memory: the row pass turns the loaded tile
// (with its vertical halo) into f32 row sums, the column pass sums those. Row taps follow
// the dense taps in c_taps (see convolve.cuh).
//
// The row pass computes ROW_PX adjacent samples a thread: PX * CH where the tile holds whole
// chunks of that width, else PX. A window of ROW_PX samples needs (MASK_W - 1) * CH more, so
// for interleaved pixels (CH > 1) PX outputs would read 1 + (MASK_W - 1) * CH / PX shared
// values each (10 for a 13-tap row of RGB); PX * CH outputs read about as many as a plane's.
#if TILE_W % (PX * CH) == 0
#define ROW_PX (PX * CH)
#else
#define ROW_PX PX
#endif
#define ROW_CHUNKS (TILE_W / ROW_PX)
#define ROW_V_VEC ((SHIFT + ROW_PX + HALO_W + 3) / 4)
extern "C" __global__ void KERNEL_BOUNDS
    convolve_separable(const unsigned char* __restrict__ src, unsigned char* __restrict__ dst, PlaneGeometry g) {
    BATCH_PLANE(src, dst, g);
    extern __shared__ float4 shared_raw[];
    float* tile = reinterpret_cast<float*>(shared_raw);
    float* rows = tile + SHARED_H * SHARED_PITCH;  // SHARED_H x TILE_W row sums
    const int tile_row = blockIdx.y * TILE_H;
    const int tile_col = blockIdx.x * TILE_W;
    load_tile(tile, src, g, tile_row - MASK_H / 2, tile_col - (MASK_W / 2) * CH);
    __syncthreads();

    const int c0 = threadIdx.x * PX;
    const float* row_taps = c_taps + MASK_W * MASK_H;
    const float* col_taps = row_taps + MASK_W;
    // The row pass, in chunks of ROW_PX samples handed out over the whole block.
    for (int i = threadIdx.y * BLOCK_X + threadIdx.x; i < SHARED_H * ROW_CHUNKS; i += BLOCK_X * BLOCK_Y) {
        const int r = i / ROW_CHUNKS;
        const int c = (i - r * ROW_CHUNKS) * ROW_PX;
        float v[4 * ROW_V_VEC];
        unpack_float4s<ROW_V_VEC>(v, reinterpret_cast<const float4*>(tile + r * SHARED_PITCH + c));
        float sum[ROW_PX];
#pragma unroll
        for (int k = 0; k < ROW_PX; ++k) sum[k] = 0.0f;
#pragma unroll
        for (int j = 0; j < MASK_W; ++j) {
            const float t = row_taps[j];
#pragma unroll
            for (int k = 0; k < ROW_PX; ++k) sum[k] = fmaf(t, v[SHIFT + k + j * CH], sum[k]);
        }
        float4* out = reinterpret_cast<float4*>(rows + r * TILE_W + c);
#pragma unroll
        for (int q = 0; q < ROW_PX / 4; ++q) out[q] = make_float4(sum[4 * q], sum[4 * q + 1], sum[4 * q + 2], sum[4 * q + 3]);
    }
    __syncthreads();

    const int r0 = threadIdx.y * PY;
    float acc[PY][PX];
    zero_accumulators(acc);
    UNROLL_MASK_ROWS
    for (int r = 0; r < PY + MASK_H - 1; ++r) {
        float m[PX];
        unpack_float4s<PX / 4>(m, reinterpret_cast<const float4*>(rows + (r0 + r) * TILE_W + c0));
#pragma unroll
        for (int py = 0; py < PY; ++py) {
            const int i = r - py;
            if (i >= 0 && i < MASK_H) {
                const float t = col_taps[i];
#pragma unroll
                for (int px = 0; px < PX; ++px) acc[py][px] = fmaf(t, m[px], acc[py][px]);
            }
        }
    }
    store_outputs(dst, g, acc, tile_row + r0, tile_col + c0);
}

// The textbook kernel: one thread per output sample, every tap read from global memory with
// the border applied. Kept as the baseline; it shares the arithmetic, so its output is
// identical to the other kernels'.
extern "C" __global__ void convolve_global(const unsigned char* __restrict__ src, unsigned char* __restrict__ dst,
                                           PlaneGeometry g) {
    BATCH_PLANE(src, dst, g);
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (col >= g.width * CH || row >= g.height) return;
    float acc = 0.0f;
#if MAGNITUDE
    float second = 0.0f;
#endif
    for (int i = 0; i < MASK_H; ++i) {
        for (int j = 0; j < MASK_W; ++j) {
            const float s = sample(src, g, row + i - MASK_H / 2, col + (j - MASK_W / 2) * CH);
            acc = fmaf(c_taps[i * MASK_W + j], s, acc);
#if MAGNITUDE
            second = fmaf(SECOND_TAPS[i * MASK_W + j], s, second);
#endif
        }
    }
#if MAGNITUDE
    acc = magnitude(acc, second);
#endif
    sample_row(dst, g.dst_pitch, row)[col] = to_sample(acc, g.bias);
}
