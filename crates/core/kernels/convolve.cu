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

#if !STREAM
#define KERNEL_BOUNDS __launch_bounds__(BLOCK_X* BLOCK_Y)
#endif

#if STREAM
// Streaming kernels for small masks: no shared memory and no barrier. Each thread computes
// PX adjacent samples on PY rows, walking down: it reads each source row once, as aligned
// 4-sample words (its PX samples and the horizontal halo's words), converts it to floats once,
// and keeps the last MASK_H rows (dense masks: the windows; rank-one masks: their row-pass sums)
// in registers. Small masks are memory-bound, so what counts is bytes in flight: threads whose
// window lies inside the plane (all of them but the edges') take a path with no border logic,
// fully unrolled, whose loads the compiler issues ahead of the arithmetic. Sums are the tiled
// kernels' sums, tap for tap in the same order.
#define S_HALO ((MASK_W / 2) * CH)
#define S_WORDS ((S_HALO + 3) / 4)
#define S_LEN (PX + 8 * S_WORDS)
#define S_OFF (4 * S_WORDS - S_HALO)

// Registers are capped at 128 a thread (blocks an SM must hold at once): the edge paths,
// whose reads are all issued up front, would otherwise size every thread's registers (about
// 180 for 16 x 8 outputs of a 3x3 mask, where the interior path needs 80) and halve the
// interior's occupancy; capped, they spill a little instead. Not measured yet (see
// BENCHMARKS.md, "Streaming kernels").
#define MIN_BLOCKS (65536 / (128 * BLOCK_X * BLOCK_Y) > 0 ? 65536 / (128 * BLOCK_X * BLOCK_Y) : 1)
#define KERNEL_BOUNDS __launch_bounds__(BLOCK_X* BLOCK_Y, MIN_BLOCKS)

// How a thread reads its rows: INTERIOR, every row and word inside the plane and aligned (no
// border logic at all); EDGE_ROWS, aligned words inside the row but rows that may be outside
// the plane (mapped first); SAMPLES, sample by sample with both indices mapped (the plane's
// left and right edges, rows not aligned to 4 samples, strided sources).
#define S_INTERIOR 0
#define S_EDGE_ROWS 1
#define S_SAMPLES 2

// The indices a thread's reads need, mapped by the border rule before any read: the source
// row of each of its PY + MASK_H - 1 rows (-1: the constant 0), and for S_SAMPLES the byte
// offset in a row of each window sample (-1: the constant 0). Every read then has an address
// known up front and no branch before it, so the compiler issues all of a thread's reads
// together: a thread whose reads each waited for the last (one per sample, one row at a
// time) took longer than the whole interior of the plane.
#define S_ROWS (PY + MASK_H - 1)
template <int MODE>
struct StreamIndices {
    int rows[MODE == S_INTERIOR ? 1 : S_ROWS];
    long long offsets[MODE == S_SAMPLES ? S_LEN : 1];
};

template <int MODE>
__device__ __forceinline__ void map_stream_indices(StreamIndices<MODE>& at, const PlaneGeometry& g, int row0,
                                                   int first) {
    if constexpr (MODE != S_INTERIOR) {
#pragma unroll
        for (int r = 0; r < S_ROWS; ++r) at.rows[r] = map_index(row0 - MASK_H / 2 + r, g.height);
    }
    if constexpr (MODE == S_SAMPLES) {
        const long long pixel_bytes = g.src_pixel != 0 ? g.src_pixel : CH * SAMPLE_BYTES;
#pragma unroll
        for (int e = 0; e < S_LEN; ++e) {
            const int col = first + e;
            // floor division, so that channel stays in 0..CH-1 left of the plane
            const int pixel = col >= 0 ? col / CH : -((-col + CH - 1) / CH);
            const int x = map_index(pixel, g.width);
            at.offsets[e] = x < 0 ? -1 : x * pixel_bytes + (col - pixel * CH) * SAMPLE_BYTES;
        }
    }
}

// Window r of a thread (samples first..first + S_LEN - 1 of its r-th row) as floats. Reads
// always go to an address inside the plane (row 0 or the row start stand in for the constant
// border's outside), and a select makes those samples 0, as `sample` gives them.
template <int MODE>
__device__ __forceinline__ void stream_window(float (&w)[S_LEN], const unsigned char* __restrict__ src,
                                              const PlaneGeometry& g, const StreamIndices<MODE>& at, int row0,
                                              int r, int first) {
    if constexpr (MODE == S_SAMPLES) {
        const int y = at.rows[r];
        const unsigned char* base = src + (size_t)(y < 0 ? 0 : y) * g.src_pitch;
#pragma unroll
        for (int e = 0; e < S_LEN; ++e) {
            const long long offset = at.offsets[e];
            if (e < S_OFF || e >= S_LEN - S_OFF) {
                w[e] = 0.0f;  // never a tap's sample
                continue;
            }
            const float v = sample_value(*reinterpret_cast<const sample_t*>(base + (offset < 0 ? 0 : offset)));
            w[e] = y >= 0 && offset >= 0 ? v : 0.0f;
        }
    } else {
        const int y = MODE == S_INTERIOR ? row0 - MASK_H / 2 + r : at.rows[r];
        const sample_t* p = sample_row(src, g.src_pitch, y < 0 ? 0 : y) + first;
#pragma unroll
        for (int q = 0; q < S_LEN / 4; ++q) {
            const float4 f = quad_floats(p + 4 * q);
            const bool inside = MODE == S_INTERIOR || y >= 0;
            w[4 * q] = inside ? f.x : 0.0f;
            w[4 * q + 1] = inside ? f.y : 0.0f;
            w[4 * q + 2] = inside ? f.z : 0.0f;
            w[4 * q + 3] = inside ? f.w : 0.0f;
        }
    }
}

