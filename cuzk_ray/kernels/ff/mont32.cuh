// Generic Montgomery arithmetic over N 32-bit limbs (little-endian), parameterised per field.
//
// A field is described by a parameter struct P with
//     static constexpr int N;              // limbs
//     static constexpr u32 INV;            // -p^-1 mod 2^32
//     static constexpr u32 TOP;            // the top limb of p (mul_sub_wide: is 3p < R?)
//     __device__ static u32 mod(int i);    // limb i of p      (__constant__ memory, so with a
//     __device__ static u32 one(int i);    // limb i of R mod p  compile-time index the load
//     __device__ static u32 r2(int i);     // limb i of R^2 mod p  folds into the instruction)
//     __device__ static u32 pm2(int i);    // limb i of p - 2 (Fermat inverse exponent)
// with R = 2^(32N). Requires 2p < R (true for Fr: 255 of 256 bits, Fp: 381 of 384), so sums of
// two reduced values never overflow N limbs and the CIOS accumulator stays below 2p.
//
// Costs (N limbs): add/sub ~2N integer ops; mul = 4N^2 mad (N=8: 256, N=12: 576) + ~3N other;
// sqr = mul, or sqr_wide (~3/4 of mul_wide's mads) with MONT_MUL_WIDE; inverse = Fermat,
// ~log2(p) sqr + ~log2(p)/2 mul.
#pragma once
#include "ff/ptx.cuh"

template <class P>
struct mont_t {
    static constexpr int N = P::N;
    u32 v[N];

    __device__ __forceinline__ static mont_t zero() {
        mont_t r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = 0;
        return r;
    }
    __device__ __forceinline__ static mont_t one() {  // Montgomery form of 1 (R mod p)
        mont_t r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = P::one(i);
        return r;
    }
    __device__ __forceinline__ static mont_t r2() {
        mont_t r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = P::r2(i);
        return r;
    }
    __device__ __forceinline__ bool is_zero() const {
        u32 acc = 0;
#pragma unroll
        for (int i = 0; i < N; i++) acc |= v[i];
        return acc == 0;
    }
};

// Conditional subtraction of p from an (N+1)-limb value t < 2p; hi is limb N.
template <class P>
__device__ __forceinline__ mont_t<P> mont_reduce_once(const u32* t, u32 hi) {
    constexpr int N = P::N;
    u32 s[N];
    s[0] = ptx::sub_cc(t[0], P::mod(0));
#pragma unroll
    for (int j = 1; j < N; j++) s[j] = ptx::subc_cc(t[j], P::mod(j));
    u32 borrow = ptx::subc(hi, 0);  // 0xffffffff when t < p
    mont_t<P> r;
#pragma unroll
    for (int j = 0; j < N; j++) r.v[j] = borrow ? t[j] : s[j];
    return r;
}

// a + b mod p. ~2N ops.
template <class P>
__device__ __forceinline__ mont_t<P> operator+(const mont_t<P>& a, const mont_t<P>& b) {
    constexpr int N = P::N;
    u32 t[N];
    t[0] = ptx::add_cc(a.v[0], b.v[0]);
#pragma unroll
    for (int j = 1; j < N; j++) t[j] = ptx::addc_cc(a.v[j], b.v[j]);
    u32 hi = ptx::addc(0, 0);  // always 0 when 4p < R; kept so the reduction is exact
    return mont_reduce_once<P>(t, hi);
}

// a - b mod p. ~2N ops.
template <class P>
__device__ __forceinline__ mont_t<P> operator-(const mont_t<P>& a, const mont_t<P>& b) {
    constexpr int N = P::N;
    u32 t[N];
    t[0] = ptx::sub_cc(a.v[0], b.v[0]);
#pragma unroll
    for (int j = 1; j < N; j++) t[j] = ptx::subc_cc(a.v[j], b.v[j]);
    u32 mask = ptx::subc(0, 0);  // 0xffffffff on borrow: add p back
    mont_t<P> r;
    r.v[0] = ptx::add_cc(t[0], P::mod(0) & mask);
#pragma unroll
    for (int j = 1; j < N - 1; j++) r.v[j] = ptx::addc_cc(t[j], P::mod(j) & mask);
    r.v[N - 1] = ptx::addc(t[N - 1], P::mod(N - 1) & mask);
    return r;
}

template <class P>
__device__ __forceinline__ mont_t<P> operator-(const mont_t<P>& a) {
    return mont_t<P>::zero() - a;
}

