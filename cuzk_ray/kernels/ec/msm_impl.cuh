// Multi-scalar multiplication over a group in XYZZ coordinates (ec/xyzz.cuh), written once for
// both groups: msm.cu instantiates it for G1 (F = fp_t), msm_g2.cu for G2 (F = fp2_t), each with
// DEFINE_MSM_KERNELS(F, prefix), which defines the extern "C" kernels prefix##msm_digits, ...
// Scalars 0/1 are split off, Pippenger with signed-digit windows and XYZZ buckets for the rest,
// every step load-balanced (no thread's work depends on how the scalars are distributed).
//
//  0. msm_classify (+ the host's flatnonzero), or msm_split_count / msm_split_scatter: scalars
//     are classified in one read: 0 dropped, 1 -> index list for msm_sum_points, the rest ->
//     index list for Pippenger (both ascending).
//  1. msm_digits: scalar i -> W signed digits d_w in [-2^(c_w-1), 2^(c_w-1)] with
//     s = sum_w d_w 2^(b_w), window w of width c_w starting at bit b_w (a window plan: all c
//     bits, b_w = w c, or mixed widths, e.g. 8 x 21 + 4 x 22 bits); each non-zero digit becomes
//     the 64-bit entry (key = base_w + |d_w| - 1) << 32 | (point index | sign << 31), base_w =
//     sum of 2^(c_v-1) over the windows v < w (uniform: w 2^(c-1)). Zero digits get key
//     0xffffffff and sort last.
//  2. (host, cuda/sort.py) sort of the 64-bit entries on the key's bits only (CUB's radix
//     sort), so each bucket is a contiguous run (its points in any order).
//  3. msm_seg_points: thread t adds the S sorted entries t S .. t S + S - 1 (mixed XYZZ +
//     affine, 8M + 2S each; a point is negated for a negative digit; bases are affine Montgomery
//     form, converted once by msm_to_mont when the key is loaded; the next point is fetched while
//     the current one is added). A bucket run that lies wholly inside the
//     segment is added into its bucket; the segment's first and last runs, when the bucket goes
//     on into the neighbouring segment, are written as (key, partial sum) into two slots per
//     segment. The slots stay sorted by key, so msm_seg_partials repeats the same segmented
//     reduction on them (XYZZ additions, 12M + 2S) until one segment is left. Per pass a bucket
//     is written by at most one thread (only a run inside one segment is written), so the
//     read-modify-write of the bucket needs no atomics. A bucket holding half of all points
//     costs every thread at most S additions per pass.
//     Or (host ACCUMULATE = "affine") the batch-affine levels, msm_aff_runs / msm_aff_level /
//     msm_aff_buckets below: ~6 instead of 10 Fp mul per addition.
//  4. msm_chunks: one thread per chunk of L buckets of a window: running sums give
//     T_j = sum_t (t+1) B_t and S_j = sum_t B_t; sum_b (b+1) B_b = sum_j T_j + L sum_j j S_j,
//     the second sum the same reduction again over the S_j (recursion on the host,
//     xyzz_rows_shift_add for the factor L). ~2.2 XYZZ additions per bucket in all. Run once
//     per group of windows of one width (rows of 2^(c-1) buckets; a mixed plan has two groups).
//  5. xyzz_sum_rows: rows of XYZZ points summed in groups of `per` (a tree over launches):
//     chunk sums -> one sum per window; the partial sums of the scalar-1 points -> one point.
//  6. (host, Python ints) Horner over the W window sums, plus the sum of the scalar-1 points.
// With a table of window multiples (row w n + i = 2^(c w) P_i, built by msm_double_c and
// msm_batch_affine), every window's digits go into one set of 2^(c-1) buckets (the digit's
// window picks the table row), so step 4 runs over one window and step 6 has nothing to combine:
// the same number of additions in step 3, but c can grow (fewer windows) without multiplying the
// bucket reduction by W.
// M and S are multiplications in F: over Fp2 one M is 3 Fp mul, one S 2 Fp mul.
#pragma once
#include "ec/xyzz.cuh"

#define NO_KEY 0xffffffffu
// Compile-time variants (jobs/bench_kernels.py --g1-defines compares them): blocks of 128 threads
// per SM that the accumulation kernel must fit (its register cap), and the point prefetch.
// H200, G1 2^24 uniform, acc_points, CIOS multiplication: 1 block (240 registers) 319 ms, 3
// (<= 168) 222 ms, 4 (<= 128, spills) 244 ms. With mul_wide (fewer live registers): 2 (<= 255,
// no spills in G1) 112 ms, 3 117 ms, 4 133 ms. Prefetch: 319 vs 323 ms. Measured for G1 only: the
// G2 kernel spills ~500 bytes at 2 blocks with the prefetch (ptxas -v); G2 variants not timed.
#ifndef MSM_SEG_MINB
#define MSM_SEG_MINB 2
#endif
// MSM_PREFETCH 2 (a variant): the next point goes global -> shared memory by cp.async (two
// slots per thread, 2 x 96 bytes in G1), so no registers hold it during the current addition.
// Why: msm_seg_points is capped at 254 registers and ptxas then chains many carry sequences on
// one predicate back to back (15 % of its carry-consuming instructions directly follow their
// producer, against 0.4 % for two independent mul_wide in a 64-register kernel): the prefetched
// point's 24 registers are room for it to interleave them.
#ifndef MSM_PREFETCH
#define MSM_PREFETCH 1
#endif
#define MSM_SEG_THREADS 128  // block size of msm_seg_points (cuda/msm.py THREADS)

