// 2D convolution of 8- to 16-bit planes: a shared-memory tiled kernel for dense masks, a fused
// separable kernel for rank-one masks, and the textbook global-memory kernel kept as the
// baseline the benchmark compares against. See convolve.cuh for the defines and the
// arithmetic contract.

#include "convolve.cuh"

// Four adjacent samples as one aligned word: what the tile's fast loads read and the stores
// write.
#if SAMPLE_FLOAT == 32
typedef float4 sample_quad;
#elif SAMPLE_FLOAT == 16 || SAMPLE_BITS > 8
typedef uint2 sample_quad;
#else
typedef unsigned int sample_quad;
#endif

// A loaded word's four samples as the floats the sums take.
__device__ __forceinline__ float4 quad_values(sample_quad v) {
#if SAMPLE_FLOAT == 32
    return v;
#elif SAMPLE_FLOAT == 16
    return make_float4(sample_value((sample_t)(v.x & 0xffffu)), sample_value((sample_t)(v.x >> 16)),
                       sample_value((sample_t)(v.y & 0xffffu)), sample_value((sample_t)(v.y >> 16)));
#elif SAMPLE_BITS > 8
    return make_float4((float)((v.x & 0xffffu) >> SAMPLE_SHIFT), (float)((v.x >> 16) >> SAMPLE_SHIFT),
                       (float)((v.y & 0xffffu) >> SAMPLE_SHIFT), (float)((v.y >> 16) >> SAMPLE_SHIFT));
#else
    return make_float4((float)(v & 0xffu), (float)((v >> 8) & 0xffu), (float)((v >> 16) & 0xffu), (float)(v >> 24));
#endif
}

// Fills the shared tile (SHARED_H rows of SHARED_PITCH floats) with the source window whose
// top-left sample is (row0, col0 - SHIFT), border mode applied. The block's threads walk the
// tile two words at a time, word w and word w + ROW_HALF of a row, so that a warp reads 128
// contiguous bytes and writes 512 contiguous bytes of shared memory per access. A word of
// samples c..c+3 wholly inside a row of the plane, on a plane whose rows are aligned to 4
// samples, is one aligned load; anything else (the plane's edges, a source whose pixels are
// apart) goes sample by sample.
//
// Each thread issues the loads of FETCH_STEPS steps before it converts any of them: their
// round trips to memory overlap, where a load followed at once by its conversion would wait
// for each in turn (a block's tile is its only memory traffic before the sums, so those waits
// are most of a small mask's time).
#define ROW_HALF ((ROW_WORDS + 1) / 2)
// Whether samples c..c+3 of mapped row `y` (-1: outside the plane) are one aligned load.
__device__ __forceinline__ bool whole_word(bool aligned, int y, int c, int row_samples) {
    return aligned && y >= 0 && c >= 0 && c + 3 < row_samples;
}
#define TILE_THREADS (BLOCK_X * BLOCK_Y)
#define TILE_STEPS ((SHARED_H * ROW_HALF + TILE_THREADS - 1) / TILE_THREADS)
// About 16 registers of loaded words a thread: 8 steps of 8-bit samples, 4 of 16-bit, 2 of float.
#define MOST_FETCH_STEPS (8 / (int)(sizeof(sample_quad) / 4))
#define FETCH_STEPS (TILE_STEPS < MOST_FETCH_STEPS ? TILE_STEPS : MOST_FETCH_STEPS)
__device__ __forceinline__ void load_tile(float* __restrict__ tile, const unsigned char* __restrict__ src,
                                          const PlaneGeometry& g, int row0, int col0) {
    const int row_samples = g.width * CH;
    const int first = col0 - SHIFT;
    const bool aligned = g.src_pixel == 0 && ((((size_t)src) | (size_t)g.src_pitch) & (4 * SAMPLE_BYTES - 1)) == 0;
    const int thread = threadIdx.y * BLOCK_X + threadIdx.x;
#pragma unroll
    for (int step0 = 0; step0 < TILE_STEPS; step0 += FETCH_STEPS) {
        sample_quad loaded[FETCH_STEPS][2];
        int mapped[FETCH_STEPS];
#pragma unroll
        for (int s = 0; s < FETCH_STEPS; ++s) {
            const int i = thread + (step0 + s) * TILE_THREADS;
            mapped[s] = -1;
            if (step0 + s < TILE_STEPS && i < SHARED_H * ROW_HALF) {
                const int r = i / ROW_HALF;
                const int w = i - r * ROW_HALF;
                const int y = map_index(row0 + r, g.height);
                mapped[s] = y;
                const sample_t* row = sample_row(src, g.src_pitch, y < 0 ? 0 : y);
                const int c = first + 4 * w;
                if (whole_word(aligned, y, c, row_samples)) loaded[s][0] = *reinterpret_cast<const sample_quad*>(row + c);
                const int c1 = c + 4 * ROW_HALF;
                if (w + ROW_HALF < ROW_WORDS && whole_word(aligned, y, c1, row_samples)) loaded[s][1] = *reinterpret_cast<const sample_quad*>(row + c1);
            }
        }
#pragma unroll
        for (int s = 0; s < FETCH_STEPS; ++s) {
            const int i = thread + (step0 + s) * TILE_THREADS;
            if (step0 + s < TILE_STEPS && i < SHARED_H * ROW_HALF) {
                const int r = i / ROW_HALF;
                const int w = i - r * ROW_HALF;
                float4* trow = reinterpret_cast<float4*>(tile + r * SHARED_PITCH);
#pragma unroll
                for (int half = 0; half < 2; ++half) {
                    const int word = w + half * ROW_HALF;
                    const int c = first + 4 * word;
                    if (half == 0 || word < ROW_WORDS) {
                        trow[word] = whole_word(aligned, mapped[s], c, row_samples) ? quad_values(loaded[s][half])
                                                         : make_float4(sample(src, g, row0 + r, c),
                                                                       sample(src, g, row0 + r, c + 1),
                                                                       sample(src, g, row0 + r, c + 2),
                                                                       sample(src, g, row0 + r, c + 3));
                    }
                }
            }
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