// Montgomery product a*b*R^-1 mod p, CIOS with one word of b per round.
// Per round: t += a*b_i (N lo-mads in one carry chain, N hi-mads in a second chain shifted by
// a word), m = t_0 * INV, t += m*p (same two chains), t >>= 32: 4N mad + 2 addc + 1 mul.
// 4N^2 mads in all (N=8: 256, N=12: 576), ~4N^2 + 3N instructions.
// No carry word beyond t_N is needed: with a, b < p and t < 2p at the start of a round,
// t + a b_i + m p < p (2 + 2^33) < 2^(32(N+1)) because p < 2^(32N - 1) - p/2^31 (Fr: 255 bits,
// Fp: 381 bits), so the last hi-mad of each chain cannot carry out.
// Inputs must be < p; the output is then fully reduced (< p).
template <class P>
__device__ __forceinline__ mont_t<P> mul_cios(const mont_t<P>& a, const mont_t<P>& b) {
    constexpr int N = P::N;
    u32 t[N + 1];
#pragma unroll
    for (int j = 0; j <= N; j++) t[j] = 0;
#pragma unroll
    for (int i = 0; i < N; i++) {
        const u32 bi = b.v[i];
        t[0] = ptx::mad_lo_cc(a.v[0], bi, t[0]);
#pragma unroll
        for (int j = 1; j < N; j++) t[j] = ptx::madc_lo_cc(a.v[j], bi, t[j]);
        t[N] = ptx::addc(t[N], 0);
        t[1] = ptx::mad_hi_cc(a.v[0], bi, t[1]);
#pragma unroll
        for (int j = 1; j < N - 1; j++) t[j + 1] = ptx::madc_hi_cc(a.v[j], bi, t[j + 1]);
        t[N] = ptx::madc_hi(a.v[N - 1], bi, t[N]);

        const u32 m = t[0] * P::INV;
        t[0] = ptx::mad_lo_cc(m, P::mod(0), t[0]);  // low word becomes 0
#pragma unroll
        for (int j = 1; j < N; j++) t[j] = ptx::madc_lo_cc(m, P::mod(j), t[j]);
        t[N] = ptx::addc(t[N], 0);
        t[1] = ptx::mad_hi_cc(m, P::mod(0), t[1]);
#pragma unroll
        for (int j = 1; j < N - 1; j++) t[j + 1] = ptx::madc_hi_cc(m, P::mod(j), t[j + 1]);
        t[N] = ptx::madc_hi(m, P::mod(N - 1), t[N]);

#pragma unroll
        for (int j = 0; j < N; j++) t[j] = t[j + 1];
        t[N] = 0;
    }
    return mont_reduce_once<P>(t, 0);
}