// 16-byte asynchronous copies of `bytes` from global src to shared dst (cp.async, sm_80+);
// the caller waits with cp_async_wait_all before reading dst.
__device__ __forceinline__ void cp_async_bytes(void* dst, const void* src, int bytes) {
    const u32 d = (u32)__cvta_generic_to_shared(dst);
    for (int k = 0; k < bytes; k += 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d + k), "l"((const char*)src + k));
    asm volatile("cp.async.commit_group;");
}
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;" ::: "memory"); }

// acc + point i (affine, Montgomery form; all-zero = infinity, skipped), negated if neg.
template <class F>
__device__ __forceinline__ xyzz_t<F> add_point(const xyzz_t<F>& acc, affine_t<F> p, bool neg) {
    if (p.x.is_zero() && p.y.is_zero()) return acc;
    if (neg) p.y = -p.y;
    return xyzz_madd(acc, p);
}

// scalars: standard-form Fr limbs (8 u32 each), m of them; idx[i] is the point index of scalar
// i. plan: W words, window w = (bucket base << 32) | (start bit << 8) | width (cuda/msm.py
// WindowPlan.words; widths 2..24, W <= 128): windows of any widths, e.g. 8 of 21 bits and 4 of
// 22 (12 windows, 2^24 buckets), or all c bits (start w c, base w 2^(c-1): the uniform keys).
// entries: [W][m] 64-bit (key << 32 | value), see step 1. table_n != 0: the bases are a table
// of window multiples (row w n + i = 2^(c w) P_i, a uniform plan), all windows share one set of
// 2^(c-1) buckets: key = |d| - 1 and the value's point is w table_n + idx[i].
// Carry: the host only builds plans whose widths sum to >= 256, so for s < 2^255 the top
// window's raw value is < 2^(width - 1) and with the carry <= 2^(width - 1): no carry out.
// Cost: one 8-word scalar read and W 64-bit entry writes per thread; the plan words are the
// same address for every thread (one broadcast load per window).
__device__ __forceinline__ void msm_digits_impl(const u32* scalars, const u32* idx, u32 m, const u64* plan, int W,
                                                u32 table_n, u64* entries) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m) return;
    u32 s[9];
