// An experiment, not the engine's kernel: a 3x3 dense mask over 8-bit samples, each thread
// PX_OUT = 4 adjacent outputs (one 32-bit word) of PY rows, read straight from global memory
// (no shared tile): a warp reads 128 contiguous bytes a row, and each lane takes its
// neighbours' edge bytes by shuffles. Samples become floats by byte permutes (0x4B0000bb is
// 2^23 + b) and results become bytes by two round-down additions, so neither takes the
// conversion pipe. Each output's sums are the contract's: +0, then mask row by mask row,
// left to right, one fmaf each; then / DIVISOR, + bias, round half away from zero, clamp.
// Lanes at the plane's edges take their border samples one at a time; no block leaves the
// fast path.
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

// A source byte of row `p` (a row inside the plane), its column mapped through the border.
__device__ __forceinline__ unsigned int edge_byte(const unsigned char* p, int c, int width) {
    const int x = map_index(c, width);
    return x < 0 ? 0u : (unsigned int)p[x];
}

extern "C" __global__ void __launch_bounds__(256) convolve_small3(const unsigned char* __restrict__ src,
                                                                 unsigned char* __restrict__ dst, PlaneGeometry g) {
    const int lane = threadIdx.x;  // 0..31
    const int col = (blockIdx.x * 32 + lane) * 4;
    const int row0 = (blockIdx.y * blockDim.y + threadIdx.y) * SMALL_PY;
    const float bias = g.bias;
    const float divisor = DIVISOR;
    float t[9];
#pragma unroll
    for (int k = 0; k < 9; ++k) t[k] = c_taps[k];
    // acc[s]: the outputs of row row0 + py with py % 3 == s, live for three source rows.
    float acc[3][4];
#pragma unroll
    for (int k = 0; k < SMALL_PY + 2; ++k) {
        // Source row k of this thread, mapped through the border (-1: the constant zero row).
        const int y = map_index(row0 - 1 + k, g.height);
        const unsigned char* p = src + (size_t)(y < 0 ? 0 : y) * g.src_pitch;
        unsigned int w = 0;
        if (y >= 0) {
            if (col + 3 < g.width) {
                w = __ldg(reinterpret_cast<const unsigned int*>(p + col));
            } else if (col < g.width) {
                // The row's last, partial word: the samples past the edge as the border maps them.
#pragma unroll
                for (int e = 0; e < 4; ++e) w |= edge_byte(p, col + e, g.width) << (8 * e);
            }
        }
        unsigned int left = __shfl_up_sync(0xffffffffu, w, 1);
        unsigned int right = __shfl_down_sync(0xffffffffu, w, 1);
        if (lane == 0 || col == 0) left = y >= 0 ? edge_byte(p, col - 1, g.width) << 24 : 0u;
        if (lane == 31 || col + 4 >= g.width) right = y >= 0 && col < g.width ? edge_byte(p, col + 4, g.width) : 0u;
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
            if (i == 2 && row0 + py < g.height && col < g.width) {
                unsigned int b[4];
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const float z = __fadd_rn(divisor == 1.0f ? a[e] : __fdiv_rn(a[e], divisor), bias);
                    b[e] = rounded_bits(z);
                }
                unsigned char* out = dst + (size_t)(row0 + py) * g.dst_pitch + col;
                if (col + 3 < g.width) {
                    *reinterpret_cast<unsigned int*>(out) =
                        __byte_perm(__byte_perm(b[0], b[1], 0x0040), __byte_perm(b[2], b[3], 0x0040), 0x5410);
                } else {
#pragma unroll
                    for (int e = 0; e < 4; ++e)
                        if (col + e < g.width) out[e] = (unsigned char)b[e];
                }
            }
        }
    }
}