// The same product, a*b*R^-1 mod p, with the accumulator split into two arrays so that every
// 32x32 product is added as a 64-bit pair: mad.lo.cc + madc.hi.cc of the same operands into two
// adjacent words, which ptxas fuses into one IMAD.WIDE.U32(.X) (the sppark layout). operator*
// (mul_cios) above adds lo and hi halves in two chains shifted by a word; ptxas compiles each madc.hi.cc
// to IMAD.HI + IADD3.X, ~640 SASS instructions per Fr mul (counted in the cubin). This one:
// 4 chains of N/2 wide mads per round + 4 ops (Fr: p_0 = 1 makes one mad of each round two
// adds); measured on the H200: Fr 51.6 G mul/s vs 35.9 for operator*.
//   T = E + 2^32 O: E holds words at absolute positions 0..N-1 (pairs (0,1), (2,3), ...: a[j]
//   b_i for even j), O words at 1..N (a[j] b_i for odd j). After m p is added E[0] = 0 and
//   T / 2^32 = O + E[1] + 2^32 (E >> 64): the next round takes O as its aligned array (E[1]
//   added into its word 0) and E shifted down two words as its odd array; that shift is free,
//   folded into the destinations of the first chain (madc_rshift). The carry out of the aligned
//   chain goes into the odd array's top word.
// Bounds (why no carry is dropped): with a < p, b < p, CIOS keeps T < a + p at round start and
// T + a b_i + m p < 2^32 (a + p) < 2^(32(N+1)) (2p < 2^(32N): Fr 255 bits, Fp 381). Every
// array is a non-negative part of T, so 2^32 O <= T gives O < 2^(32N): neither the odd chain
// of m p nor the folded carries can carry out of O's top word. Output < 2p before the final
// conditional subtraction, so the result is fully reduced (< p). Needs even N.
namespace mont_detail {
// acc[j], acc[j+1] += a[j] * bi for even j, one carry chain (the carry out is returned in CC).
template <int N>
__device__ __forceinline__ void cmad_pairs(u32* acc, const u32* a, u32 bi) {
    acc[0] = ptx::mad_lo_cc(a[0], bi, acc[0]);
    acc[1] = ptx::madc_hi_cc(a[0], bi, acc[1]);
#pragma unroll
    for (int j = 2; j < N; j += 2) {
        acc[j] = ptx::madc_lo_cc(a[j], bi, acc[j]);
        acc[j + 1] = ptx::madc_hi_cc(a[j], bi, acc[j + 1]);
    }
}
// odd[j], odd[j+1] = odd[j+2], odd[j+3] + a[j] * bi + carry in (the array shifts down 2 words;
// the two top words get the last product alone). No carry out (see the bounds above).
template <int N>
__device__ __forceinline__ void madc_rshift(u32* odd, const u32* a, u32 bi) {
#pragma unroll
    for (int j = 0; j < N - 2; j += 2) {
        odd[j] = ptx::madc_lo_cc(a[j], bi, odd[j + 2]);
        odd[j + 1] = ptx::madc_hi_cc(a[j], bi, odd[j + 3]);
    }
    odd[N - 2] = ptx::madc_lo_cc(a[N - 2], bi, 0);
    odd[N - 1] = ptx::madc_hi(a[N - 2], bi, 0);
}
// ev[j], ev[j+1] += p[j] * m for even j (the even limbs of m p), one carry chain (carry out in CC).
template <class P>
__device__ __forceinline__ void cmad_mod_even(u32* ev, const u32* p, u32 m) {
    constexpr int N = P::N;
    if (P::INV == 0xffffffffu) {
        // p_0 = 1 (INV = -p_0^-1 = -1; Fr): m p_0 = m, so the first pair is ev[0] + m (= 0,
        // carry out when ev[0] != 0) and ev[1] + 0: two adds instead of a wide mad.
        ev[0] = ptx::add_cc(ev[0], m);
        ev[1] = ptx::addc_cc(ev[1], 0);
#pragma unroll
        for (int j = 2; j < N; j += 2) {
            ev[j] = ptx::madc_lo_cc(p[j], m, ev[j]);
            ev[j + 1] = ptx::madc_hi_cc(p[j], m, ev[j + 1]);
        }
    } else {
        cmad_pairs<N>(ev, p, m);
    }
}
// The second half of a CIOS round: m = ev[0] * INV, then + m p (ev[0] becomes 0).
template <class P>
__device__ __forceinline__ void redc_mp(u32* ev, u32* od) {
    constexpr int N = P::N;
    const u32 m = ev[0] * P::INV;
    u32 p[N];
#pragma unroll
    for (int j = 0; j < N; j++) p[j] = P::mod(j);
    cmad_pairs<N>(od, p + 1, m);  // carry out is 0: O < 2^(32N)
    cmad_mod_even<P>(ev, p, m);   // ev[0] becomes 0
    od[N - 1] = ptx::addc(od[N - 1], 0);
}
// The first half of a CIOS round on (aligned ev, shifted od): add a * bi (first: ev, od were empty).
template <int N>
__device__ __forceinline__ void mad_round(u32* ev, u32* od, const u32* a, u32 bi, bool first) {
    if (first) {
#pragma unroll
        for (int j = 0; j < N; j += 2) {
            const u64 pe = (u64)a[j] * bi, po = (u64)a[j + 1] * bi;
            ev[j] = (u32)pe; ev[j + 1] = (u32)(pe >> 32);
            od[j] = (u32)po; od[j + 1] = (u32)(po >> 32);
        }
    } else {
        ev[0] = ptx::add_cc(ev[0], od[1]);  // E[1] of the last round sits at position 0 now
        madc_rshift<N>(od, a + 1, bi);      // carry of that add enters at position 1 (od[0])
        cmad_pairs<N>(ev, a, bi);
        od[N - 1] = ptx::addc(od[N - 1], 0);
    }
}
// The value after the last round: t = ev + (od >> 32) (od is that round's aligned array, od[0] = 0).
template <int N>
__device__ __forceinline__ void fold_rounds(u32* t, const u32* ev, const u32* od) {
    t[0] = ptx::add_cc(ev[0], od[1]);
#pragma unroll
    for (int j = 1; j < N - 1; j++) t[j] = ptx::addc_cc(ev[j], od[j + 1]);
    t[N - 1] = ptx::addc(ev[N - 1], 0);
}
// One CIOS round on (aligned ev, shifted od): add a * bi (first: ev, od were empty), then m p.
template <class P>
__device__ __forceinline__ void mad_redc_round(u32* ev, u32* od, const u32* a, u32 bi, bool first) {
    constexpr int N = P::N;
    mad_round<N>(ev, od, a, bi, first);
    redc_mp<P>(ev, od);
}
// A round of mul_sub_wide: add a * bi and c * di, then m p. c di at the positions of a bi: the
// even limbs into ev (its carry into od's top word, as for a bi), the odd ones into od.
template <class P>
__device__ __forceinline__ void mad2_redc_round(u32* ev, u32* od, const u32* a, u32 bi, const u32* c, u32 di,
                                                bool first) {
    constexpr int N = P::N;
    mad_round<N>(ev, od, a, bi, first);
    cmad_pairs<N>(ev, c, di);
    od[N - 1] = ptx::addc(od[N - 1], 0);
    cmad_pairs<N>(od, c + 1, di);  // no carry out: O < 2^(32N) (see mul_sub_wide)
    redc_mp<P>(ev, od);
}
}  // namespace mont_detail

template <class P>
__device__ __forceinline__ mont_t<P> mul_wide(const mont_t<P>& a, const mont_t<P>& b) {
    constexpr int N = P::N;
    static_assert(N % 2 == 0, "mul_wide needs an even number of limbs");
    u32 ev[N], od[N];
#pragma unroll
    for (int i = 0; i < N; i += 2) {
        mont_detail::mad_redc_round<P>(ev, od, a.v, b.v[i], i == 0);
        mont_detail::mad_redc_round<P>(od, ev, a.v, b.v[i + 1], false);
    }
    u32 t[N];
    mont_detail::fold_rounds<N>(t, ev, od);  // T < 2p
    return mont_reduce_once<P>(t, 0);
}