#pragma unroll
    for (int k = 0; k < 8; k++) s[k] = scalars[8 * (u64)i + k];
    s[8] = 0;
    const u32 point = idx[i];
    u32 carry = 0;
    for (int w = 0; w < W; w++) {
        const u64 pw = __ldg(plan + w);
        const int c = (int)(pw & 0xff), bit = (int)((pw >> 8) & 0xffff), word = bit >> 5, sh = bit & 31;
        const u32 base = (u32)(pw >> 32), half = 1u << (c - 1), mask = (1u << c) - 1;
        u32 d = 0;
        if (word < 8) d = (u32)((((u64)s[word + 1] << 32) | s[word]) >> sh) & mask;  // sh + c <= 55 < 64
        d += carry;
        u32 neg = 0;
        if (d > half) {
            d = (1u << c) - d;
            neg = 1;
            carry = 1;
        } else {
            carry = 0;
        }
        const u32 key = d == 0 ? NO_KEY : table_n ? d - 1 : base + d - 1;
        const u32 value = table_n ? w * table_n + point : point;
        entries[(u64)w * m + i] = ((u64)key << 32) | value | (neg << 31);
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
    // POINTS: the point of entry e + 1 is loaded while entry e is added (MSM_PREFETCH), so the
    // gather's latency overlaps the ~10 multiplications of a mixed addition.
    u32 v_next = POINTS ? (u32)sorted[beg] : 0;
    affine_t<F> p_next;
    constexpr int PW = 2 * sizeof(F) / 4;  // words of an affine point
    u32* slot = nullptr;                   // MSM_PREFETCH 2: this thread's two staging slots
    if constexpr (POINTS && MSM_PREFETCH == 2) {
        __shared__ __align__(16) u32 staged[MSM_SEG_THREADS][2][PW];
        slot = staged[threadIdx.x][0];
        cp_async_bytes(slot, points + (u64)(v_next & 0x7fffffffu) * PW, 4 * PW);
    } else if (POINTS && MSM_PREFETCH) {
        p_next = load_affine<F>(points, v_next & 0x7fffffffu);
    }
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
            const u32 v = v_next;
            affine_t<F> p;
            if constexpr (MSM_PREFETCH == 2) {
                u32* cur = slot + ((e - beg) & 1) * PW;
                cp_async_wait_all();
                p = load_affine<F>(cur, 0);
                if (e + 1 < end) {
                    v_next = (u32)sorted[e + 1];
                    u32* nxt = slot + ((e + 1 - beg) & 1) * PW;
                    cp_async_bytes(nxt, points + (u64)(v_next & 0x7fffffffu) * PW, 4 * PW);
                }
            } else if (MSM_PREFETCH) {
                p = p_next;
                if (e + 1 < end) {
                    v_next = (u32)sorted[e + 1];
                    p_next = load_affine<F>(points, v_next & 0x7fffffffu);
                }
            } else {
                p = load_affine<F>(points, v & 0x7fffffffu);
                if (e + 1 < end) v_next = (u32)sorted[e + 1];
            }
            acc = add_point<F>(acc, p, v >> 31);
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

// One pass of the bucket reduction (step 4). vals: [W][m] XYZZ (W = nchunks_total L / m rows);
// chunk (w, j) covers vals[w][j L .. j L + L - 1] and, by one running sum from its top,
// writes T = sum_t (t + off) v_t (off 0 or 1) to out_t[w][j] and S = sum_t v_t to out_s[w][j]:
// 2L XYZZ additions (12M + 2S) per thread, no doublings. The host (cuda/msm.py bucket_reduce)
// recurses: sum_i (i + off) v_i = sum_j T_j + L sum_j j S_j, the second sum the same problem
// over the S array with off = 0, so the whole reduction costs ~2 (1 + 1/L + ...) additions per
// bucket plus log2(L) doublings per window and level.
template <class F>
__device__ __forceinline__ void msm_chunks_impl(const u32* vals, u32 m, u32 L, u32 off, u32 nchunks_total,
                                                u32* out_t, u32* out_s) {
    const u32 id = blockIdx.x * blockDim.x + threadIdx.x;
    if (id >= nchunks_total) return;
    const u32 per_window = m / L;
    const u32 w = id / per_window, j = id % per_window;
    const u64 base = (u64)w * m + (u64)j * L;
    xyzz_t<F> S = xyzz_t<F>::inf(), T = xyzz_t<F>::inf();
    for (int t = (int)L - 1; t >= 0; t--) {
        S = xyzz_add(S, load_xyzz<F>(vals, base + t));
        if (t > 0 || off) T = xyzz_add(T, S);
    }
    store_xyzz(out_t, id, T);
    store_xyzz(out_s, id, S);
}

// out[r] = a[r] + 2^k b[r] for rows r < rows (XYZZ): the step of the recursion above that
// brings the inner sum back (k = log2 L). k doublings (6M + 3S each) + 1 addition.
template <class F>
__device__ __forceinline__ void xyzz_rows_shift_add_impl(const u32* a, const u32* b, u32 rows, int k, u32* out) {
    const u32 r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    xyzz_t<F> q = load_xyzz<F>(b, r);
    for (int i = 0; i < k; i++) q = xyzz_dbl(q);
    store_xyzz(out, r, xyzz_add(load_xyzz<F>(a, r), q));
}

// The 0/1 split in two passes over tiles of SPLIT_TILE scalars (block b: scalars b T .. b T + T - 1;
// item it of thread t is scalar b T + it SPLIT_B + t, so a warp's loads are coalesced):
//   msm_split_count: cls[i] = 0, 1 or 2 (scalar i equal to 0, to 1, or other; every limb read),
//     counts[b] = ones in tile b, counts[nblocks + b] = others. One read of the scalars (32 B each).
//   (host: exclusive prefix sums of both count rows -> each tile's first output slot.)
//   msm_split_scatter: ones[off1[b] + rank] = i and rest[off2[b] + rank] = i, rank = the number of
//     the tile's earlier scalars of the same class: both lists ascending, exactly what
//     flatnonzero(cls == 1) / flatnonzero(cls == 2) give. Reads cls (1 B per scalar).
// H200, 2^27: the classification and two CuPy flatnonzero compactions take 4.4 ms; these two
// passes read 4 GiB + 128 MiB and write the index lists (~1.2 ms of traffic at ~4 TB/s): 1.7 ms
// measured (cuda/msm.py SPLIT_SCAN).
#define SPLIT_B 256
#define SPLIT_ITEMS 8
#define SPLIT_TILE (SPLIT_B * SPLIT_ITEMS)

__device__ __forceinline__ unsigned char scalar_class(const u32* scalars, u64 i) {
    const uint4* p = reinterpret_cast<const uint4*>(scalars + 8 * i);
    const uint4 lo = p[0], hi = p[1];
    const u32 high = lo.y | lo.z | lo.w | hi.x | hi.y | hi.z | hi.w;
    return high ? 2 : lo.x > 1 ? 2 : (unsigned char)lo.x;
}

// cls[i] = scalar_class(i), one thread per scalar: the host's flatnonzero then makes the two
// index lists (split_scalars with SPLIT_SCAN = False). H200, 2^27: 4.4 ms with both compactions.
__device__ __forceinline__ void msm_classify_impl(const u32* scalars, u64 n, unsigned char* cls) {
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) cls[i] = scalar_class(scalars, i);
}

// Sum of v over the block (every thread gets it); sh: SPLIT_B / 32 words.
__device__ __forceinline__ u32 block_sum(u32 v, u32* sh) {
    v = __reduce_add_sync(0xffffffffu, v);
    const u32 warp = threadIdx.x >> 5;
    __syncthreads();  // sh free (a previous call's readers are done)
    if ((threadIdx.x & 31) == 0) sh[warp] = v;
    __syncthreads();
    u32 t = 0;
#pragma unroll
    for (int w = 0; w < SPLIT_B / 32; w++) t += sh[w];
    return t;
}

