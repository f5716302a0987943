// Number-theoretic transform over Fr, radix-2 butterflies grouped into shared-memory passes.
//
// Layout: a batch of vectors, vector y at data + y * n * 8 u32 (uint64[batch, n, 4]); blockIdx.y
// picks the vector. Values are kept in *standard* form throughout: twiddles and scale factors
// are stored in Montgomery form, and a Montgomery product of a standard x with w*R gives x*w in
// standard form, so no conversion pass is needed. (Only a product of two data values, in
// h_pointwise, needs a factor R folded into one operand beforehand.)
//
// One pass = k consecutive radix-2 stages on the index bits [lo, lo + k): each block loads a
// tile of 2^k elements (stride 2^lo) times 2^c adjacent columns (c = min(lo, 2), so a warp
// reads 128-byte runs), runs the k stages in shared memory, and writes the tile back. With
// k <= 8, 2^27 takes 4 passes: about 8 global reads+writes of the vector instead of 27.
// Costs per pass: n/2 * k butterflies, each 1 Fr mul (256 mad) + 1 add + 1 sub, and one
// 32-byte twiddle load (tables are L2 resident for the small-stride stages).
//
//  DIF (flags & 2 == 0): natural order in, bit-reversed out; passes from the top bits down.
//  DIT (flags & 2 != 0): bit-reversed in, natural order out; passes from the bottom bits up.
//  flags & 1: inverse twiddles w^-e = -w^(n/2 - e) (no 1/n factor; scale separately).
#include "ff/bls12_381.cuh"

typedef fr_t F;
#define NTT_MAX_TILE 1024
#define FR_WORDS 8

// w_n^e (or w_n^-e) from the table tw[e] = w_n^e, e < n/2, Montgomery form.
__device__ __forceinline__ F twiddle(const u32* tw, u64 e, u64 half_n, bool inverse) {
    if (!inverse) return load<fr_params>(tw, e);
    if (e == 0) return F::one();
    return -load<fr_params>(tw, half_n - e);
}

extern "C" __global__ void __launch_bounds__(512)
ntt_pass(u32* data, const u32* tw, int log_n, int lo, int k, int c, int flags) {
    // Structure of arrays so that consecutive elements fall in consecutive banks.
    __shared__ u32 sh[FR_WORDS][NTT_MAX_TILE];
    const u64 n = 1ull << log_n;
    u32* vec = data + (u64)blockIdx.y * n * FR_WORDS;
    const u32 tile = 1u << (k + c);
    const u32 cmask = (1u << c) - 1;
    const int low_bits = lo - c;
    const u64 b = blockIdx.x;
    const u64 lowpart = (b & ((1ull << low_bits) - 1)) << c;
    const u64 high = (b >> low_bits) << (lo + k);

    for (u32 e = threadIdx.x; e < tile; e += blockDim.x) {
        const u64 idx = high | ((u64)(e >> c) << lo) | lowpart | (e & cmask);
        F x = load<fr_params>(vec, idx);
#pragma unroll
        for (int w = 0; w < FR_WORDS; w++) sh[w][e] = x.v[w];
    }
    __syncthreads();

    const bool inverse = flags & 1, dit = flags & 2;
    const u64 half_n = n >> 1;
    for (int s = 0; s < k; s++) {
        const int hd = dit ? s : k - 1 - s;  // log2 of the butterfly distance inside the tile
        for (u32 u = threadIdx.x; u < tile / 2; u += blockDim.x) {
            const u32 col = u & cmask, q = u >> c;
            const u32 pos = q & ((1u << hd) - 1), grp = q >> hd;
            const u32 j0 = (grp << (hd + 1)) | pos, j1 = j0 | (1u << hd);
            const u32 e0 = (j0 << c) | col, e1 = (j1 << c) | col;
            // Global distance d = 2^(hd+lo); the twiddle is w_(2d)^(i mod d) = w_n^(r * n/(2d)).
            const u64 r = ((u64)pos << lo) | lowpart | col;
            const F w = twiddle(tw, r << (log_n - 1 - hd - lo), half_n, inverse);
            F x0, x1;
#pragma unroll
            for (int i = 0; i < FR_WORDS; i++) { x0.v[i] = sh[i][e0]; x1.v[i] = sh[i][e1]; }
            F y0, y1;
            if (dit) {
                const F t = x1 * w;
                y0 = x0 + t;
                y1 = x0 - t;
            } else {
                y0 = x0 + x1;
                y1 = (x0 - x1) * w;
            }
#pragma unroll
            for (int i = 0; i < FR_WORDS; i++) { sh[i][e0] = y0.v[i]; sh[i][e1] = y1.v[i]; }
        }
        __syncthreads();
    }

    for (u32 e = threadIdx.x; e < tile; e += blockDim.x) {
        const u64 idx = high | ((u64)(e >> c) << lo) | lowpart | (e & cmask);
        F x;
#pragma unroll
        for (int w = 0; w < FR_WORDS; w++) x.v[w] = sh[w][e];
        store(vec, idx, x);
    }
}

// out[bitrev(i)] = in[i] for every vector of the batch (out of place). log_n >= 1.
extern "C" __global__ void bit_reverse(u32* out, const u32* in, int log_n) {
    const u64 n = 1ull << log_n;
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const u64 off = (u64)blockIdx.y * n * FR_WORDS;
    const u64 j = __brevll(i) >> (64 - log_n);
    store(out + off, j, load<fr_params>(in + off, i));
}

// data[i] *= g^j * f_y with j = i (or bitrev(i) when bitrev != 0), from a two-level table:
// g^j * f_y = hi[j >> lo_bits] * lo_y[j & mask] (both Montgomery form, lo_y = lo + y*lo_stride).
// 2 Fr mul per element.
extern "C" __global__ void scale_powers(u32* data, int log_n, const u32* hi, const u32* lo,
                                        int lo_bits, u64 lo_stride, int bitrev) {
    const u64 n = 1ull << log_n;
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    u32* vec = data + (u64)blockIdx.y * n * FR_WORDS;
    const u64 j = (bitrev && log_n > 0) ? (__brevll(i) >> (64 - log_n)) : i;
    const F f = load<fr_params>(hi, j >> lo_bits) *
                load<fr_params>(lo + (u64)blockIdx.y * lo_stride * FR_WORDS, j & ((1ull << lo_bits) - 1));
    store(vec, i, load<fr_params>(vec, i) * f);
}

// out[i] = hi[i >> lo_bits] * lo[i & mask] for i < count (Montgomery in, Montgomery out).
extern "C" __global__ void powers_table(u32* out, u64 count, const u32* hi, const u32* lo, int lo_bits) {
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    store(out, i, load<fr_params>(hi, i >> lo_bits) * load<fr_params>(lo, i & ((1ull << lo_bits) - 1)));
}

// h = a*b - c on n elements; abc = [a | b | c], b scaled by R beforehand so that the
// Montgomery product of standard a and (b R) is a*b in standard form. 1 mul + 1 sub.
extern "C" __global__ void h_pointwise(u32* h, const u32* abc, u64 n) {
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const F a = load<fr_params>(abc, i), b = load<fr_params>(abc, n + i), c = load<fr_params>(abc, 2 * n + i);
    store(h, i, a * b - c);
}
