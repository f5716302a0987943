// Montgomery multiplication with the a*b limb products on the FP64 units (DFMA) and the
// Montgomery reduction on the integer multiplier, for any mont_t<P> field (Fp and Fr).
//
// Why: mul_wide is bound by the IMAD pipe (one IMAD.WIDE per 32x32 product, half rate: ~32 per
// clock per SM), while sm_90 has a separate FP64 pipe (64 DFMA per clock per SM) that sits idle.
// mul_f64 moves the N^2 products of a*b (half of mul_wide's IMAD.WIDEs) to the FP64 pipe and
// keeps the N^2 products of the reduction on IMAD.WIDE, so the two pipes share the work.
//
// Representation: the same as mont_t<P> at entry and exit (u32 limbs, Montgomery form with
// R = 2^(32N), inputs < p, output fully reduced < p). Inside, a and b are cut into NL limbs of
// 48 bits held as exact doubles (Fp: 8 limbs = 384 bits; Fr: 6 limbs, the top one 16 bits); a
// 48-bit limb is 1.5 words, so the cut is two byte permutes per limb and the conversion to a
// double one DADD (the limb ORed under the exponent of 2^52, minus 2^52). No other representation:
// the product T = a*b is put back into 2N u32 words, which the existing integer reduction of
// sqr_wide (mont_detail::redc_round) reduces. Per multiply, the FP64 side needs both operands
// converted (2 NL DADD); mul_f64(a, b_f64) takes an operand converted once (f64_operand).
//
// The exact 48x48-bit products (the idea of Emmart, Zheng, Weems, ARITH 2018: the FMA gives the
// exact product's two halves, the halves are summed as integers). Column k of T (bit offset 48k)
// has c(k) = min(k+1, 2NL-1-k) products x*y < 2^96. Its two accumulators are doubles:
//   acc in the binade [2^100, 2^101), where the spacing of doubles is 2^48: acc = fma(x, y, acc)
//       adds x*y rounded to a multiple of 2^48, exactly (acc starts on that grid, at ACC0; the sum
//       of <= 8 products < 2^99 keeps it inside the binade). acc's bit pattern is then an integer:
//       bits(acc) = bits(2^100) + (acc - 2^100) / 2^48 = const + H, H = the sum of the high parts.
//   lo in the binade [2^52, 2^53) (spacing 1): the rounding error of each step,
//       l = x*y - (acc_new - acc_old), is an integer with |l| <= 2^47, exactly fma(x, y, acc_old -
//       acc_new) (that difference is exact: both on the 2^48 grid of one binade); lo += l is exact
//       (|sum| <= 8 * 2^47 = 2^50 around the start 1.5 * 2^52), so bits(lo) = const + L exactly.
//   So column k is L_k + 2^48 H_k exactly: 4 FP64 ops per product (DFMA, DADD, DFMA, DADD), 3 for
//   the first of a column (its lo starts as fma(x, y, (ACC0 + 1.5 * 2^52) - acc) = 1.5 * 2^52 + l;
//   ACC0 + 1.5 * 2^52 is exact, still on the grid). The integer decode of the bit patterns is free.
// Carries (integer): the column value v_k = L_k + H_(k-1) + carry_(k-1) is kept biased,
// v'_k = v_k + 2^51 >= 0 (|L_k| <= 2^50), so its carry is an unsigned shift, carry'_k = v'_k >> 48
// = carry_k + 8, and the limb is v'_k mod 2^48 = v_k mod 2^48 (2^51 = 8 * 2^48). The sum is taken
// on the raw bit patterns, s_k = bits(lo_k) + bits(acc_(k-1)) + rc_(k-1) (one IADD3 + one IADD3.X),
// whose exponent fields add up to a constant in bits 48..63 only: s_k = 0x8968 * 2^48 + v'_k. So
// the limb is s_k's low 48 bits (the byte permutes that repack limbs into words drop the rest) and
// the raw carry rc_k = s_k >> 48 (one SHF of the high word) = 0x8968 + carry'_k (column 0:
// 0x4330 + carry'_0, s_0 = bits(lo_0)). Both offsets, 8 + 0x8968 (or 8 + 0x4330), are taken back
// in the next column by starting acc_(k-1) that many units of 2^48 below 1.5 * 2^100 (ACC0): H then
// reads low by exactly that against bits(1.5 * 2^100). 3 integer ops per column, 1 per limb to
// repack; the top column (no products) checks out as s = 0x4638 * 2^48 + the top limb.
//
// Cost per multiply, planned: Fp (N = 12, NL = 8): 64 products, 4 * 64 - 15 = 241 FP64 ops + 8
// DADD per converted operand; the reduction 144 wide mads + 12 IMAD (sqr_wide's step 3); mul_wide
// has 288 wide mads. Fr (N = 8, NL = 6): 36 products, 4 * 36 - 11 = 133 FP64 + 6 per operand; the
// reduction 56 wide mads (p_0 = 1) + 8; mul_wide 120.
// Counted in the sm_90 cubin (nvcc 13.0, ff_test.cu's chain probes, one operand converted per
// multiply, loop body / 2):
//   Fp: 568.5 instructions: 249 FP64 (128 DFMA, 121 DADD), 132 IMAD.WIDE + 12 IMAD.HI + 20.5 other
//       IMAD (308.5 IMAD-pipe slots, a wide or hi counting 2), 145 ALU (IADD3, PRMT, SHF, SEL);
//       78 registers, no spills. mul_wide: 386.5 instructions, 588 IMAD-pipe slots, 70 registers.
//   Fr: 386 instructions: 139 FP64, 182 IMAD-pipe slots, 111.5 ALU; 60 registers. mul_wide: 257
//       instructions, 296 slots.
// At 64 IMAD slots, 64 FP64 ops and 128 issued instructions per clock per SM, the Fp multiply
// is bound by the IMAD pipe (308.5 vs mul_wide's 588) just before the issue rate (568.5 / 128);
// Fr by the issue rate. Measured on the H200 (sixth session, docs/BENCHMARKS.md): Fp 27.6 G mul/s
// against mul_wide's 27.3, slower in the MSM and NTT, so a variant (MONT_MUL_F64=1), not the default.
// Exactness needs (checked in tests/f64_model.py, a word-for-word model): limbs < 2^48 and at most
// 8 products per column (any 384-bit a, b: T = a*b is exact), then a, b < p for the reduction
// (T < p R, as sqr_wide's bounds). IEEE round-to-nearest DFMA/DADD, never contracted or
// reassociated: the intrinsics __fma_rn / __dadd_rn / __dsub_rn are used so nvcc cannot.
#pragma once
#include "ff/mont32.cuh"

