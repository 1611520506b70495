// An experiment, not the engine's kernel: a 3x3 dense mask over 8-bit samples, each thread
// PX_OUT = 4 adjacent outputs (one 32-bit word) of PY rows, read straight from global memory
// (no shared tile): a warp reads 128 contiguous bytes a row, and each lane takes its
// neighbours' edge bytes by shuffles. Samples become floats by byte permutes (0x4B0000bb is
// 2^23 + b) and results become bytes by two round-down additions, so neither takes the
// conversion pipe. Each output's sums are the contract's: +0, then mask row by mask row,
// left to right, one fmaf each; then / DIVISOR, + bias, round half away from zero, clamp.
// Blocks whose window touches the plane's edge take the generic per-sample path.
// Needs convolve.cuh first (MASK_W = MASK_H = 3, CH = 1, SAMPLE_BITS = 8) and SMALL_PY.

__device__ __forceinline__ float byte_float(unsigned int word, unsigned int selector) {
    return __uint_as_float(__byte_perm(word, 0x4B000000u, selector)) - 8388608.0f;
}

// roundf, then clamp to 0..255, as to_sample does, for the low byte of a word: clamping
// first is the same for every value (NaN included: fmaxf gives 0), and for c in 0..255 adding
// 0.5 rounded down and then 2^23 rounded down gives floor(c + 0.5) exactly (a round-down
// addition cannot cross an integer as round-to-nearest would at 0.49999997).
__device__ __forceinline__ unsigned int rounded_bits(float y) {
    const float c = fminf(fmaxf(y, 0.0f), 255.0f);
    return __float_as_uint(__fadd_rd(__fadd_rd(c, 0.5f), 8388608.0f));
}

extern "C" __global__ void __launch_bounds__(256) convolve_small3(const unsigned char* __restrict__ src,
                                                                 unsigned char* __restrict__ dst, PlaneGeometry g) {
    const int lane = threadIdx.x;  // 0..31
    const int col = (blockIdx.x * 32 + lane) * 4;
    const int row0 = (blockIdx.y * blockDim.y + threadIdx.y) * SMALL_PY;
    const int block_col = blockIdx.x * 128;
    const int block_row = blockIdx.y * blockDim.y * SMALL_PY;
    const bool interior = block_col >= 1 && block_col + 128 + 1 <= g.width && block_row >= 1 &&
                          block_row + (int)blockDim.y * SMALL_PY + 1 <= g.height &&
                          ((((size_t)src) | (size_t)g.src_pitch | (size_t)dst | (size_t)g.dst_pitch) & 3) == 0 &&
                          g.src_pixel == 0;
    const float bias = g.bias;
    const float divisor = DIVISOR;
    if (!interior) {
        // The generic path, sample by sample, for blocks at the plane's edge.
        for (int py = 0; py < SMALL_PY; ++py) {
            const int row = row0 + py;
            if (row >= g.height) return;
            for (int e = 0; e < 4; ++e) {
                const int c = col + e;
                if (c >= g.width) break;
                float acc = 0.0f;
                for (int i = 0; i < 3; ++i)
                    for (int j = 0; j < 3; ++j) acc = fmaf(c_taps[i * 3 + j], sample(src, g, row + i - 1, c + j - 1), acc);
                sample_row(dst, g.dst_pitch, row)[c] = to_sample(acc, bias);
            }
        }
        return;
    }
    float t[9];
#pragma unroll
    for (int k = 0; k < 9; ++k) t[k] = c_taps[k];
    // acc[s]: the outputs of row row0 + py with py % 3 == s, live for three source rows.
    float acc[3][4];
#pragma unroll
    for (int k = 0; k < SMALL_PY + 2; ++k) {
        const unsigned char* p = src + (size_t)(row0 - 1 + k) * g.src_pitch + col;
        const unsigned int w = __ldg(reinterpret_cast<const unsigned int*>(p));
        unsigned int left = __shfl_up_sync(0xffffffffu, w, 1);
        unsigned int right = __shfl_down_sync(0xffffffffu, w, 1);
        if (lane == 0) left = (unsigned int)__ldg(p - 1) << 24;
        if (lane == 31) right = __ldg(p + 4);
        float v[6];
        v[0] = byte_float(left, 0x7543);
        v[1] = byte_float(w, 0x7540);
        v[2] = byte_float(w, 0x7541);
        v[3] = byte_float(w, 0x7542);
        v[4] = byte_float(w, 0x7543);
        v[5] = byte_float(right, 0x7540);
        // Source row k is mask row i = k - py of output row py.
#pragma unroll
        for (int i = 0; i < 3; ++i) {
            const int py = k - i;
            if (py < 0 || py >= SMALL_PY) continue;
            float (&a)[4] = acc[py % 3];
            if (i == 0) {
#pragma unroll
                for (int e = 0; e < 4; ++e) a[e] = 0.0f;
            }
#pragma unroll
            for (int j = 0; j < 3; ++j) {
#pragma unroll
                for (int e = 0; e < 4; ++e) a[e] = fmaf(t[i * 3 + j], v[e + j], a[e]);
            }
            if (i == 2) {
                unsigned int b[4];
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const float y = __fadd_rn(divisor == 1.0f ? a[e] : __fdiv_rn(a[e], divisor), bias);
                    b[e] = rounded_bits(y);
                }
                const unsigned int word = __byte_perm(__byte_perm(b[0], b[1], 0x0040), __byte_perm(b[2], b[3], 0x0040), 0x5410);
                *reinterpret_cast<unsigned int*>(dst + (size_t)(row0 + py) * g.dst_pitch + col) = word;
            }
        }
    }
}
