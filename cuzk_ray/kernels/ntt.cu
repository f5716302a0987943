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
// reads 128-byte runs), runs the k stages in shared memory (two stages per barrier with
// ntt_pass_r4), and writes the tile back. With k <= 8, 2^27 takes 4 passes: 4 reads + 4 writes
// of the vector instead of 27. The first pass can read another buffer and the last can write
// bit-reversed (flags & 4), so a natural-order transform needs no copy or permutation pass.
// Costs per pass: n/2 * k butterflies, each 1 Fr mul (256 mad) + 1 add + 1 sub, and one
// 32-byte twiddle load from a level-by-level table (see pass_geometry::twiddle), read in the
// same 128-byte runs as the data. The multiplication dominates: with operator* (~640 SASS
// instructions, IMAD.HI + IADD3.X per carried high half) the pass ran at ~77% of its 35.9 G/s;
// ntt_pass_w (the default) uses mul_wide (~270 instructions, 51.6 G/s) and 128-bit shared
// memory accesses: 2^24 7.64 -> 5.27 ms, 2^27 63.8 -> 43.8 ms on the H200 (docs/BENCHMARKS.md).
//
//  DIF (flags & 2 == 0): natural order in, bit-reversed out; passes from the top bits down.
//  DIT (flags & 2 != 0): bit-reversed in, natural order out; passes from the bottom bits up.
//  flags & 1: inverse twiddles (no 1/n factor: scale separately, or on store with flags & 8).
//  flags & 8: the last DIF pass multiplies each element by its coset / 1/n factor as it stores it
//             (scaled store, see fold_block_factor below): an iNTT needs no separate scale_powers pass.
#include "ff/curve.cuh"

typedef fr_t F;
#define NTT_MAX_TILE 1024
#define FR_WORDS 8


// The butterfly with twiddle 1 (r = 0: every butterfly of the d = 1 stage, half of d = 2, ...
// about 2n of the (n/2) log n butterflies): no multiplication.
__device__ __forceinline__ void butterfly1(F& x0, F& x1) {
    const F d = x0 - x1;
    x0 = x0 + x1;
    x1 = d;
}

// WIDE: the Fr multiplication mul_wide (ff/mont32.cuh, 64-bit-pair carry chains, ~270 SASS
// instructions) instead of operator* (~640); same result bit for bit. The variants
// ntt.cu:MONT_MUL_F64=1 / MONT_MUL_KARA=1 (cuda/ntt.py DEFINES) make every product of the module,
// the _w kernels' too, mul_f64 (ff/mont_f64.cuh: the a*b limb products on the FP64 units) or
// mul_kara (Karatsuba product): both slower on the H200 (2^27: 52.4 / 47.0 ms against 43.0;
// docs/BENCHMARKS.md), kept as tested variants.
template <bool WIDE>
__device__ __forceinline__ F fmul(const F& a, const F& b) {
#if MONT_MUL_F64
    return mul_f64(a, b);
#elif MONT_MUL_KARA
    return mul_kara(a, b);  // variant ntt.cu:MONT_MUL_KARA=1: Karatsuba product (ff/mont32.cuh)
#else
    if (WIDE) return mul_wide(a, b);
    return a * b;
#endif
}

template <bool WIDE = false>
__device__ __forceinline__ void butterfly(F& x0, F& x1, const F& w, bool dit) {
    if (dit) {  // x0 + w x1, x0 - w x1: 1 mul, 1 add, 1 sub
        const F t = fmul<WIDE>(x1, w);
        x1 = x0 - t;
        x0 = x0 + t;
    } else {  // x0 + x1, (x0 - x1) w
        const F d = x0 - x1;
        x0 = x0 + x1;
        x1 = fmul<WIDE>(d, w);
    }
}

struct pass_geometry {
    u64 lowpart, high;
    int log_n, lo, c;
    u32 cmask;
    // Global index of tile row j, column col.
    __device__ __forceinline__ u64 index(u32 j, u32 col) const {
        return high | ((u64)j << lo) | lowpart | col;
    }
    // Twiddle of the butterfly at distance 2^hd (tile rows) whose first row is j0: the global
    // distance is d = 2^(hd+lo) and the twiddle is w_(2d)^r, r = (global index) mod d. The
    // table holds, level by level, tw[d - 1 + r] = w_(2d)^r (r < d, d = 1, 2, ..., n/2), so
    // threads of adjacent columns read adjacent entries. Inverse: w_(2d)^-r = -w_(2d)^(d - r).
    __device__ __forceinline__ F twiddle(const u32* tw, u32 j0, int hd, u32 col, bool inverse) const {
        const u64 d = 1ull << (hd + lo);
        const u64 r = ((u64)(j0 & ((1u << hd) - 1)) << lo) | lowpart | col;
        if (!inverse) return load<fr_params>(tw, d - 1 + r);
        if (r == 0) return F::one();
        return -load<fr_params>(tw, 2 * d - 1 - r);
    }
};