__device__ __forceinline__ void msm_split_count_impl(const u32* scalars, u64 n, unsigned char* cls, u32* counts) {
    __shared__ u32 sh[SPLIT_B / 32];
    const u64 base = (u64)blockIdx.x * SPLIT_TILE;
    u32 ones = 0, rest = 0;
#pragma unroll
    for (int it = 0; it < SPLIT_ITEMS; it++) {
        const u64 i = base + it * SPLIT_B + threadIdx.x;
        if (i < n) {
            const unsigned char k = scalar_class(scalars, i);
            cls[i] = k;
            ones += k == 1;
            rest += k == 2;
        }
    }
    ones = block_sum(ones, sh);
    rest = block_sum(rest, sh);
    if (threadIdx.x == 0) {
        counts[blockIdx.x] = ones;
        counts[gridDim.x + blockIdx.x] = rest;
    }
}

// Per item: a ballot per warp, the warps' counts through shared memory (an exclusive scan of 8
// values, done by every thread), then the tile's running totals move on by the item's counts.
__device__ __forceinline__ void msm_split_scatter_impl(const unsigned char* cls, u64 n, const u32* offsets,
                                                       u32* ones, u32* rest) {
    __shared__ u32 sh1[SPLIT_B / 32], sh2[SPLIT_B / 32];
    const u64 base = (u64)blockIdx.x * SPLIT_TILE;
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5, below = (1u << lane) - 1;
    u32 next1 = offsets[blockIdx.x], next2 = offsets[gridDim.x + blockIdx.x];
    for (int it = 0; it < SPLIT_ITEMS; it++) {
        const u64 i = base + it * SPLIT_B + threadIdx.x;
        const unsigned char k = i < n ? cls[i] : 0;
        const u32 b1 = __ballot_sync(0xffffffffu, k == 1), b2 = __ballot_sync(0xffffffffu, k == 2);
        __syncthreads();  // sh1 / sh2 free
        if (lane == 0) {
            sh1[warp] = __popc(b1);
            sh2[warp] = __popc(b2);
        }
        __syncthreads();
        u32 pre1 = 0, pre2 = 0, tot1 = 0, tot2 = 0;
#pragma unroll
        for (u32 w = 0; w < SPLIT_B / 32; w++) {
            if (w < warp) {
                pre1 += sh1[w];
                pre2 += sh2[w];
            }
            tot1 += sh1[w];
            tot2 += sh2[w];
        }
        if (k == 1) ones[next1 + pre1 + __popc(b1 & below)] = (u32)i;
        if (k == 2) rest[next2 + pre2 + __popc(b2 & below)] = (u32)i;
        next1 += tot1;
        next2 += tot2;
    }
}

// out[j] = sum of points idx[j per .. j per + per - 1] (affine Montgomery, infinity skipped),
// XYZZ Montgomery; j < ceil(m / per). 8M + 2S per point.
template <class F>
__device__ __forceinline__ void msm_sum_points_impl(const u32* points, const u32* idx, u32 m, u32 per, u32* out) {
    const u32 j = blockIdx.x * blockDim.x + threadIdx.x;
    const u64 beg = (u64)j * per;
    if (beg >= m) return;
    const u64 end = min(beg + per, (u64)m);
    xyzz_t<F> acc = xyzz_t<F>::inf();
    for (u64 e = beg; e < end; e++) acc = add_point<F>(acc, load_affine<F>(points, idx[e]), false);
    store_xyzz(out, j, acc);
}

// out[i] = R x[i] (standard -> Montgomery form) for count elements of Fp (an affine point is 2
// of them in G1, 4 in G2). 1 mul each.
__device__ __forceinline__ void msm_to_mont_impl(const u32* in, u32* out, u64 count) {
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count) store(out, i, to_mont(load<fp_params>(in, i)));
}

// Window multiples, one level: out[i] = 2^c prev[i] (prev affine Montgomery, infinity all zero;
// out XYZZ). mdbl + (c - 1) dbl: ~(c - 1)(6M + 3S) + 4M + 3S.
template <class F>
__device__ __forceinline__ void msm_double_c_impl(const u32* prev, u32 n, int c, u32* out) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const affine_t<F> p = load_affine<F>(prev, i);
    xyzz_t<F> acc = xyzz_t<F>::inf();
    if (!(p.x.is_zero() && p.y.is_zero())) {
        acc = xyzz_mdbl(p);
        for (int k = 1; k < c; k++) acc = xyzz_dbl(acc);
    }
    store_xyzz(out, i, acc);
}

