// Multi-scalar multiplication over a group in XYZZ coordinates (ec/xyzz.cuh), written once for
// both groups: msm.cu instantiates it for G1 (F = fp_t), msm_g2.cu for G2 (F = fp2_t), each with
// DEFINE_MSM_KERNELS(F, prefix), which defines the extern "C" kernels prefix##msm_digits, ...
// Scalars 0/1 are split off, Pippenger with signed-digit windows and XYZZ buckets for the rest,
// every step load-balanced (no thread's work depends on how the scalars are distributed).
//
//  0. (host, CuPy) scalars are classified: 0 dropped, 1 -> index list for msm_sum_points, the
//     rest -> index list for Pippenger (compacted on the device with flatnonzero).
//  1. msm_digits: scalar i -> W signed digits d_w in [-2^(c-1), 2^(c-1)] with
//     s = sum_w d_w 2^(c w); each non-zero digit becomes the 64-bit entry
//     (key = w 2^(c-1) + |d_w| - 1) << 32 | (point index | sign << 31). Zero digits get key
//     0xffffffff and sort last.
//  2. (host, CuPy) sort of the 64-bit entries (radix sort), so each bucket is a contiguous run.
//  3. msm_seg_points: thread t adds the S sorted entries t S .. t S + S - 1 (mixed XYZZ +
//     affine, 8M + 2S each; a point is negated for a negative digit; bases are affine standard
//     form, converted to Montgomery form on load, 2M). A bucket run that lies wholly inside the
//     segment is added into its bucket; the segment's first and last runs, when the bucket goes
//     on into the neighbouring segment, are written as (key, partial sum) into two slots per
//     segment. The slots stay sorted by key, so msm_seg_partials repeats the same segmented
//     reduction on them (XYZZ additions, 12M + 2S) until one segment is left. Per pass a bucket
//     is written by at most one thread (only a run inside one segment is written), so the
//     read-modify-write of the bucket needs no atomics. A bucket holding half of all points
//     costs every thread at most S additions per pass.
//  4. msm_chunks: one thread per chunk of L buckets of a window: running sums give
//     T = sum_t (t+1) B_t and S = sum_t B_t, and the chunk's share of sum_b b B_b is
//     T + (j L) S (double-and-add, < c doublings). ~2L XYZZ additions per thread.
//  5. xyzz_sum_rows: rows of XYZZ points summed in groups of `per` (a tree over launches):
//     chunk sums -> one sum per window; the partial sums of the scalar-1 points -> one point.
//  6. (host, Python ints) Horner over the W window sums, plus the sum of the scalar-1 points.
// M and S are multiplications in F: over Fp2 one M is 3 Fp mul, one S 2 Fp mul.
#pragma once
#include "ec/xyzz.cuh"

#define NO_KEY 0xffffffffu

// acc + point i (affine standard form; all-zero = infinity, skipped), negated if neg.
template <class F>
__device__ __forceinline__ xyzz_t<F> add_point(const xyzz_t<F>& acc, const u32* points, u32 i, bool neg) {
    affine_t<F> p = load_affine<F>(points, i);
    if (p.x.is_zero() && p.y.is_zero()) return acc;
    p.x = to_mont(p.x);
    p.y = to_mont(p.y);
    if (neg) p.y = -p.y;
    return xyzz_madd(acc, p);
}

// scalars: standard-form Fr limbs (8 u32 each), m of them; idx[i] is the point index of scalar
// i. entries: [W][m] 64-bit (key << 32 | value), see step 1.
__device__ __forceinline__ void msm_digits_impl(const u32* scalars, const u32* idx, u32 m, int c, int W, u64* entries) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m) return;
    u32 s[9];
#pragma unroll
    for (int k = 0; k < 8; k++) s[k] = scalars[8 * (u64)i + k];
    s[8] = 0;
    const u32 half = 1u << (c - 1), mask = (1u << c) - 1, point = idx[i];
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
        const u32 key = d == 0 ? NO_KEY : ((u32)w << (c - 1)) | (d - 1);
        entries[(u64)w * m + i] = ((u64)key << 32) | point | (neg << 31);
    }
}