namespace f64_detail {
constexpr double TWO52 = 0x1p52;
constexpr double LO0 = 0x1.8p52;  // 1.5 * 2^52: lo's start; bits(lo) = 0x4330 * 2^48 + 2^51 + L
// acc's start, on the 2^48 grid of [2^100, 2^101): bits(acc) = 0x4638 * 2^48 + H - (8 + rc offset)
constexpr double ACC0_FIRST = 0x1.8p100 - (8.0 + 0x4330) * 0x1p48;  // column 0 (its rc: 0x4330 + carry')
constexpr double ACC0 = 0x1.8p100 - (8.0 + 0x8968) * 0x1p48;        // columns >= 1 (rc: 0x8968 + carry')
constexpr u32 EXP52 = 0x43300000u;  // high word of 2^52

__device__ __forceinline__ u64 bits(double x) { return (u64)__double_as_longlong(x); }
__device__ __forceinline__ double from_words(u32 hi, u32 lo) { return __hiloint2double((int)hi, (int)lo); }
// A limb < 2^52 given as its two words (hi already ORed with EXP52) -> the exact double.
__device__ __forceinline__ double limb_double(u32 hi_exp, u32 lo) { return __dsub_rn(from_words(hi_exp, lo), TWO52); }

// Column k of a * b into (acc, lo): c(k) products, the first starting both accumulators.
template <int NL>
__device__ __forceinline__ void column(double& acc, double& lo, const double* a, const double* b, int k) {
    const int i0 = k < NL ? 0 : k - NL + 1, i1 = k < NL ? k : NL - 1;
    const double acc0 = k == 0 ? ACC0_FIRST : ACC0;
    acc = __fma_rn(a[i0], b[k - i0], acc0);
    lo = __fma_rn(a[i0], b[k - i0], __dsub_rn(acc0 + LO0, acc));  // 1.5 * 2^52 + l (acc0 + LO0 exact)
#pragma unroll
    for (int i = i0 + 1; i <= i1; i++) {
        const double x = a[i], y = b[k - i];
        const double nacc = __fma_rn(x, y, acc);
        lo = __dadd_rn(lo, __fma_rn(x, y, __dsub_rn(acc, nacc)));
        acc = nacc;
    }
}
}  // namespace f64_detail