// A thread's PY rows from output row `row0`, samples col..col + PX - 1.
template <bool SEPARABLE, int MODE>
__device__ __forceinline__ void stream_rows(const unsigned char* __restrict__ src, unsigned char* __restrict__ dst,
                                            const PlaneGeometry& g, int row0, int col) {
    const int first = col - 4 * S_WORDS;
    StreamIndices<MODE> at;
    map_stream_indices<MODE>(at, g, row0, first);
#if MAGNITUDE
    float second[PX];
#endif
    // Dense: the last MASK_H windows. Rank-one: the last MASK_H row-pass sums.
    float held[MASK_H][SEPARABLE ? PX : S_LEN];
#pragma unroll
    for (int r = 0; r < S_ROWS; ++r) {
        // Rotating the array costs nothing once unrolled: the registers are renamed.
#pragma unroll
        for (int i = 0; i + 1 < MASK_H; ++i) {
#pragma unroll
            for (int e = 0; e < (SEPARABLE ? PX : S_LEN); ++e) held[i][e] = held[i + 1][e];
        }
        if constexpr (SEPARABLE) {
            float w[S_LEN];
            stream_window<MODE>(w, src, g, at, row0, r, first);
            float sum[PX];
            zero_row(sum);
            accumulate_at<S_OFF>(sum, c_taps + MASK_W * MASK_H, w);
#pragma unroll
            for (int px = 0; px < PX; ++px) held[MASK_H - 1][px] = sum[px];
        } else {
            stream_window<MODE>(held[MASK_H - 1], src, g, at, row0, r, first);
        }
        if (r < MASK_H - 1) continue;
        float acc[PX];
        zero_row(acc);
        if constexpr (SEPARABLE) {
#pragma unroll
            for (int i = 0; i < MASK_H; ++i) {
                const float t = c_taps[MASK_W * MASK_H + MASK_W + i];
#pragma unroll
                for (int px = 0; px < PX; ++px) acc[px] = fmaf(t, held[i][px], acc[px]);
            }
        } else {
#if MAGNITUDE
            zero_row(second);
#endif
#pragma unroll
            for (int i = 0; i < MASK_H; ++i) {
                accumulate_at<S_OFF>(acc, c_taps + i * MASK_W, held[i]);
#if MAGNITUDE
                accumulate_at<S_OFF>(second, SECOND_TAPS + i * MASK_W, held[i]);
#endif
            }
#if MAGNITUDE
#pragma unroll
            for (int px = 0; px < PX; ++px) acc[px] = magnitude(acc[px], second[px]);
#endif
        }
        // Rows past the plane's end are computed (from mapped rows) but not stored: a return
        // here would keep the compiler from issuing later rows' reads early.
        const int out = row0 + r - (MASK_H - 1);
        if (MODE == S_INTERIOR || out < g.height) store_row<MODE == S_INTERIOR>(dst, g, acc, out, col);
    }
}

// The streaming kernel's body: where this thread's outputs are, and how it reads.
template <bool SEPARABLE>
__device__ __forceinline__ void stream_kernel(const unsigned char* __restrict__ src, unsigned char* __restrict__ dst,
                                              const PlaneGeometry& g) {
    const int col = (blockIdx.x * BLOCK_X + threadIdx.x) * PX;
    const int row0 = (blockIdx.y * BLOCK_Y + threadIdx.y) * PY;
    const int row_samples = g.width * CH;
    if (col >= row_samples || row0 >= g.height) return;
    const int first = col - 4 * S_WORDS;
    const size_t quad = 4 * SAMPLE_BYTES - 1;
    // Pixels apart (a strided view) and rows not aligned to 4 samples are read sample by sample.
    const bool words = g.src_pixel == 0 && ((((size_t)src) | (size_t)g.src_pitch) & quad) == 0 && first >= 0 &&
                       first + S_LEN <= row_samples;
    const bool interior = words && ((((size_t)dst) | (size_t)g.dst_pitch) & quad) == 0 && row0 >= MASK_H / 2 &&
                          row0 + PY + MASK_H / 2 <= g.height;
    if (interior) {
        stream_rows<SEPARABLE, S_INTERIOR>(src, dst, g, row0, col);
    } else if (words) {
        stream_rows<SEPARABLE, S_EDGE_ROWS>(src, dst, g, row0, col);
    } else {
        stream_rows<SEPARABLE, S_SAMPLES>(src, dst, g, row0, col);
    }
}
#endif

// Dense masks. Each block filters a TILE_W x TILE_H tile; each thread PY rows of PX adjacent
// outputs. Looping over the tile rows a thread needs (not over mask rows) lets one window of
// shared values feed every output row it touches, while each output still adds its taps mask
// row by mask row: for output row py, tile row r carries mask row r - py.
extern "C" __global__ void KERNEL_BOUNDS
    convolve_dense(const unsigned char* __restrict__ src, unsigned char* __restrict__ dst, PlaneGeometry g) {
    BATCH_PLANE(src, dst, g);
#if STREAM
    stream_kernel<false>(src, dst, g);
#else
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
#endif
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
#if STREAM
    stream_kernel<true>(src, dst, g);
#else
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
#endif
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