// (a b - c d) R^-1 mod p in one Montgomery reduction: CIOS over the sum a b + (p - c) d (each
// round adds a b_i and (p - c) d_i, then m p), so the pair costs 3 N^2 wide mads against 4 N^2 for
// two mul_wide (Fp: 432 against 576); the XYZZ formulas' Y3 = R (Q - X3) - Y1 PPP is one
// (ec/xyzz.cuh mul_sub). Bounds: c' = -c (reduced, < p); the CIOS value stays below a + c' + p <
// 3p at every round start (T + a b_i + c' d_i + m p < 2^32 (a + c' + p)), so the odd array stays
// below 2^(32N) and the result, < 3p, needs two conditional subtractions. That needs 3p < R:
// true for Fp (381 of 384 bits), not for Fr (3r > 2^256), which takes two mul_wide instead.
// Inputs < p; even N. mul_sub (below) uses it in the modules that define MONT_MUL_SUB 1.
template <class P>
__device__ __forceinline__ mont_t<P> mul_sub_wide(const mont_t<P>& a, const mont_t<P>& b, const mont_t<P>& c,
                                                  const mont_t<P>& d) {
    constexpr int N = P::N;
    static_assert(N % 2 == 0, "mul_sub_wide needs an even number of limbs");
    if constexpr (3ull * (P::TOP + 1ull) > (1ull << 32)) {  // 3p >= R possible: no spare bits
        return mul_wide(a, b) - mul_wide(c, d);
    }
    const mont_t<P> nc = -c;
    u32 ev[N], od[N];
#pragma unroll
    for (int i = 0; i < N; i += 2) {
        mont_detail::mad2_redc_round<P>(ev, od, a.v, b.v[i], nc.v, d.v[i], i == 0);
        mont_detail::mad2_redc_round<P>(od, ev, a.v, b.v[i + 1], nc.v, d.v[i + 1], false);
    }
    u32 t[N];
    mont_detail::fold_rounds<N>(t, ev, od);  // T < 3p
    const mont_t<P> once = mont_reduce_once<P>(t, 0);
    return mont_reduce_once<P>(once.v, 0);
}