// Shared tile as structure of arrays, word i of element e at sh[i * tile + e], so consecutive
// elements fall in consecutive banks. The tile is dynamic shared memory sized to the pass
// (tile * 32 bytes), so small tiles do not cap the number of resident blocks.
// SH128 layout: the two 16-byte halves of element e at uint4 slots e and tile + e: 2 LDS.128 /
// STS.128 per element instead of 8 LDS.32 / STS.32 (same bytes, a quarter of the instructions).
// A quarter-warp (8 threads) is conflict-free when its 8 elements differ mod 8; the patterns
// that are not (stage hd = 0 with c = 2, hd < 3 with c = 0) are 2-way, as in the 32-bit layout.
extern __shared__ __align__(16) u32 sh_tile[];
#define sh_load(sh, e) sh_load_<SH128>(sh, tile, e)
#define sh_store(sh, e, x) sh_store_<SH128>(sh, tile, e, x)
template <bool SH128>
__device__ __forceinline__ F sh_load_(const u32* sh, u32 tile, u32 e) {
    F x;
    if (SH128) {
        const uint4* s4 = reinterpret_cast<const uint4*>(sh);
        const uint4 a = s4[e], b = s4[tile + e];
        x.v[0] = a.x; x.v[1] = a.y; x.v[2] = a.z; x.v[3] = a.w;
        x.v[4] = b.x; x.v[5] = b.y; x.v[6] = b.z; x.v[7] = b.w;
    } else {
#pragma unroll
        for (int i = 0; i < FR_WORDS; i++) x.v[i] = sh[i * tile + e];
    }
    return x;
}
template <bool SH128>
__device__ __forceinline__ void sh_store_(u32* sh, u32 tile, u32 e, const F& x) {
    if (SH128) {
        uint4* s4 = reinterpret_cast<uint4*>(sh);
        s4[e] = make_uint4(x.v[0], x.v[1], x.v[2], x.v[3]);
        s4[tile + e] = make_uint4(x.v[4], x.v[5], x.v[6], x.v[7]);
    } else {
#pragma unroll
        for (int i = 0; i < FR_WORDS; i++) sh[i * tile + e] = x.v[i];
    }
}

// Scaled store (flags & 8), used on the last DIF pass of an iNTT (lo = 0, so c = 0 and tile row
// j is element e). The element stored from pass position idx = high | j (g.index, before any bit
// reversal) holds coefficient bitrev(idx) over log_n bits, whether it is written to idx
// (compute_h: DIT passes follow) or to bitrev(idx) (ntt_device's inverse). Its factor
// g^bitrev(idx) * f_y splits, as bitrev(high | j) = (bitrev_k(j) << (log_n - k)) | bitrev(high), into
//   st_y[j]  = f_y * g^(bitrev_k(j) << (log_n - k))   2^k entries per vector (st + y * st_stride)
//   C(m)     = g^m = shi[m >> slo_bits] * slo[m & mask], m = bitrev_log_n(high), one per block
// (all Montgomery form; cuda/ntt.py fold_tables builds them, fold_factor mirrors this on the host).
// Cost: 1 product per block (thread 0, before the barrier that ends the tile load) and 2 per
// element: st_y[j] * C, then x * that. Precomputing st_y[j] * C per row into shared memory would
// be the same count (one row per element since c = 0) plus a barrier and 2^k * 32 bytes of shared
// memory, and C per thread would add up to 1/2 product per element (32-thread blocks of 64-element
// tiles at 2^27); scale_powers also does 2 per element but reads and writes the vectors once more.
// st_y is read in the data's order (consecutive j, 2^k * 32 bytes <= 16 KiB, cache-resident).
__device__ __forceinline__ u64 fold_block_index(const pass_geometry& g) {
    return __brevll(g.high) >> (64 - g.log_n);  // bitrev_log_n(high) = bitrev_(log_n-k)(blockIdx.x)
}

