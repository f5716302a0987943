// G1 multi-scalar multiplication, Pippenger with signed-digit windows and XYZZ buckets.
//
//  1. msm_digits: scalar i -> W signed digits d_w in [-2^(c-1), 2^(c-1)] with
//     s = sum_w d_w 2^(c w); each non-zero digit becomes (key = w 2^(c-1) + |d_w| - 1,
//     value = i | sign << 31). Zero digits get key 0xffffffff and sort last.
//  2. (host, CuPy) radix sort of the keys, bucket offsets by searchsorted.
//  3. msm_buckets: one thread per bucket adds its points (mixed XYZZ + affine, 8M + 2S each;
//     a point is negated for a negative digit). Bases are affine standard form, converted to
//     Montgomery form on load (2M).
//  4. msm_chunks: one thread per chunk of L buckets of a window: running sums give
//     T = sum_t (t+1) B_t and S = sum_t B_t, and the chunk's share of sum_b b B_b is
//     T + (j L) S (double-and-add, < c doublings). ~2L XYZZ additions per thread.
//  5. (host, Python ints) sum of chunks per window and Horner over windows: W * chunks points.
// Load balance is per bucket, so heavily repeated digits (e.g. all scalars equal to 1) serialise
// on one thread: splitting off 0/1 scalars is future work (issue 4).
#include "ec/g1_xyzz.cuh"

#define FP_WORDS 12

__device__ __forceinline__ g1_affine load_affine(const u32* points, u32 i) {
    g1_affine p;
    p.x = load<fp_params>(points, 2 * (u64)i);
    p.y = load<fp_params>(points, 2 * (u64)i + 1);
    return p;
}

__device__ __forceinline__ g1_xyzz load_xyzz(const u32* buf, u64 i) {
    g1_xyzz p;
    p.X = load<fp_params>(buf, 4 * i); p.Y = load<fp_params>(buf, 4 * i + 1);
    p.ZZ = load<fp_params>(buf, 4 * i + 2); p.ZZZ = load<fp_params>(buf, 4 * i + 3);
    return p;
}

__device__ __forceinline__ void store_xyzz(u32* buf, u64 i, const g1_xyzz& p) {
    store(buf, 4 * i, p.X); store(buf, 4 * i + 1, p.Y);
    store(buf, 4 * i + 2, p.ZZ); store(buf, 4 * i + 3, p.ZZZ);
}

// scalars: standard-form Fr limbs (8 u32 each), n of them. keys/vals: [W][n].
extern "C" __global__ void msm_digits(const u32* scalars, u32 n, int c, int W, u32* keys, u32* vals) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    u32 s[9];
#pragma unroll
    for (int k = 0; k < 8; k++) s[k] = scalars[8 * (u64)i + k];
    s[8] = 0;
    const u32 half = 1u << (c - 1), mask = (1u << c) - 1;
    u32 carry = 0;
    for (int w = 0; w < W; w++) {
        const int bit = w * c, word = bit >> 5, sh = bit & 31;
        u32 d = 0;
        if (word < 8) d = (u32)((((u64)s[word + 1] << 32) | s[word]) >> sh) & mask;
        d += carry;
        u32 neg = 0;
        if (d > half) {
            d = (1u << c) - d;
            neg = 1;
            carry = 1;
        } else {
            carry = 0;
        }
        keys[(u64)w * n + i] = d == 0 ? 0xffffffffu : ((u32)w << (c - 1)) | (d - 1);
        vals[(u64)w * n + i] = i | (neg << 31);
    }
}

// points: affine standard form, (x, y) as 2 x 12 u32 per point, all-zero = infinity (skipped).
// vals: sorted digit values; offsets[b] .. offsets[b+1] the entries of bucket b.
// buckets: XYZZ, Montgomery form, 4 x 12 u32 each.
extern "C" __global__ void msm_buckets(const u32* points, const u32* vals, const u32* offsets, u32 nbuckets,
                                       u32* buckets) {
    const u32 b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= nbuckets) return;
    g1_xyzz acc = g1_xyzz::inf();
    const u32 end = offsets[b + 1];
    for (u32 t = offsets[b]; t < end; t++) {
        const u32 v = vals[t];
        g1_affine p = load_affine(points, v & 0x7fffffffu);
        if (p.x.is_zero() && p.y.is_zero()) continue;  // infinity in the input
        p.x = to_mont(p.x);
        p.y = to_mont(p.y);
        if (v >> 31) p.y = -p.y;
        acc = g1_madd(acc, p);
    }
    store_xyzz(buckets, b, acc);
}

// buckets: [W][nb] XYZZ; chunk (w, j) covers buckets j L .. j L + L - 1 of window w, whose
// digits are |d| = b + 1. out: [W][nb / L] XYZZ, the chunk's part of sum_b (b + 1) B_b.
extern "C" __global__ void msm_chunks(const u32* buckets, u32 nb, u32 L, u32 nchunks_total, u32* out) {
    const u32 id = blockIdx.x * blockDim.x + threadIdx.x;
    if (id >= nchunks_total) return;
    const u32 per_window = nb / L;
    const u32 w = id / per_window, j = id % per_window;
    const u64 base = (u64)w * nb + (u64)j * L;
    g1_xyzz S = g1_xyzz::inf(), T = g1_xyzz::inf();
    for (int t = (int)L - 1; t >= 0; t--) {
        S = g1_add(S, load_xyzz(buckets, base + t));
        T = g1_add(T, S);
    }
    const u32 k = j * L;  // T + k S
    g1_xyzz Q = g1_xyzz::inf();
    for (int bit = 31; bit >= 0; bit--) {
        Q = g1_dbl(Q);
        if ((k >> bit) & 1) Q = g1_add(Q, S);
    }
    store_xyzz(out, id, g1_add(T, Q));
}
