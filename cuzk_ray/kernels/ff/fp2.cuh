// Fp2 = Fp[u]/(u^2 + 1) over the Fp of the curve header that includes this one (ff/bls12_381.cuh,
// ff/bn254.cuh: both fields take u^2 = -1), written once for every curve: fp_t and fp_params must be
// defined before the include. The bounds below are stated for BLS12-381 (N = 12 words, p < 2^381);
// they hold a fortiori for BN254 (N = 8, p < 2^254: 2p < 2^255, products < 4p^2 < 2^510 in 16 words).
#pragma once

// Fp2 = Fp[u]/(u^2 + 1), elements c0 + c1*u, both in Montgomery form. The members mirror
// mont_t's (zero, one, is_zero), so curve code can be written once for fp_t and fp2_t.
struct fp2_t {
    fp_t c0, c1;

    __device__ __forceinline__ static fp2_t zero() { return {fp_t::zero(), fp_t::zero()}; }
    __device__ __forceinline__ static fp2_t one() { return {fp_t::one(), fp_t::zero()}; }
    __device__ __forceinline__ bool is_zero() const { return c0.is_zero() && c1.is_zero(); }
};

__device__ __forceinline__ fp2_t operator+(const fp2_t& a, const fp2_t& b) { return {a.c0 + b.c0, a.c1 + b.c1}; }
__device__ __forceinline__ fp2_t operator-(const fp2_t& a, const fp2_t& b) { return {a.c0 - b.c0, a.c1 - b.c1}; }
__device__ __forceinline__ fp2_t operator-(const fp2_t& a) { return {-a.c0, -a.c1}; }

// Fp2 mul and sqr are out-of-line calls unless a module defines FP2_INLINE as __forceinline__:
// the G2 curve formulas would otherwise inline ~100 Fp multiplications (~600 instructions each)
// into every MSM kernel, which NVVM takes tens of minutes to optimise; a call per Fp2 mul
// (arguments by value, in registers) costs little beside its 3 Fp multiplications.
#ifndef FP2_INLINE
#define FP2_INLINE __noinline__
#endif

// Fp2 products with lazy reduction: the Karatsuba products stay 768-bit (mont_detail::mul_rows, no
// reduction) and are combined before one reduction per coefficient (mont_detail::redc_words), so
// an Fp2 mul takes 2 reductions instead of 3, and a b - c d (XYZZ's Y3) 2 instead of 6. A module's
// choice before its includes: FP2_MUL_LAZY 1 for operator* (msm_g2.cu: G2 2^24 uniform 424.7 ->
// 377.3 ms on the H200), 2 for operator* and the curve formulas' mul_sub too (476.5 ms: slower, the
// call's spills), 0 (the default) neither.
// Cost in wide mads (IMAD.WIDE, the pipe that bounds the MSM): mul 3 x 144 + 2 x 144 = 720 against
// 3 mul_wide's 864; mul_sub 6 x 144 + 2 x 144 = 1152 against 1728; so a G2 mixed addition (8M +
// 2S, one of the M pairs as mul_sub) 6624 against 8064 (-18 %), for ~100 more word adds per mul.
// Bounds (inputs: Montgomery form, < p): a0 + a1 < 2p < 2^382 fits 12 words unreduced, so every
// product is < 4p^2 < 2^764 (24 words, no carry out). redc_words needs 0 <= T < p R, and gives
// T R^-1 mod p (R = 2^384): products of Montgomery forms reduce to the Montgomery form of the result.
//   mul: c1's T = (a0 + a1)(b0 + b1) - a0 b0 - a1 b1 = a0 b1 + a1 b0 in [0, 2p^2), 2p^2 < p R (2p < R);
//        c0's T = a0 b0 - a1 b1 in (-p^2, p^2): on a borrow + p R (the carry out of that addition
//        cancels the borrow's 2^768), in [p R - p^2, p R).
//   mul_sub: re = (a0 b0 - a1 b1) - (c0 d0 - c1 d1) and im = (a0 b1 + a1 b0) - (c0 d1 + c1 d0), each
//        in (-2p^2, 2p^2) with |x| < 2^763: as 768-bit two's complement, negative (re's top bit, im's
//        borrow) -> + p R. CPU model, word for word: tests/test_fp2_lazy_model.py.
#ifndef FP2_MUL_LAZY
#define FP2_MUL_LAZY 0
#endif
namespace fp2_detail {
constexpr int N = fp_params::N, W = 2 * fp_params::N;
// r = x + y over K words (the callers' bounds leave no carry out).
template <int K>
__device__ __forceinline__ void add_words(u32* r, const u32* x, const u32* y) {
    r[0] = ptx::add_cc(x[0], y[0]);
#pragma unroll
    for (int k = 1; k < K - 1; k++) r[k] = ptx::addc_cc(x[k], y[k]);
    r[K - 1] = ptx::addc(x[K - 1], y[K - 1]);
}
// r = x - y mod 2^(32K); returns 1 on a borrow (x < y), else 0.
template <int K>
__device__ __forceinline__ u32 sub_words(u32* r, const u32* x, const u32* y) {
    r[0] = ptx::sub_cc(x[0], y[0]);
#pragma unroll
    for (int k = 1; k < K; k++) r[k] = ptx::subc_cc(x[k], y[k]);
    return ptx::subc(0, 0) & 1;
}
// t += p R mod 2^768 when neg is 1 (p into words N..2N-1; the carry out is the 2^768 of a
// negative two's complement t, dropped on purpose).
__device__ __forceinline__ void add_pR_if(u32* t, u32 neg) {
    const u32 mask = 0u - neg;
    t[N] = ptx::add_cc(t[N], fp_params::mod(0) & mask);
#pragma unroll
    for (int k = 1; k < N - 1; k++) t[N + k] = ptx::addc_cc(t[N + k], fp_params::mod(k) & mask);
    t[W - 1] = ptx::addc(t[W - 1], fp_params::mod(N - 1) & mask);
}
}  // namespace fp2_detail