template <bool WIDE>
__device__ __forceinline__ F fold_block_factor(const pass_geometry& g, const u32* shi, const u32* slo,
                                               int slo_bits) {
    const u64 m = fold_block_index(g);
    return fmul<WIDE>(load<fr_params>(shi, m >> slo_bits), load<fr_params>(slo, m & ((1ull << slo_bits) - 1)));
}

// The parameters of every pass kernel (one list, so the kernels and cuda/ntt.py _launch_pass
// agree); st, shi, slo, slo_bits, st_stride are read only with flags & 8 (else may be null).
#define PASS_PARAMS const u32* src, u32* dst, const u32* tw, int log_n, int lo, int k, int c, int flags, \
                    const u32* st, const u32* shi, const u32* slo, int slo_bits, int st_stride
#define PASS_ARGS src, dst, tw, log_n, lo, k, c, flags, st, shi, slo, slo_bits, st_stride

// One pass: rows of bits [lo, lo+k) of every vector, src -> dst (may alias unless bitrev_out).
// MODE 0: radix 2, each butterfly loads its twiddle from global memory (L2) when it needs it.
// MODE 1: radix 4, each thread runs two stages on 4 rows held in registers between two barriers
//         (half the shared-memory traffic and barriers of radix 2); an odd last stage is radix 2.
// MODE 2: radix 2, all (2^k - 1) 2^c twiddles of the block are loaded into shared memory with
//         the data at the start of the pass (one exposed load latency per pass, not per stage;
//         inverse twiddles negated once); needs 2 * tile * 32 bytes of shared memory.
// Butterflies with twiddle 1 skip the multiplication in modes 0 and 2.
template <int MODE, bool WIDE = false, bool SH128 = false>
__device__ __forceinline__ void ntt_pass_impl(PASS_PARAMS) {
    u32* sh = sh_tile;
    const u64 n = 1ull << log_n;
    const u64 voff = (u64)blockIdx.y * n * FR_WORDS;
    src += voff;
    dst += voff;
    const u32 tile = 1u << (k + c);
    pass_geometry g;
    g.log_n = log_n; g.lo = lo; g.c = c; g.cmask = (1u << c) - 1;
    const int low_bits = lo - c;
    const u64 b = blockIdx.x;
    g.lowpart = (b & ((1ull << low_bits) - 1)) << c;
    g.high = (b >> low_bits) << (lo + k);

    const bool inverse = flags & 1, dit = flags & 2, scaled = flags & 8;
    __shared__ __align__(16) u32 sh_fold[FR_WORDS];  // scaled store: C of this block (above)
    if (scaled && threadIdx.x == 0) store(sh_fold, 0, fold_block_factor<WIDE>(g, shi, slo, slo_bits));
    for (u32 e = threadIdx.x; e < tile; e += blockDim.x)
        sh_store(sh, e, load<fr_params>(src, g.index(e >> c, e & g.cmask)));
    u32* tws = sh + FR_WORDS * tile;  // MODE 2: twiddle of (stage hd, pos, col) at ((2^hd - 1 + pos) << c) | col
    if (MODE == 2) {
        const u32 count = ((1u << k) - 1) << c;
        for (u32 e = threadIdx.x; e < count; e += blockDim.x) {
            const u32 col = e & g.cmask, m = (e >> c) + 1;
            const int hd = 31 - __clz(m);
            sh_store(tws, e, g.twiddle(tw, m - (1u << hd), hd, col, inverse));
        }
    }
    __syncthreads();

    int done = 0;
    while (done < k) {
        const int hd = dit ? done : k - 1 - done;  // first stage of this step
        if (MODE == 1 && k - done >= 2) {
            const int blo = dit ? hd : hd - 1;  // the two bits blo, blo+1 of the step
            for (u32 u = threadIdx.x; u < tile / 4; u += blockDim.x) {
                const u32 col = u & g.cmask, q = u >> c;
                const u32 j = ((q >> blo) << (blo + 2)) | (q & ((1u << blo) - 1));
                const u32 r0 = j, r1 = j | (1u << blo), r2 = j | (2u << blo), r3 = r1 | r2;
                F x0 = sh_load(sh, (r0 << c) | col), x1 = sh_load(sh, (r1 << c) | col);
                F x2 = sh_load(sh, (r2 << c) | col), x3 = sh_load(sh, (r3 << c) | col);
                if (dit) {  // bit blo (pairs r0-r1, r2-r3), then bit blo+1 (r0-r2, r1-r3)
                    butterfly<WIDE>(x0, x1, g.twiddle(tw, r0, blo, col, inverse), true);
                    butterfly<WIDE>(x2, x3, g.twiddle(tw, r2, blo, col, inverse), true);
                    butterfly<WIDE>(x0, x2, g.twiddle(tw, r0, blo + 1, col, inverse), true);
                    butterfly<WIDE>(x1, x3, g.twiddle(tw, r1, blo + 1, col, inverse), true);
                } else {  // bit blo+1 first, then bit blo
                    butterfly<WIDE>(x0, x2, g.twiddle(tw, r0, blo + 1, col, inverse), false);
                    butterfly<WIDE>(x1, x3, g.twiddle(tw, r1, blo + 1, col, inverse), false);
                    butterfly<WIDE>(x0, x1, g.twiddle(tw, r0, blo, col, inverse), false);
                    butterfly<WIDE>(x2, x3, g.twiddle(tw, r2, blo, col, inverse), false);
                }
                sh_store(sh, (r0 << c) | col, x0); sh_store(sh, (r1 << c) | col, x1);
                sh_store(sh, (r2 << c) | col, x2); sh_store(sh, (r3 << c) | col, x3);
            }
            done += 2;
        } else {
            for (u32 u = threadIdx.x; u < tile / 2; u += blockDim.x) {
                const u32 col = u & g.cmask, q = u >> c;
                const u32 j0 = ((q >> hd) << (hd + 1)) | (q & ((1u << hd) - 1)), j1 = j0 | (1u << hd);
                F x0 = sh_load(sh, (j0 << c) | col), x1 = sh_load(sh, (j1 << c) | col);
                const u32 pos = j0 & ((1u << hd) - 1);
                if (MODE != 1 && ((pos << lo) | g.lowpart | col) == 0)
                    butterfly1(x0, x1);
                else if (MODE == 2)
                    butterfly<WIDE>(x0, x1, sh_load(tws, (((1u << hd) - 1 + pos) << c) | col), dit);
                else
                    butterfly<WIDE>(x0, x1, g.twiddle(tw, j0, hd, col, inverse), dit);
                sh_store(sh, (j0 << c) | col, x0);
                sh_store(sh, (j1 << c) | col, x1);
            }
            done += 1;
        }
        __syncthreads();
    }

    const bool bitrev_out = flags & 4;
    F block_factor;
    const u32* st_y = st;
    if (scaled) {  // published by the first barrier
        block_factor = load<fr_params>(sh_fold, 0);
        st_y += (u64)blockIdx.y * st_stride * FR_WORDS;
    }
    for (u32 e = threadIdx.x; e < tile; e += blockDim.x) {
        u64 idx = g.index(e >> c, e & g.cmask);
        if (bitrev_out) idx = __brevll(idx) >> (64 - log_n);
        F x = sh_load(sh, e);
        if (scaled) x = fmul<WIDE>(x, fmul<WIDE>(load<fr_params>(st_y, e >> c), block_factor));
        store(dst, idx, x);
    }
}