// XYZZ -> affine Montgomery (infinity -> all zero) for n points, K consecutive points per thread
// sharing one inversion (Montgomery's trick): prefix products of ZZZ in scratch (one F per
// point), one inversion, then back: ~3M per point + 1 inversion per K, plus 3M + 1S to affine.
template <class F>
__device__ __forceinline__ void msm_batch_affine_impl(const u32* in, u32 n, u32 K, u32* scratch, u32* out) {
    const u64 beg = ((u64)blockIdx.x * blockDim.x + threadIdx.x) * K;
    if (beg >= n) return;
    const u64 end = min(beg + K, (u64)n);
    F acc = F::one();
    for (u64 i = beg; i < end; i++) {  // scratch[i] = product of the ZZZ before i (infinity: 1)
        store_elem<F>(scratch, i, acc);
        const F zzz = load_elem<F>(in, 4 * i + 3);
        if (!zzz.is_zero()) acc = acc * zzz;
    }
    F inv = inverse(acc);  // 1 / product of all ZZZ of the range
    for (u64 i = end; i-- > beg;) {
        const xyzz_t<F> p = load_xyzz<F>(in, i);
        affine_t<F> r;
        if (p.is_inf()) {
            r.x = F::zero();
            r.y = F::zero();
        } else {
            const F t = inv * load_elem<F>(scratch, i);  // 1 / ZZZ_i
            inv = inv * p.ZZZ;
            const F zz_inv = sqr(p.ZZ * t);  // 1 / ZZ = (ZZ / ZZZ)^2 as ZZ^3 = ZZZ^2
            r.x = p.X * zz_inv;
            r.y = p.Y * t;
        }
        store_affine(out, i, r);
    }
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

// ---------------------------------------------------------------------------------------------
// Batch-affine bucket accumulation (cuda/msm.py ACCUMULATE = "affine"; replaces step 3).
// The sorted entries form bucket runs. Level-wise pair reduction: level 0 pairs entries
// start + 2q and start + 2q + 1 of each run (the points gathered from the bases, y negated for a
// negative digit) and writes one affine point per pair (an odd run's last point passes through)
// into a compact array in which the runs keep their order; the next levels repeat that over the
// compact array until every run has one point, which msm_aff_buckets adds into its bucket.
// Per run and level: out_len = ceil(len / 2), out_start = exclusive prefix sum of out_len (host,
// CuPy), so output slot j of run r reads inputs in_start[r] + 2 (j - out_start[r]) and the next;
// msm_aff_sources turns that into one 8-byte source word per slot before the level runs.
// The additions of one level are independent, so they are done in affine coordinates with the
// denominators inverted together (Montgomery's trick):
//   pass 1: thread t owns K slots (strided by the block size, see msm_aff_level_impl); per slot
//           the denominator d
//           (x2 - x1; 2 y1 for equal points; none for infinity operands, P + (-P) and
//           pass-through slots, whose results are set directly) and the product of the thread's
//           earlier denominators, stored in scratch (element k nthr + t: coalesced). 1 M.
//   block:  the AFF_B thread products in a product tree in shared memory, one inversion of the
//           root by thread 0, then down the tree: every thread gets 1 / (its product) (3 M per
//           thread in all, one inversion per block of AFF_B K additions).
//   pass 2: the slots in reverse: 1/d = inv * prefix, inv *= d (2 M), lambda = (y2 - y1)/d (1 M;
//           a doubling 3 x1^2/d, +1 S), x3 = lambda^2 - x1 - x2 (1 S), y3 = lambda (x1 - x3) - y1 (1 M).
// Per addition 5M + 1S = 6 Fp mul (G2: 6 Fp2 products = 17 Fp mul), against 8M + 2S = 10 for
// the XYZZ mixed addition; plus the inversion: ~380 S + ~190 M on one lane per block, i.e. the
// issue slots of ~570 warp-wide products per AFF_B K additions (K = 256, AFF_B = 128: ~0.6 Fp mul
// per addition). Bytes per addition (G1): pass 1 reads x1, x2 (2 x 48; y only when the x are
// equal or zero) and writes the prefix (48); pass 2 reads the prefix and both points (48 + 192)
// and writes the sum (96); msm_aff_sources and both passes move ~40 bytes of source word and
// run arrays: ~520 B, so 2^28 additions (G1 2^24, 16 windows) move ~140 GB, ~31 ms at the H200's
// ~4.5 TB/s, under the ~65 ms of their 1.6 G Fp mul at 24 G mul/s if it overlaps.
// Level 0 gathers the points at random (3 sectors per 96-byte point); later levels read
// contiguous pairs.
// Infinity is (0, 0) everywhere (bases, compact arrays). Neither curve has points of order 2,
// so 2 y1 != 0 and every denominator in a product is non-zero.
#ifndef AFF_B
#define AFF_B 128  // threads per block of msm_aff_level (cuda/msm.py AFF_THREADS must match)
#endif
#ifndef AFF_MINB
#define AFF_MINB 2
#endif

enum { AFF_ADD = 0, AFF_DBL = 1, AFF_COPY1 = 2, AFF_COPY2 = 3, AFF_INF = 4 };

template <class F>
__device__ __forceinline__ bool elem_eq(const F& a, const F& b) { return (a - b).is_zero(); }

template <class F>
__device__ __forceinline__ bool affine_is_inf(const affine_t<F>& p) { return p.x.is_zero() && p.y.is_zero(); }

// AFF_PREFETCH: which loads of the next slot a level thread issues before the current slot's
// arithmetic (0: none; 1: pass 1's x1, x2; 2: also pass 2's two points, 2 x 2 elements more in
// registers). Either way each slot's operands come from one 8-byte source word (msm_aff_sources),
// so a slot's loads are one coalesced read and two gathers, not a walk through the run arrays.
#ifndef AFF_PREFETCH
#define AFF_PREFETCH 1
#endif
#define AFF_PASS 0xffffffffu  // source word's second half: a pass-through slot (one operand)

// Operand v of a level (a half of a source word): GATHER, a sorted digit entry's value (point
// index | sign << 31: the base point, negated for a negative digit); otherwise the position of a
// point in the previous level's compact array.
template <class F, bool GATHER>
__device__ __forceinline__ F aff_src_x(const u32* pts, u32 v) {
    return load_elem<F>(pts, 2 * (u64)(GATHER ? v & 0x7fffffffu : v));
}

template <class F, bool GATHER>
__device__ __forceinline__ affine_t<F> aff_src_point(const u32* pts, u32 v) {
    affine_t<F> p = load_affine<F>(pts, GATHER ? v & 0x7fffffffu : v);
    if (GATHER && (v >> 31) && !affine_is_inf(p)) p.y = -p.y;
    return p;
}

// The kind of slot (p1, p2) and, for AFF_ADD / AFF_DBL, its denominator d.
template <class F>
__device__ __forceinline__ int aff_kind(const affine_t<F>& p1, const affine_t<F>& p2, F& d) {
    if (affine_is_inf(p1)) return AFF_COPY2;
    if (affine_is_inf(p2)) return AFF_COPY1;
    if (!elem_eq(p1.x, p2.x)) {
        d = p2.x - p1.x;
        return AFF_ADD;
    }
    if (elem_eq(p1.y, p2.y)) {
        d = p1.y + p1.y;
        return AFF_DBL;
    }
    return AFF_INF;  // P + (-P)
}

// Source words of one level, one thread per output slot j (in_start, in_len: the runs' input
// positions; out_start: their output positions; run[j]: the run of slot j, a prefix sum of run
// heads on the host): src[j] = (second operand << 32) | first operand, the operands inputs
// a = in_start[r] + 2 q and a + 1 (q = j - out_start[r]), the second AFF_PASS when a is a run's
// odd last point. GATHER (level 0): the operands are the sorted entries' values, so the level
// kernel gathers the base points directly. A light kernel at full occupancy, so its dependent
// loads (run -> run arrays -> entries) overlap across many warps; it moves ~40 bytes per slot.
template <bool GATHER>
__device__ __forceinline__ void msm_aff_sources_impl(const u64* sorted, const u32* in_start, const u32* in_len,
                                                     const u32* out_start, const u32* run, u32 slots, u64* src) {
    const u32 j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= slots) return;
    const u32 r = run[j];
    const u32 q = j - out_start[r];
    const u32 a = in_start[r] + 2 * q;
    const bool pass = 2 * q + 1 >= in_len[r];
    const u32 v1 = GATHER ? (u32)sorted[a] : a;
    const u32 v2 = pass ? AFF_PASS : GATHER ? (u32)sorted[a + 1] : a + 1;
    src[j] = ((u64)v2 << 32) | v1;
}