// a b over Fp2, lazily reduced (see above): 3 products, 2 reductions.
__device__ __forceinline__ fp2_t mul_lazy(const fp2_t& a, const fp2_t& b) {
    using namespace fp2_detail;
    u32 t0[W], t1[W], s[W], sa[N], sb[N];
    mont_detail::mul_rows<N>(t0, a.c0.v, b.c0.v);
    mont_detail::mul_rows<N>(t1, a.c1.v, b.c1.v);
    add_words<W>(s, t0, t1);                       // a0 b0 + a1 b1 < 2p^2
    add_pR_if(t0, sub_words<W>(t0, t0, t1));      // c0's T
    fp2_t r;
    r.c0 = mont_detail::redc_words<fp_params>(t0);
    add_words<N>(sa, a.c0.v, a.c1.v);
    add_words<N>(sb, b.c0.v, b.c1.v);
    mont_detail::mul_rows<N>(t1, sa, sb);
    sub_words<W>(t1, t1, s);                       // c1's T: no borrow
    r.c1 = mont_detail::redc_words<fp_params>(t1);
    return r;
}

// a b - c d over Fp2, lazily reduced (see above): 6 products, 2 reductions.
__device__ __forceinline__ fp2_t mul_sub_lazy(const fp2_t& a, const fp2_t& b, const fp2_t& c, const fp2_t& d) {
    using namespace fp2_detail;
    u32 x[W], y[W], st[W], dt[W], su[W], du[W], sa[N], sb[N];
    mont_detail::mul_rows<N>(x, a.c0.v, b.c0.v);
    mont_detail::mul_rows<N>(y, a.c1.v, b.c1.v);
    add_words<W>(st, x, y);                        // a0 b0 + a1 b1
    sub_words<W>(dt, x, y);                        // a0 b0 - a1 b1 (two's complement)
    mont_detail::mul_rows<N>(x, c.c0.v, d.c0.v);
    mont_detail::mul_rows<N>(y, c.c1.v, d.c1.v);
    add_words<W>(su, x, y);
    sub_words<W>(du, x, y);
    sub_words<W>(dt, dt, du);                      // re
    add_pR_if(dt, dt[W - 1] >> 31);
    fp2_t r;
    r.c0 = mont_detail::redc_words<fp_params>(dt);
    add_words<N>(sa, a.c0.v, a.c1.v);
    add_words<N>(sb, b.c0.v, b.c1.v);
    mont_detail::mul_rows<N>(x, sa, sb);
    sub_words<W>(x, x, st);                        // a0 b1 + a1 b0
    add_words<N>(sa, c.c0.v, c.c1.v);
    add_words<N>(sb, d.c0.v, d.c1.v);
    mont_detail::mul_rows<N>(y, sa, sb);
    sub_words<W>(y, y, su);                        // c0 d1 + c1 d0
    add_pR_if(x, sub_words<W>(x, x, y));          // im
    r.c1 = mont_detail::redc_words<fp_params>(x);
    return r;
}