// flags: 1 inverse twiddles, 2 DIT (else DIF), 4 write dst in bit-reversed order (out of place),
// 8 scaled store (the last DIF pass, lo = 0; tables st, shi, slo: see fold_block_factor).
// Launch: grid (n / 2^(k+c), batch); block tile/2 threads (radix 2) or tile/4 (radix 4);
// dynamic shared memory tile * 32 bytes (tile = 2^(k+c) <= 1024), twice that for ntt_pass_tws.
extern "C" __global__ void __launch_bounds__(512)
ntt_pass(PASS_PARAMS) {
    ntt_pass_impl<0>(PASS_ARGS);
}

extern "C" __global__ void __launch_bounds__(256)
ntt_pass_r4(PASS_PARAMS) {
    ntt_pass_impl<1>(PASS_ARGS);
}

// The same passes with the 64-bit-pair Fr multiplication (mul_wide) and, except in _w32, the
// 128-bit shared-memory layout (SH128 above). Same arguments, launch geometry and shared memory
// as ntt_pass / ntt_pass_r4; bit-identical results.
extern "C" __global__ void __launch_bounds__(512)
ntt_pass_w(PASS_PARAMS) {
    ntt_pass_impl<0, true, true>(PASS_ARGS);
}

extern "C" __global__ void __launch_bounds__(512)
ntt_pass_w32(PASS_PARAMS) {
    ntt_pass_impl<0, true, false>(PASS_ARGS);
}