// bucket[key] += acc (XYZZ, Montgomery). Callers guarantee one writer per key per launch.
template <class F>
__device__ __forceinline__ void bucket_add(u32* buckets, u32 key, const xyzz_t<F>& acc) {
    if (acc.is_inf()) return;
    store_xyzz(buckets, key, xyzz_add(load_xyzz<F>(buckets, key), acc));
}

template <bool POINTS>
__device__ __forceinline__ u32 entry_key(const u64* sorted, const u32* in_keys, u32 e) {
    return POINTS ? (u32)(sorted[e] >> 32) : in_keys[e];
}

// One pass of the segmented reduction (step 3) over len sorted entries. POINTS: the entries are
// the sorted 64-bit digit entries (pass 1); otherwise (key, XYZZ partial) slots of the previous
// pass. Writes out_keys / out_part [2 * ceil(len / S)] and adds finished runs into buckets.
// The head slot is written as soon as the first run ends, so only one XYZZ accumulator lives in
// registers (for G2 a point is 96 words).
template <class F, bool POINTS>
__device__ __forceinline__ void seg_pass(const u32* points, const u64* sorted, const u32* in_keys,
                                         const u32* in_part, u32 len, u32 S, u32* buckets, u32* out_keys,
                                         u32* out_part) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    const u32 nseg = (len + S - 1) / S;
    if (t >= nseg) return;
    const u32 beg = t * S, end = min(beg + S, len);
    u32 key = entry_key<POINTS>(sorted, in_keys, beg);
    const u32 last_key = entry_key<POINTS>(sorted, in_keys, end - 1);
    const bool shared_head = beg > 0 && entry_key<POINTS>(sorted, in_keys, beg - 1) == key;
    const bool shared_tail = end < len && entry_key<POINTS>(sorted, in_keys, end) == last_key;
    xyzz_t<F> acc = xyzz_t<F>::inf();
    bool first = true;
    for (u32 e = beg; e < end; e++) {
        const u32 k = entry_key<POINTS>(sorted, in_keys, e);
        if (k != key) {  // the run of `key` ends here
            if (first && shared_head) {
                store_xyzz(out_part, 2 * t, acc);  // head slot
            } else {
                bucket_add(buckets, key, acc);
                if (first) store_xyzz(out_part, 2 * t, xyzz_t<F>::inf());
            }
            first = false;
            key = k;
            acc = xyzz_t<F>::inf();
        }
        if (POINTS) {
            const u32 v = (u32)sorted[e];
            acc = add_point<F>(acc, points, v & 0x7fffffffu, v >> 31);
        } else {
            acc = xyzz_add(acc, load_xyzz<F>(in_part, e));
        }
    }
    if (first) {  // one run only: head and tail at once
        if (shared_head || shared_tail) {
            store_xyzz(out_part, 2 * t, acc);
        } else {
            bucket_add(buckets, key, acc);
            store_xyzz(out_part, 2 * t, xyzz_t<F>::inf());
        }
        store_xyzz(out_part, 2 * t + 1, xyzz_t<F>::inf());
    } else if (shared_tail) {
        store_xyzz(out_part, 2 * t + 1, acc);
    } else {
        bucket_add(buckets, key, acc);
        store_xyzz(out_part, 2 * t + 1, xyzz_t<F>::inf());
    }
    out_keys[2 * t] = entry_key<POINTS>(sorted, in_keys, beg);
    out_keys[2 * t + 1] = last_key;
}

// buckets: [W][nb] XYZZ; chunk (w, j) covers buckets j L .. j L + L - 1 of window w, whose
// digits are |d| = b + 1. out: [W][nb / L] XYZZ, the chunk's part of sum_b (b + 1) B_b.
template <class F>
__device__ __forceinline__ void msm_chunks_impl(const u32* buckets, u32 nb, u32 L, u32 nchunks_total, u32* out) {
    const u32 id = blockIdx.x * blockDim.x + threadIdx.x;
    if (id >= nchunks_total) return;
    const u32 per_window = nb / L;
    const u32 w = id / per_window, j = id % per_window;
    const u64 base = (u64)w * nb + (u64)j * L;
    xyzz_t<F> S = xyzz_t<F>::inf(), T = xyzz_t<F>::inf();
    for (int t = (int)L - 1; t >= 0; t--) {
        S = xyzz_add(S, load_xyzz<F>(buckets, base + t));
        T = xyzz_add(T, S);
    }
    const u32 k = j * L;  // T + k S
    xyzz_t<F> Q = xyzz_t<F>::inf();
    for (int bit = 31; bit >= 0; bit--) {
        Q = xyzz_dbl(Q);
        if ((k >> bit) & 1) Q = xyzz_add(Q, S);
    }
    store_xyzz(out, id, xyzz_add(T, Q));
}