// a^2 R^-1 mod p by a dedicated squaring, in mul_wide's 64-bit-pair layout (each 32x32 product is
// a mad.lo.cc + madc.hi.cc pair of the same operands into two adjacent words: one IMAD.WIDE).
// Wide mads (N limbs): N(N-1)/2 cross products a_i a_j (i < j) + N squares a_i^2 + N^2 for the
// reduction (Fr: N(N-1), mul_wide's p_0 = 1 shortcut): Fp 66 + 12 + 144 = 222 against mul_wide's
// 288, Fr 28 + 8 + 56 = 92 against 120; plus ~8N adds (merge, doubling, adding the high half,
// the conditional subtraction) and 3 ops per reduction round. In the sm_90 cubin (ff_test.cu's
// chain probes, per operation): Fp 222 wide products and ~372 instructions against mul_wide's 288
// and ~387, Fr 92 and ~258 against 120 and ~257 (the extra adds go to the ALU pipe, the products
// to the IMAD pipe that bounds mul_wide). The steps:
//   1. C = sum_{i<j} a_i a_j 2^(32(i+j)) into E (pairs at even positions) and O (odd positions),
//      both indexed by absolute word position (sqr_row: row i is a_i times a_j, j > i).
//   2. t = 2C + sum a_i^2 2^(64i) = a^2: merge E and O (2N-3 adds), double (2N-1 adds), add the
//      squares (one chain of N wide mads at the even positions).
//   3. L = t mod R by N reduction rounds (redc_round: mul_wide's rounds without the a b_i
//      products) to (L + M p) / R, M < R; then add H = t / R, and subtract p once if needed.
// Bounds (why no carry is dropped; steps 1-2 need only a < R, step 3 a < p):
//   - After rows 0..i the arrays hold C_i = sum_{r<=i} a_r 2^(32r) sum_{j>r} a_j 2^(32j)
//     < 2^(32N) (2^(32(i+1)) - 1) < 2^(32(N+i+1)) exactly: the one carry of the row that can meet
//     an occupied word goes into word i+N, and overflowing there would need C_i >= 2^(32(N+i+1)).
//     The other chain ends in a pair not yet written (its top word: hi(a_i a_j) + carry <= 2^32 - 1).
//   - C = sum_j a_j 2^(32j) (a mod 2^(32j)) < (2^32 - 1) sum_j 2^(64j) < 2^(64N) / (2^32 + 1)
//     < 2^(32(2N-1)): no carry out of the merge at word 2N-2; the doubling's carry is word 2N-1
//     (always 0 for a < 2^(32N-1), kept for exactness); a^2 < R^2: none out of the squares.
//   - Reduction, as in mul_wide: at the start of round k the value is < L / 2^(32k) + p, adding
//     m p keeps it below 2^(32N) + (2^32 + 1) p < 2^(32(N+1)) (p < 2^(32N-1)), and each array is
//     a non-negative part of it, so the carry into the odd array's top word never overflows.
//     Then (L + M p) / R < 1 + p, H <= (p-1)^2 / R < p, so the sum (= a^2 R^-1 mod p) is < 2p < R
//     (no carry out) and one conditional subtraction leaves it fully reduced (< p).
// Input must be < p. Needs even N >= 4.
namespace mont_detail {
// Row i >= 1 of the cross products into the position-indexed arrays: top gets a_i a_j for odd
// j > i (its last pair, a_i a_(N-1) at words i+N-1 and i+N, not yet written), low those for even
// j > i (ending at word i+N-1; its carry goes into top's word i+N). top is O for even i, E for odd.
template <int N>
__device__ __forceinline__ void sqr_row(u32* top, u32* low, const u32* a, int i) {
    const u32 ai = a[i];
    const int jt = (i & 1) ? i + 2 : i + 1, jl = (i & 1) ? i + 1 : i + 2;
    if (jt == N - 1) {
        const u64 pr = (u64)a[N - 1] * ai;
        top[i + N - 1] = (u32)pr; top[i + N] = (u32)(pr >> 32);
    } else {
        top[i + jt] = ptx::mad_lo_cc(a[jt], ai, top[i + jt]);
        top[i + jt + 1] = ptx::madc_hi_cc(a[jt], ai, top[i + jt + 1]);
#pragma unroll
        for (int j = jt + 2; j < N - 1; j += 2) {
            top[i + j] = ptx::madc_lo_cc(a[j], ai, top[i + j]);
            top[i + j + 1] = ptx::madc_hi_cc(a[j], ai, top[i + j + 1]);
        }
        top[i + N - 1] = ptx::madc_lo_cc(a[N - 1], ai, 0);
        top[i + N] = ptx::madc_hi(a[N - 1], ai, 0);
    }
    if (jl <= N - 2) {
        low[i + jl] = ptx::mad_lo_cc(a[jl], ai, low[i + jl]);
        low[i + jl + 1] = ptx::madc_hi_cc(a[jl], ai, low[i + jl + 1]);
#pragma unroll
        for (int j = jl + 2; j <= N - 2; j += 2) {
            low[i + j] = ptx::madc_lo_cc(a[j], ai, low[i + j]);
            low[i + j + 1] = ptx::madc_hi_cc(a[j], ai, low[i + j + 1]);
        }
        top[i + N] = ptx::addc(top[i + N], 0);
    }
}
// One reduction round on (aligned ev, shifted od), as mad_redc_round without the a * bi products:
// fold od's word at position 0 into ev[0], m = ev[0] * INV, od = (od >> 64) + the odd limbs of
// m p (+ that fold's carry), ev += the even limbs. first: od is empty.
template <class P>
__device__ __forceinline__ void redc_round(u32* ev, u32* od, bool first) {
    constexpr int N = P::N;
    u32 p[N];
#pragma unroll
    for (int j = 0; j < N; j++) p[j] = P::mod(j);
    u32 m;
    if (first) {
        m = ev[0] * P::INV;
#pragma unroll
        for (int j = 0; j < N; j += 2) {
            const u64 po = (u64)p[j + 1] * m;
            od[j] = (u32)po; od[j + 1] = (u32)(po >> 32);
        }
    } else {
        ev[0] = ptx::add_cc(ev[0], od[1]);
        m = ev[0] * P::INV;             // not a carry instruction: the carry waits in CC.CF
        madc_rshift<N>(od, p + 1, m);   // ... and enters at position 1 (od[0])
    }
    cmad_mod_even<P>(ev, p, m);  // ev[0] becomes 0
    od[N - 1] = ptx::addc(od[N - 1], 0);
}

// T R^-1 mod p for T = e[0..2N-1] < p R (sqr_wide's step 3; mul_f64's reduction): N rounds of
// redc_round on the low half e[0..N-1] in place (o the second array), then (L + M p) / R =
// e + (o >> 32) (o is the aligned array of the last round, o[0] = 0), + the high half, one
// conditional subtraction; result < p.
template <class P>
__device__ __forceinline__ mont_t<P> redc_words(u32* e) {
    constexpr int N = P::N;
    u32 o[N];
#pragma unroll
    for (int i = 0; i < N; i += 2) {
        redc_round<P>(e, o, i == 0);
        redc_round<P>(o, e, false);
    }
    u32 t[N];
    fold_rounds<N>(t, e, o);
    t[0] = ptx::add_cc(t[0], e[N]);
#pragma unroll
    for (int j = 1; j < N; j++) t[j] = ptx::addc_cc(t[j], e[N + j]);
    return mont_reduce_once<P>(t, ptx::addc(0, 0));
}
}  // namespace mont_detail