// An operand cut into NL = ceil(32 N / 48) limbs of 48 bits, each an exact double.
template <class P>
struct f64_operand {
    static constexpr int N = P::N;
    static constexpr int NL = (32 * N + 47) / 48;
    static_assert(NL % 2 == 0, "limbs are cut in pairs of 3 words");
    double v[NL];
};

// 2 byte permutes (PRMT) + 1 DADD per limb (limb 2q: words 3q and the low half of 3q+1; limb
// 2q+1: the high half of 3q+1 and word 3q+2).
template <class P>
__device__ __forceinline__ f64_operand<P> to_f64(const mont_t<P>& a) {
    using namespace f64_detail;
    constexpr int N = P::N;
    f64_operand<P> r;
#pragma unroll
    for (int q = 0; q < f64_operand<P>::NL / 2; q++) {
        const u32 w0 = a.v[3 * q], w1 = 3 * q + 1 < N ? a.v[3 * q + 1] : 0, w2 = 3 * q + 2 < N ? a.v[3 * q + 2] : 0;
        r.v[2 * q] = limb_double(__byte_perm(w1, EXP52, 0x7610), w0);
        r.v[2 * q + 1] = limb_double(__byte_perm(w2, EXP52, 0x7632), __byte_perm(w1, w2, 0x5432));
    }
    return r;
}

// T = a * b (any limbs < 2^48) as 2N words t[0..2N-1] (T < 2^(64N) when a, b < 2^(32N)).
template <class P>
__device__ __forceinline__ void product_f64(u32* t, const f64_operand<P>& a, const f64_operand<P>& b) {
    using namespace f64_detail;
    constexpr int N = P::N, NL = f64_operand<P>::NL, NC = 2 * NL;  // columns 0..NC-1 (NC-1: carry only)
    u64 limb[NC];
    u32 rc = 0;  // raw carry: 0x4330 or 0x8968 + carry'
    double acc_prev = 0;
#pragma unroll
    for (int k = 0; k < NC; k++) {
        double acc = 0, lo = 0;
        if (k < NC - 1) column<NL>(acc, lo, a.v, b.v, k);
        u64 s;
        if (k == 0) s = bits(lo);
        else if (k < NC - 1) s = bits(lo) + bits(acc_prev) + (u64)rc;
        else s = bits(acc_prev) + (u64)rc;
        rc = (u32)(s >> 48);
        limb[k] = s;  // its low 48 bits are limb k of T; bits 48.. (constant + carry) are dropped below
        acc_prev = acc;
    }
    // limbs (48 bits) -> words: 3 words per 2 limbs, one PRMT for each of the two shared words
#pragma unroll
    for (int q = 0; q < NL; q++) {
        const u32 l0 = (u32)limb[2 * q], h0 = (u32)(limb[2 * q] >> 32);
        const u32 l1 = (u32)limb[2 * q + 1], h1 = (u32)(limb[2 * q + 1] >> 32);
        if (3 * q < 2 * N) t[3 * q] = l0;
        if (3 * q + 1 < 2 * N) t[3 * q + 1] = __byte_perm(h0, l1, 0x5410);
        if (3 * q + 2 < 2 * N) t[3 * q + 2] = __byte_perm(l1, h1, 0x5432);
    }
}

// a * b * R^-1 mod p (= mul_wide(a, b), bit for bit) with b already converted.
template <class P>
__device__ __forceinline__ mont_t<P> mul_f64(const mont_t<P>& a, const f64_operand<P>& b) {
    u32 t[2 * P::N];
    product_f64<P>(t, to_f64(a), b);
    return mont_detail::redc_words<P>(t);
}

// a * b * R^-1 mod p (= mul_wide(a, b), bit for bit). Inputs < p.
template <class P>
__device__ __forceinline__ mont_t<P> mul_f64(const mont_t<P>& a, const mont_t<P>& b) {
    return mul_f64(a, to_f64(b));
}

// a * b * R^-1 mod p with both operands already converted (to_f64 of values < p).
template <class P>
__device__ __forceinline__ mont_t<P> mul_f64(const f64_operand<P>& a, const f64_operand<P>& b) {
    u32 t[2 * P::N];
    product_f64<P>(t, a, b);
    return mont_detail::redc_words<P>(t);
}

// a * a * R^-1 mod p (= sqr_wide(a)): the general product with one conversion (64 products for
// Fp; a dedicated squaring would need 36). Input < p.
template <class P>
__device__ __forceinline__ mont_t<P> sqr_f64(const mont_t<P>& a) {
    const f64_operand<P> x = to_f64(a);
    return mul_f64(x, x);
}