// One level over `slots` output slots (src: their source words, msm_aff_sources). Launch:
// ceil(slots / (K AFF_B)) blocks of AFF_B threads (all threads reach the barriers; slots past
// the end do nothing). Block b owns slots b K AFF_B .. (b + 1) K AFF_B - 1, thread tid the slots
// b K AFF_B + k AFF_B + tid (k < K): the lanes of a warp take consecutive slots, so the source
// words, scratch and output are read and written coalesced. H200, G1 2^24 uniform, before the
// source words (each slot walked run[j] -> out_start, in_len, in_start -> entries -> points, four
// dependent loads, twice): levels 121.6 ms at 4 blocks per SM, 64 % SM throughput, 12.3 cycles
// between a warp's issues (ncu; docs/BENCHMARKS.md, fourth session). scratch: [K nthr] F;
// out: [slots] affine.
template <class F, bool GATHER>
__device__ __forceinline__ void msm_aff_level_impl(const u32* pts, const u64* src, u32 slots, u32 K, u32* scratch,
                                                   u32* out) {
    __shared__ F tree[2 * AFF_B];
    const u32 tid = threadIdx.x;
    const u32 t = blockIdx.x * AFF_B + tid;
    const u64 nthr = (u64)gridDim.x * AFF_B;
    const u64 base = (u64)blockIdx.x * K * AFF_B + tid;
    // pass 1: the denominators' running product, the prefix before each slot into scratch
    F acc = F::one();
    u64 s_next = base < slots ? src[base] : ((u64)AFF_PASS << 32);
    F x1n, x2n;
    if (AFF_PREFETCH && (u32)(s_next >> 32) != AFF_PASS) {
        x1n = aff_src_x<F, GATHER>(pts, (u32)s_next);
        x2n = aff_src_x<F, GATHER>(pts, (u32)(s_next >> 32));
    }
    for (u32 k = 0; k < K; k++) {
        const u64 j = base + (u64)k * AFF_B;
        if (j >= slots) break;
        const u64 s = s_next;
        const u32 v1 = (u32)s, v2 = (u32)(s >> 32);
        F x1, x2;
        if (AFF_PREFETCH) {
            x1 = x1n;
            x2 = x2n;
        }
        const u64 jn = j + AFF_B;
        if (k + 1 < K && jn < slots) {
            s_next = src[jn];
            if (AFF_PREFETCH && (u32)(s_next >> 32) != AFF_PASS) {
                x1n = aff_src_x<F, GATHER>(pts, (u32)s_next);
                x2n = aff_src_x<F, GATHER>(pts, (u32)(s_next >> 32));
            }
        }
        if (v2 == AFF_PASS) continue;  // pass-through
        if (!AFF_PREFETCH) {
            x1 = aff_src_x<F, GATHER>(pts, v1);
            x2 = aff_src_x<F, GATHER>(pts, v2);
        }
        F d;
        if (!elem_eq(x1, x2) && !x1.is_zero() && !x2.is_zero()) {
            d = x2 - x1;  // the common case, decided from the x alone
        } else {
            const int kind = aff_kind(aff_src_point<F, GATHER>(pts, v1), aff_src_point<F, GATHER>(pts, v2), d);
            if (kind != AFF_ADD && kind != AFF_DBL) continue;
        }
        store_elem<F>(scratch, (u64)k * nthr + t, acc);
        acc = acc * d;
    }
    // 1 / acc for every thread of the block: product tree, one inversion, back down.
    tree[AFF_B + tid] = acc;
    __syncthreads();
    for (u32 L = AFF_B / 2; L >= 1; L >>= 1) {
        if (tid < L) tree[L + tid] = tree[2 * (L + tid)] * tree[2 * (L + tid) + 1];
        __syncthreads();
    }
    if (tid == 0) tree[1] = inverse(tree[1]);
    __syncthreads();
    for (u32 L = 1; L < AFF_B; L <<= 1) {
        if (tid < L) {
            const u32 k = L + tid;
            const F iv = tree[k], lo = tree[2 * k], hi = tree[2 * k + 1];
            tree[2 * k] = iv * hi;
            tree[2 * k + 1] = iv * lo;
        }
        __syncthreads();
    }
    F inv = tree[AFF_B + tid];
    // pass 2, the slots in reverse: 1 / d from the running inverse and the prefix, then the sum
    const u32 k_top = base >= slots ? 0 : (u32)min((u64)K, (slots - base + AFF_B - 1) / AFF_B);
    if (k_top == 0) return;
    u64 s_prev = src[base + (u64)(k_top - 1) * AFF_B];
    affine_t<F> p1n, p2n;
    if (AFF_PREFETCH >= 2) {
        p1n = aff_src_point<F, GATHER>(pts, (u32)s_prev);
        if ((u32)(s_prev >> 32) != AFF_PASS) p2n = aff_src_point<F, GATHER>(pts, (u32)(s_prev >> 32));
    }
    for (u32 k = k_top; k-- > 0;) {
        const u64 j = base + (u64)k * AFF_B;
        const u64 s = s_prev;
        const u32 v1 = (u32)s, v2 = (u32)(s >> 32);
        affine_t<F> p1, p2;
        if (AFF_PREFETCH >= 2) {
            p1 = p1n;
            p2 = p2n;
        }
        if (k > 0) {
            s_prev = src[j - AFF_B];
            if (AFF_PREFETCH >= 2) {
                p1n = aff_src_point<F, GATHER>(pts, (u32)s_prev);
                if ((u32)(s_prev >> 32) != AFF_PASS) p2n = aff_src_point<F, GATHER>(pts, (u32)(s_prev >> 32));
            }
        }
        if (AFF_PREFETCH < 2) {
            p1 = aff_src_point<F, GATHER>(pts, v1);
            if (v2 != AFF_PASS) p2 = aff_src_point<F, GATHER>(pts, v2);
        }
        affine_t<F> res;
        if (v2 == AFF_PASS) {
            res = p1;
        } else {
            F d;
            const int kind = aff_kind(p1, p2, d);
            if (kind == AFF_ADD || kind == AFF_DBL) {
                const F dinv = inv * load_elem<F>(scratch, (u64)k * nthr + t);
                inv = inv * d;
                const F lambda = (kind == AFF_ADD ? p2.y - p1.y : mul_small<3>(sqr(p1.x))) * dinv;
                res.x = sqr(lambda) - p1.x - p2.x;
                res.y = lambda * (p1.x - res.x) - p1.y;
            } else if (kind == AFF_COPY1) {
                res = p1;
            } else if (kind == AFF_COPY2) {
                res = p2;
            } else {
                res.x = F::zero();
                res.y = F::zero();
            }
        }
        store_affine(out, j, res);
    }
}