extern "C" __global__ void __launch_bounds__(256)
ntt_pass_r4w(PASS_PARAMS) {
    ntt_pass_impl<1, true, true>(PASS_ARGS);
}

// dst[i] = src[i] * g^j * f_y with j = i (or bitrev(i) when bitrev != 0), from a two-level
// table: g^j * f_y = hi[j >> lo_bits] * lo_y[j & mask] (both Montgomery form, lo_y = lo +
// y*lo_stride). src may equal dst. 2 Fr mul (mul_wide) per element: at 2^27 x 3 vectors ~0.8 G
// products, compute-bound (24 GiB of traffic is ~6 ms; the products ~15 ms at mul_wide's rate,
// ~22 ms with operator*, which this kernel used before 2026-12-02).
extern "C" __global__ void scale_powers(const u32* src, u32* dst, int log_n, const u32* hi, const u32* lo,
                                        int lo_bits, u64 lo_stride, int bitrev) {
    const u64 n = 1ull << log_n;
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const u64 voff = (u64)blockIdx.y * n * FR_WORDS;
    const u64 j = (bitrev && log_n > 0) ? (__brevll(i) >> (64 - log_n)) : i;
    const F f = fmul<true>(load<fr_params>(hi, j >> lo_bits),
                           load<fr_params>(lo + (u64)blockIdx.y * lo_stride * FR_WORDS, j & ((1ull << lo_bits) - 1)));
    store(dst + voff, i, fmul<true>(load<fr_params>(src + voff, i), f));
}

// out[i] = hi[i >> lo_bits] * lo[i & mask] for i < count (Montgomery in, Montgomery out).
extern "C" __global__ void powers_table(u32* out, u64 count, const u32* hi, const u32* lo, int lo_bits) {
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    store(out, i, fmul<true>(load<fr_params>(hi, i >> lo_bits), load<fr_params>(lo, i & ((1ull << lo_bits) - 1))));
}

// h = a*b - c on n elements; abc = [a | b | c], b scaled by R beforehand so that the
// Montgomery product of standard a and (b R) is a*b in standard form. 1 mul + 1 sub.
extern "C" __global__ void h_pointwise(u32* h, const u32* abc, u64 n) {
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const F a = load<fr_params>(abc, i), b = load<fr_params>(abc, n + i), c = load<fr_params>(abc, 2 * n + i);
    store(h, i, fmul<true>(a, b) - c);
}

// out = x - y on n elements, standard form (out may be x): the last step of bellperson's H in six
// transforms (cuda/ntt.py, compute_h_bellperson_device with c_is_ab). 1 sub.
extern "C" __global__ void fr_sub(u32* out, const u32* x, const u32* y, u64 n) {
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    store(out, i, load<fr_params>(x, i) - load<fr_params>(y, i));
}

// Fill the lower levels of the twiddle table from its top level: tw[d - 1 + r] = w_(2d)^r =
// w_n^(r n/(2d)) = tw[n/2 - 1 + r (n/2)/d] for d = 1 .. n/4. One gather pass over n/2 entries.
extern "C" __global__ void twiddle_levels(u32* tw, int log_n) {
    const u64 half = 1ull << (log_n - 1);
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i + 1 >= half) return;
    const u64 m = i + 1;
    const u64 d = 1ull << (63 - __clzll(m));
    store(tw, i, load<fr_params>(tw, half - 1 + (m - d) * (half / d)));
}

extern "C" __global__ void __launch_bounds__(512)
ntt_pass_tws(PASS_PARAMS) {
    ntt_pass_impl<2>(PASS_ARGS);
}

// MODE 2 (the block's twiddles staged in shared memory with the tile) with mul_wide and the
// 128-bit layout: whether the per-stage twiddle load from L2 of ntt_pass_w is exposed latency
// (its ncu profile at 2^24: 17 cycles between a warp's issues, 31 % of them math-pipe throttle).
extern "C" __global__ void __launch_bounds__(512)
ntt_pass_tws_w(PASS_PARAMS) {
    ntt_pass_impl<2, true, true>(PASS_ARGS);
}