template <class P>
__device__ __forceinline__ mont_t<P> sqr_wide(const mont_t<P>& x) {
    constexpr int N = P::N;
    static_assert(N % 2 == 0 && N >= 4, "sqr_wide needs an even number of limbs, at least 4");
    const u32* a = x.v;
    u32 e[2 * N], o[2 * N];  // word k at position k; e[0..1], o[0] and the top words stay unused
    // 1. cross products; row 0 writes fresh words only
#pragma unroll
    for (int j = 1; j < N; j += 2) {
        const u64 pr = (u64)a[j] * a[0];
        o[j] = (u32)pr; o[j + 1] = (u32)(pr >> 32);
    }
#pragma unroll
    for (int j = 2; j < N; j += 2) {
        const u64 pr = (u64)a[j] * a[0];
        e[j] = (u32)pr; e[j + 1] = (u32)(pr >> 32);
    }
#pragma unroll
    for (int i = 1; i < N - 1; i++) {
        if (i & 1) mont_detail::sqr_row<N>(e, o, a, i);
        else mont_detail::sqr_row<N>(o, e, a, i);
    }
    // 2. t = 2 (e + o) + squares, in e (word 0 of e + o is 0, word 1 is o[1])
    e[2] = ptx::add_cc(e[2], o[2]);
#pragma unroll
    for (int k = 3; k < 2 * N - 2; k++) e[k] = ptx::addc_cc(e[k], o[k]);
    e[2 * N - 2] = ptx::addc(o[2 * N - 2], 0);
    e[0] = 0;
    e[1] = ptx::add_cc(o[1], o[1]);
#pragma unroll
    for (int k = 2; k < 2 * N - 1; k++) e[k] = ptx::addc_cc(e[k], e[k]);
    e[2 * N - 1] = ptx::addc(0, 0);
    e[0] = ptx::mad_lo_cc(a[0], a[0], e[0]);
    e[1] = ptx::madc_hi_cc(a[0], a[0], e[1]);
#pragma unroll
    for (int i = 1; i < N - 1; i++) {
        e[2 * i] = ptx::madc_lo_cc(a[i], a[i], e[2 * i]);
        e[2 * i + 1] = ptx::madc_hi_cc(a[i], a[i], e[2 * i + 1]);
    }
    e[2 * N - 2] = ptx::madc_lo_cc(a[N - 1], a[N - 1], e[2 * N - 2]);
    e[2 * N - 1] = ptx::madc_hi(a[N - 1], a[N - 1], e[2 * N - 1]);
    // 3. reduce: the low half e[0..N-1] by N rounds, + the high half (redc_words)
    return mont_detail::redc_words<P>(e);
}

// a * b R^-1 mod p with the product a * b by one level of Karatsuba, then sqr_wide's reduction
// (redc_words). Halves of H = N/2 limbs: z0 = a0 b0, z2 = a1 b1, m = |a0 - a1| |b1 - b0|, and
// a0 b1 + a1 b0 = z0 + z2 + (a0 - a1)(b1 - b0) = z0 + z2 -+ m (the sign from the two borrows), so
// the product takes 3 H^2 = 3/4 N^2 wide mads (Fp 108, Fr 48) against mul_wide's N^2, for ~10N
// more adds on the ALU pipe (the differences, z1, placing z1 at word H). With the reduction (Fp
// 144 wide mads, Fr 56): Fp 252 against mul_wide's 288, Fr 104 against 120. Measured on the H200
// no faster (Fp 27.5 against 27.2 G mul/s; slower in the MSM and NTT): the instructions issued
// bind as well as the IMAD slots (docs/BENCHMARKS.md). A compile-time variant of operator*
// (MONT_MUL_KARA), kept with its tests as the record.
// Bounds: halves < 2^(32H), so z0, z2, m < 2^(32N) and z1 = a0 b1 + a1 b0 < 2^(32N+1) (N+1 words,
// top word 0 or 1); t = a b < p^2 < p R, as redc_words needs. Inputs < p; N even, H even.
namespace mont_detail {
// r[0..2H-1] = x * y for H-limb x, y (H even), schoolbook in sqr_wide's layout: E holds the 64-bit
// pairs that start at even words, O those at odd words, both indexed by absolute word position,
// so each IMAD.WIDE writes an aligned register pair (a layout whose pairs change parity from row to
// row cost ~95 extra moves per Fp product). Row i adds x_j y_i at words i+j in two carry chains:
// the even j (words i..i+H-1; into E for even i, O for odd i) with its carry into the fresh word
// i+H, the odd j (words i+1..i+H, the other array; its top word fresh, no carry out, as that array
// is < 2^(32(i+H+1)) after row i). Row 0 writes fresh words; then r = E + O (no carry out: x y <
// 2^(64H)).
template <int H>
__device__ __forceinline__ void mul_rows(u32* r, const u32* x, const u32* y) {
    static_assert(H % 2 == 0 && H >= 4, "mul_rows needs an even number of limbs, at least 4");
    u32 E[2 * H], O[2 * H];
#pragma unroll
    for (int j = 0; j < H; j += 2) {
        const u64 pe = (u64)x[j] * y[0], po = (u64)x[j + 1] * y[0];
        E[j] = (u32)pe; E[j + 1] = (u32)(pe >> 32);
        O[j + 1] = (u32)po; O[j + 2] = (u32)(po >> 32);
    }
    E[H] = 0;  // row 1's odd-j chain ends on it
#pragma unroll
    for (int i = 1; i < H; i++) {
        const u32 yi = y[i];
        u32* lo = (i & 1) ? O : E;  // the even j: pairs at words i + j, parity of i
        u32* hi = (i & 1) ? E : O;  // the odd j
        lo[i] = ptx::mad_lo_cc(x[0], yi, lo[i]);
        lo[i + 1] = ptx::madc_hi_cc(x[0], yi, lo[i + 1]);
#pragma unroll
        for (int j = 2; j < H; j += 2) {
            lo[i + j] = ptx::madc_lo_cc(x[j], yi, lo[i + j]);
            lo[i + j + 1] = ptx::madc_hi_cc(x[j], yi, lo[i + j + 1]);
        }
        lo[i + H] = ptx::addc(0, 0);
        hi[i + 1] = ptx::mad_lo_cc(x[1], yi, hi[i + 1]);
        hi[i + 2] = ptx::madc_hi_cc(x[1], yi, hi[i + 2]);
#pragma unroll
        for (int j = 3; j < H - 1; j += 2) {
            hi[i + j] = ptx::madc_lo_cc(x[j], yi, hi[i + j]);
            hi[i + j + 1] = ptx::madc_hi_cc(x[j], yi, hi[i + j + 1]);
        }
        hi[i + H - 1] = ptx::madc_lo_cc(x[H - 1], yi, hi[i + H - 1]);
        hi[i + H] = ptx::madc_hi(x[H - 1], yi, 0);
    }
    r[0] = E[0];
    r[1] = ptx::add_cc(E[1], O[1]);
#pragma unroll
    for (int k = 2; k < 2 * H - 1; k++) r[k] = ptx::addc_cc(E[k], O[k]);
    r[2 * H - 1] = ptx::addc(E[2 * H - 1], O[2 * H - 1]);
}
// d = |x - y| over H limbs; returns 0xffffffff when x < y, else 0.
template <int H>
__device__ __forceinline__ u32 abs_diff(u32* d, const u32* x, const u32* y) {
    d[0] = ptx::sub_cc(x[0], y[0]);
#pragma unroll
    for (int k = 1; k < H; k++) d[k] = ptx::subc_cc(x[k], y[k]);
    const u32 mask = ptx::subc(0, 0);
    d[0] = ptx::add_cc(d[0] ^ mask, mask & 1);  // x < y: ~d + 1 = y - x
#pragma unroll
    for (int k = 1; k < H - 1; k++) d[k] = ptx::addc_cc(d[k] ^ mask, 0);
    d[H - 1] = ptx::addc(d[H - 1] ^ mask, 0);
    return mask;
}
}  // namespace mont_detail