#if FP2_MUL_LAZY >= 2
// The curve formulas' a b - c d (ec/xyzz.cuh mul_sub; this overload wins over its template).
__device__ FP2_INLINE fp2_t mul_sub(const fp2_t a, const fp2_t b, const fp2_t c, const fp2_t d) {
    return mul_sub_lazy(a, b, c, d);
}
#endif

// Karatsuba: 3 Fp mul + 5 add/sub (or mul_lazy: 3 products, 2 reductions).
//   c0 = a0 b0 - a1 b1,  c1 = (a0 + a1)(b0 + b1) - a0 b0 - a1 b1
__device__ FP2_INLINE fp2_t operator*(const fp2_t a, const fp2_t b) {
#if FP2_MUL_LAZY
    return mul_lazy(a, b);
#else
    fp_t t0 = a.c0 * b.c0;
    fp_t t1 = a.c1 * b.c1;
    fp_t t2 = (a.c0 + a.c1) * (b.c0 + b.c1);
    return {t0 - t1, t2 - t0 - t1};
#endif
}

// (a0 + a1 u)^2 = (a0 + a1)(a0 - a1) + 2 a0 a1 u: 2 Fp mul.
__device__ FP2_INLINE fp2_t sqr(const fp2_t a) {
    fp_t t = a.c0 * a.c1;
    return {(a.c0 + a.c1) * (a.c0 - a.c1), t + t};
}

// a * K for a small constant K: K - 1 additions (for a K of 3 or 4 cheaper than a mul).
template <int K>
__device__ __forceinline__ fp_t mul_small(const fp_t& a) {
    static_assert(K >= 1 && K <= 8, "mul_small: 1 <= K <= 8");
    fp_t r = a;
#pragma unroll
    for (int i = 1; i < K; i++) r = r + a;
    return r;
}
template <int K>
__device__ __forceinline__ fp2_t mul_small(const fp2_t& a) { return {mul_small<K>(a.c0), mul_small<K>(a.c1)}; }

// 1 / a = (a0 - a1 u) / (a0^2 + a1^2); 0 maps to 0. One Fp inversion + 4 mul.
__device__ __forceinline__ fp2_t inverse(const fp2_t& a) {
    const fp_t t = inverse(sqr(a.c0) + sqr(a.c1));
    return {a.c0 * t, -(a.c1 * t)};
}

__device__ __forceinline__ fp2_t to_mont(const fp2_t& a) { return {to_mont(a.c0), to_mont(a.c1)}; }
__device__ __forceinline__ fp2_t from_mont(const fp2_t& a) { return {from_mont(a.c0), from_mont(a.c1)}; }

// Element i of an array of F in global memory (fp_t: 12 words; fp2_t: c0 then c1, 24 words).
template <class F> __device__ __forceinline__ F load_elem(const u32* base, u64 i);
template <class F> __device__ __forceinline__ void store_elem(u32* base, u64 i, const F& a);

template <> __device__ __forceinline__ fp_t load_elem<fp_t>(const u32* base, u64 i) { return load<fp_params>(base, i); }
template <> __device__ __forceinline__ void store_elem<fp_t>(u32* base, u64 i, const fp_t& a) { store(base, i, a); }
template <> __device__ __forceinline__ fp2_t load_elem<fp2_t>(const u32* base, u64 i) {
    return {load<fp_params>(base, 2 * i), load<fp_params>(base, 2 * i + 1)};
}
template <> __device__ __forceinline__ void store_elem<fp2_t>(u32* base, u64 i, const fp2_t& a) {
    store(base, 2 * i, a.c0);
    store(base, 2 * i + 1, a.c1);
}