// Run heads of the sorted entries: start_by_key[key] = e for the first entry e of each key's
// run (start_by_key pre-filled with NO_KEY; the host compacts it into the run arrays).
__device__ __forceinline__ void msm_aff_runs_impl(const u64* sorted, u32 len, u32* start_by_key) {
    const u32 e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= len) return;
    const u32 key = (u32)(sorted[e] >> 32);
    if (e == 0 || (u32)(sorted[e - 1] >> 32) != key) start_by_key[key] = e;
}

// buckets[keys[r]] += pts[r] (affine, infinity (0, 0) skipped) for the R runs of one group: a
// bucket whose run was split between groups gets one addition per group (mixed XYZZ
// addition; into an empty bucket it is a copy). Keys are distinct within a launch.
template <class F>
__device__ __forceinline__ void msm_aff_buckets_impl(const u32* pts, const u32* keys, u32 R, u32* buckets) {
    const u32 r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= R) return;
    const affine_t<F> p = load_affine<F>(pts, r);
    if (affine_is_inf(p)) return;
    const u32 key = keys[r];
    store_xyzz(buckets, key, xyzz_madd(load_xyzz<F>(buckets, key), p));
}

// The module's kernels for field F, named prefix##msm_digits etc. (prefix may be empty).
// points: affine Montgomery form (2 elements of F per point; msm_to_mont converts); sorted: len entries, all with
// key != NO_KEY; buckets: [sum_w 2^(c_w-1)] XYZZ, Montgomery form, zero-initialised (infinity).
#define DEFINE_MSM_KERNELS(F, prefix)                                                                       \
    extern "C" __global__ void prefix##msm_digits(const u32* scalars, const u32* idx, u32 m, const u64* plan, \
                                                  int W, u32 table_n, u64* entries) {                       \
        msm_digits_impl(scalars, idx, m, plan, W, table_n, entries);                                        \
    }                                                                                                       \
    extern "C" __global__ void prefix##msm_to_mont(const u32* in, u32* out, u64 count) {                      \
        msm_to_mont_impl(in, out, count);                                                                   \
    }                                                                                                       \
    extern "C" __global__ void prefix##msm_double_c(const u32* prev, u32 n, int c, u32* out) {                \
        msm_double_c_impl<F>(prev, n, c, out);                                                              \
    }                                                                                                       \
    extern "C" __global__ void prefix##msm_batch_affine(const u32* in, u32 n, u32 K, u32* scratch, u32* out) { \
        msm_batch_affine_impl<F>(in, n, K, scratch, out);                                                   \
    }                                                                                                       \
    extern "C" __global__ void __launch_bounds__(128, MSM_SEG_MINB) prefix##msm_seg_points(const u32* points, const u64* sorted, u32 len, u32 S,   \
                                                      u32* buckets, u32* out_keys, u32* out_part) {         \
        seg_pass<F, true>(points, sorted, nullptr, nullptr, len, S, buckets, out_keys, out_part);           \
    }                                                                                                       \
    extern "C" __global__ void prefix##msm_seg_partials(const u32* in_keys, const u32* in_part, u32 len,      \
                                                        u32 S, u32* buckets, u32* out_keys, u32* out_part) { \
        seg_pass<F, false>(nullptr, nullptr, in_keys, in_part, len, S, buckets, out_keys, out_part);        \
    }                                                                                                       \
    extern "C" __global__ void prefix##msm_chunks(const u32* vals, u32 m, u32 L, u32 off, u32 nchunks_total,  \
                                                  u32* out_t, u32* out_s) {                                 \
        msm_chunks_impl<F>(vals, m, L, off, nchunks_total, out_t, out_s);                                   \
    }                                                                                                       \
    extern "C" __global__ void prefix##xyzz_rows_shift_add(const u32* a, const u32* b, u32 rows, int k,       \
                                                           u32* out) {                                      \
        xyzz_rows_shift_add_impl<F>(a, b, rows, k, out);                                                    \
    }                                                                                                       \
    extern "C" __global__ void prefix##msm_classify(const u32* scalars, u64 n, unsigned char* cls) {          \
        msm_classify_impl(scalars, n, cls);                                                                 \
    }                                                                                                       \
    extern "C" __global__ void __launch_bounds__(SPLIT_B) prefix##msm_split_count(                            \
        const u32* scalars, u64 n, unsigned char* cls, u32* counts) {                                       \
        msm_split_count_impl(scalars, n, cls, counts);                                                      \
    }                                                                                                       \
    extern "C" __global__ void __launch_bounds__(SPLIT_B) prefix##msm_split_scatter(                          \
        const unsigned char* cls, u64 n, const u32* offsets, u32* ones, u32* rest) {                        \
        msm_split_scatter_impl(cls, n, offsets, ones, rest);                                                \
    }                                                                                                       \
    extern "C" __global__ void prefix##msm_sum_points(const u32* points, const u32* idx, u32 m, u32 per,      \
                                                      u32* out) {                                           \
        msm_sum_points_impl<F>(points, idx, m, per, out);                                                   \
    }                                                                                                       \
    extern "C" __global__ void prefix##xyzz_sum_rows(const u32* in, u32 rows, u32 m, u32 per, u32* out) {     \
        xyzz_sum_rows_impl<F>(in, rows, m, per, out);                                                       \
    } \
    extern "C" __global__ void prefix##msm_aff_sources_gather(const u64* sorted, const u32* in_start,            \
        const u32* in_len, const u32* out_start, const u32* run, u32 slots, u64* src) {                     \
        msm_aff_sources_impl<true>(sorted, in_start, in_len, out_start, run, slots, src);                   \
    }                                                                                                       \
    extern "C" __global__ void prefix##msm_aff_sources(const u32* in_start, const u32* in_len,                 \
        const u32* out_start, const u32* run, u32 slots, u64* src) {                                        \
        msm_aff_sources_impl<false>(nullptr, in_start, in_len, out_start, run, slots, src);                 \
    }                                                                                                       \
    extern "C" __global__ void __launch_bounds__(AFF_B, AFF_MINB) prefix##msm_aff_level_gather(                 \
        const u32* pts, const u64* src, u32 slots, u32 K, u32* scratch, u32* out) {                         \
        msm_aff_level_impl<F, true>(pts, src, slots, K, scratch, out);                                      \
    }                                                                                                       \
    extern "C" __global__ void __launch_bounds__(AFF_B, AFF_MINB) prefix##msm_aff_level(                        \
        const u32* pts, const u64* src, u32 slots, u32 K, u32* scratch, u32* out) {                         \
        msm_aff_level_impl<F, false>(pts, src, slots, K, scratch, out);                                     \
    }                                                                                                       \
    extern "C" __global__ void prefix##msm_aff_runs(const u64* sorted, u32 len, u32* start_by_key) {          \
        msm_aff_runs_impl(sorted, len, start_by_key);                                                       \
    }                                                                                                       \
    extern "C" __global__ void prefix##msm_aff_buckets(const u32* pts, const u32* keys, u32 R, u32* buckets) { \
        msm_aff_buckets_impl<F>(pts, keys, R, buckets);                                                     \
    }