template <class P>
__device__ __forceinline__ mont_t<P> mul_kara(const mont_t<P>& a, const mont_t<P>& b) {
    constexpr int N = P::N, H = N / 2;
    static_assert(H % 2 == 0, "mul_kara needs N a multiple of 4");
    u32 e[2 * N], z2[N], m[N], da[H], db[H];
    mont_detail::mul_rows<H>(e, a.v, b.v);            // z0 in words 0..N-1
    mont_detail::mul_rows<H>(z2, a.v + H, b.v + H);
    const u32 sa = mont_detail::abs_diff<H>(da, a.v, a.v + H);  // a0 < a1
    const u32 sb = mont_detail::abs_diff<H>(db, b.v + H, b.v);  // b1 < b0
    mont_detail::mul_rows<H>(m, da, db);
    const u32 neg = sa ^ sb;  // (a0 - a1)(b1 - b0) < 0: subtract m (add ~m + 1, top word + ~0)
    u32 z1[N + 1];
    z1[0] = ptx::add_cc(e[0], z2[0]);
#pragma unroll
    for (int k = 1; k < N; k++) z1[k] = ptx::addc_cc(e[k], z2[k]);
    z1[N] = ptx::addc(0, 0);
    (void)ptx::add_cc(neg & 1, 0xffffffffu);  // carry in = 1 when neg
#pragma unroll
    for (int k = 0; k < N; k++) z1[k] = ptx::addc_cc(z1[k], m[k] ^ neg);
    z1[N] = ptx::addc(z1[N], neg);
    // t = z0 + z1 2^(32H) + z2 2^(32N): z2 in the high words, z1 added at word H
#pragma unroll
    for (int k = 0; k < N; k++) e[N + k] = z2[k];
    e[H] = ptx::add_cc(e[H], z1[0]);
#pragma unroll
    for (int k = 1; k <= N; k++) e[H + k] = ptx::addc_cc(e[H + k], z1[k]);
#pragma unroll
    for (int k = H + N + 1; k < 2 * N - 1; k++) e[k] = ptx::addc_cc(e[k], 0);
    e[2 * N - 1] = ptx::addc(e[2 * N - 1], 0);
    return mont_detail::redc_words<P>(e);
}