// out[j] = sum of points idx[j per .. j per + per - 1] (affine standard form, infinity skipped),
// XYZZ Montgomery; j < ceil(m / per). 8M + 2S per point.
template <class F>
__device__ __forceinline__ void msm_sum_points_impl(const u32* points, const u32* idx, u32 m, u32 per, u32* out) {
    const u32 j = blockIdx.x * blockDim.x + threadIdx.x;
    const u64 beg = (u64)j * per;
    if (beg >= m) return;
    const u64 end = min(beg + per, (u64)m);
    xyzz_t<F> acc = xyzz_t<F>::inf();
    for (u64 e = beg; e < end; e++) acc = add_point<F>(acc, points, idx[e], false);
    store_xyzz(out, j, acc);
}

// in: [rows][m] XYZZ; out: [rows][ceil(m / per)], out[r][j] = sum in[r][j per .. j per + per - 1].
template <class F>
__device__ __forceinline__ void xyzz_sum_rows_impl(const u32* in, u32 rows, u32 m, u32 per, u32* out) {
    const u32 id = blockIdx.x * blockDim.x + threadIdx.x;
    const u32 mo = (m + per - 1) / per;
    if (id >= rows * mo) return;
    const u32 r = id / mo, j = id % mo;
    const u32 beg = j * per, end = min(beg + per, m);
    xyzz_t<F> acc = xyzz_t<F>::inf();
    for (u32 e = beg; e < end; e++) acc = xyzz_add(acc, load_xyzz<F>(in, (u64)r * m + e));
    store_xyzz(out, id, acc);
}

// The module's kernels for field F, named prefix##msm_digits etc. (prefix may be empty).
// points: affine standard form (2 elements of F per point); sorted: len entries, all with
// key != NO_KEY; buckets: [W 2^(c-1)] XYZZ, Montgomery form, zero-initialised (infinity).
#define DEFINE_MSM_KERNELS(F, prefix)                                                                       \
    extern "C" __global__ void prefix##msm_digits(const u32* scalars, const u32* idx, u32 m, int c, int W,    \
                                                  u64* entries) {                                           \
        msm_digits_impl(scalars, idx, m, c, W, entries);                                                    \
    }                                                                                                       \
    extern "C" __global__ void prefix##msm_seg_points(const u32* points, const u64* sorted, u32 len, u32 S,   \
                                                      u32* buckets, u32* out_keys, u32* out_part) {         \
        seg_pass<F, true>(points, sorted, nullptr, nullptr, len, S, buckets, out_keys, out_part);           \
    }                                                                                                       \
    extern "C" __global__ void prefix##msm_seg_partials(const u32* in_keys, const u32* in_part, u32 len,      \
                                                        u32 S, u32* buckets, u32* out_keys, u32* out_part) { \
        seg_pass<F, false>(nullptr, nullptr, in_keys, in_part, len, S, buckets, out_keys, out_part);        \
    }                                                                                                       \
    extern "C" __global__ void prefix##msm_chunks(const u32* buckets, u32 nb, u32 L, u32 nchunks_total,       \
                                                  u32* out) {                                               \
        msm_chunks_impl<F>(buckets, nb, L, nchunks_total, out);                                             \
    }                                                                                                       \
    extern "C" __global__ void prefix##msm_sum_points(const u32* points, const u32* idx, u32 m, u32 per,      \
                                                      u32* out) {                                           \
        msm_sum_points_impl<F>(points, idx, m, per, out);                                                   \
    }                                                                                                       \
    extern "C" __global__ void prefix##xyzz_sum_rows(const u32* in, u32 rows, u32 m, u32 per, u32* out) {     \
        xyzz_sum_rows_impl<F>(in, rows, m, per, out);                                                       \
    }