// a * b: mul_wide when the module defines MONT_MUL_WIDE 1 before its includes (the MSM and
// fixed-base modules: H200 Fp 17.4 -> see BENCHMARKS), else mul_cios (the NTT's _w kernels call
// mul_wide directly; the other kernels and the field tests keep CIOS as the independent reference).
// MONT_MUL_F64 1 (a compile-time variant, default 0; e.g. msm.cu:MONT_MUL_F64=1): mul_f64 of
// ff/mont_f64.cuh instead (the a*b products on the FP64 units), and sqr too unless MONT_SQR_F64
// is 0 (then sqr_wide). mont_f64.cuh is included at the end of this header only then, so every
// other module compiles exactly the code it did. MONT_MUL_KARA 1 (a variant, default 0): mul_kara
// (Karatsuba product, sqr_wide's reduction).
#ifndef MONT_MUL_WIDE
#define MONT_MUL_WIDE 0
#endif
#ifndef MONT_MUL_F64
#define MONT_MUL_F64 0
#endif
#ifndef MONT_MUL_KARA
#define MONT_MUL_KARA 0
#endif
#ifndef MONT_MUL_SUB
#define MONT_MUL_SUB 0
#endif
#ifndef MONT_SQR_F64
#define MONT_SQR_F64 MONT_MUL_F64
#endif
#if MONT_MUL_F64 || MONT_SQR_F64
template <class P>
__device__ __forceinline__ mont_t<P> mul_f64(const mont_t<P>& a, const mont_t<P>& b);  // ff/mont_f64.cuh
template <class P>
__device__ __forceinline__ mont_t<P> sqr_f64(const mont_t<P>& a);
#endif
template <class P>
__device__ __forceinline__ mont_t<P> operator*(const mont_t<P>& a, const mont_t<P>& b) {
#if MONT_MUL_F64
    return mul_f64(a, b);
#elif MONT_MUL_KARA
    return mul_kara(a, b);
#else
    if (MONT_MUL_WIDE) return mul_wide(a, b);
    return mul_cios(a, b);
#endif
}

// a b - c d: one reduction (mul_sub_wide) when the module defines MONT_MUL_SUB 1 (msm.cu does) and
// MONT_MUL_WIDE 1, else two products and a subtraction.
template <class P>
__device__ __forceinline__ mont_t<P> mul_sub(const mont_t<P>& a, const mont_t<P>& b, const mont_t<P>& c,
                                             const mont_t<P>& d) {
#if MONT_MUL_SUB && !MONT_MUL_F64 && !MONT_MUL_KARA
    if (MONT_MUL_WIDE) return mul_sub_wide(a, b, c, d);
#endif
    return a * b - c * d;
}

// a * a: sqr_wide when MONT_MUL_WIDE is 1 (the same modules as mul_wide), else mul_cios;
// sqr_f64 (mul_f64 with the operand converted once) when MONT_SQR_F64 is 1.
template <class P>
__device__ __forceinline__ mont_t<P> sqr(const mont_t<P>& a) {
#if MONT_SQR_F64
    return sqr_f64(a);
#else
    if (MONT_MUL_WIDE) return sqr_wide(a);
    return a * a;
#endif
}

// Standard form -> Montgomery form: a * R^2 * R^-1. One mul.
template <class P>
__device__ __forceinline__ mont_t<P> to_mont(const mont_t<P>& a) { return a * mont_t<P>::r2(); }

// Montgomery form -> standard form: a * 1 * R^-1. One mul.
template <class P>
__device__ __forceinline__ mont_t<P> from_mont(const mont_t<P>& a) {
    mont_t<P> unit = mont_t<P>::zero();
    unit.v[0] = 1;
    return a * unit;
}

// a^(p-2) = a^-1 for a != 0 (0 maps to 0). Left-to-right square-and-multiply over the bits of
// p - 2: about log2(p) squarings and popcount(p-2) multiplications.
template <class P>
__device__ __forceinline__ mont_t<P> inverse(const mont_t<P>& a) {
    constexpr int N = P::N;
    mont_t<P> r = mont_t<P>::one();
    for (int i = N - 1; i >= 0; i--) {
        const u32 e = P::pm2(i);
        for (int bit = 31; bit >= 0; bit--) {
            r = sqr(r);
            if ((e >> bit) & 1) r = r * a;
        }
    }
    return r;
}

// Global memory <-> registers as 16-byte vectors (elements are 4N bytes, 16-byte aligned).
template <class P>
__device__ __forceinline__ mont_t<P> load(const u32* base, u64 index) {
    constexpr int N = P::N;
    const uint4* p = reinterpret_cast<const uint4*>(base + index * N);
    mont_t<P> r;
#pragma unroll
    for (int q = 0; q < N / 4; q++) {
        uint4 w = p[q];
        r.v[4 * q] = w.x; r.v[4 * q + 1] = w.y; r.v[4 * q + 2] = w.z; r.v[4 * q + 3] = w.w;
    }
    return r;
}

template <class P>
__device__ __forceinline__ void store(u32* base, u64 index, const mont_t<P>& a) {
    constexpr int N = P::N;
    uint4* p = reinterpret_cast<uint4*>(base + index * N);
#pragma unroll
    for (int q = 0; q < N / 4; q++)
        p[q] = make_uint4(a.v[4 * q], a.v[4 * q + 1], a.v[4 * q + 2], a.v[4 * q + 3]);
}

#if MONT_MUL_F64 || MONT_SQR_F64
#include "ff/mont_f64.cuh"  // mul_f64, sqr_f64 (it includes this header: #pragma once skips it)
#endif
