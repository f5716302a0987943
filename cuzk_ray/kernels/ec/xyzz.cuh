// Short Weierstrass curves y^2 = x^3 + b with a = 0 over a field F (fp_t for BLS12-381 G1,
// b = 4; fp2_t for G2, b = 4(u + 1)), in XYZZ coordinates: (X, Y, ZZ, ZZZ) with x = X/ZZ,
// y = Y/ZZZ and ZZ^3 = ZZZ^2; infinity is ZZ = 0. All coordinates in Montgomery form.
// Formulas from the Explicit-Formulas Database, shortw/xyzz (a = 0, so b never appears); costs
// in F mul (M) and squarings (S):  madd-2008-s 8M + 2S,  add-2008-s 12M + 2S,
// dbl-2008-s-1 6M + 3S,  mdbl-2008-s-1 4M + 3S  (over Fp2: M = 3 Fp mul, S = 2 Fp mul).
// Exceptional cases (equal or opposite inputs, infinity) are handled. Neither curve has points
// of order 2 (y != 0 on the curve), which the doubling formulas rely on.
#pragma once
#include "ff/curve.cuh"

// How the point formulas are compiled: inlined (default), or out of line when a module defines
// XYZZ_INLINE (e.g. -DXYZZ_INLINE=__noinline__ for G2, whose kernels run out of registers).
#ifndef XYZZ_INLINE
#define XYZZ_INLINE __forceinline__
#endif

// a b - c d; mont_t fields have their own (ff/mont32.cuh: one reduction with MONT_MUL_SUB).
template <class F>
__device__ __forceinline__ F mul_sub(const F& a, const F& b, const F& c, const F& d) {
    return a * b - c * d;
}

template <class F>
struct affine_t {
    F x, y;
};

template <class F>
struct xyzz_t {
    F X, Y, ZZ, ZZZ;

    __device__ __forceinline__ static xyzz_t inf() {
        xyzz_t r;
        r.X = F::zero(); r.Y = F::zero(); r.ZZ = F::zero(); r.ZZZ = F::zero();
        return r;
    }
    __device__ __forceinline__ bool is_inf() const { return ZZ.is_zero(); }
};

// 2 * (x, y) for an affine point: 4M + 3S.
template <class F>
__device__ XYZZ_INLINE xyzz_t<F> xyzz_mdbl(const affine_t<F>& p) {
    const F U = p.y + p.y;
    const F V = sqr(U);
    const F W = U * V;
    const F S = p.x * V;
    const F M = mul_small<3>(sqr(p.x));
    xyzz_t<F> r;
    r.X = sqr(M) - (S + S);
    r.Y = mul_sub(M, S - r.X, W, p.y);
    r.ZZ = V;
    r.ZZZ = W;
    return r;
}

// 2 * p: 6M + 3S.
template <class F>
__device__ XYZZ_INLINE xyzz_t<F> xyzz_dbl(const xyzz_t<F>& p) {
    if (p.is_inf()) return p;
    const F U = p.Y + p.Y;
    const F V = sqr(U);
    const F W = U * V;
    const F S = p.X * V;
    const F M = mul_small<3>(sqr(p.X));
    xyzz_t<F> r;
    r.X = sqr(M) - (S + S);
    r.Y = mul_sub(M, S - r.X, W, p.Y);
    r.ZZ = V * p.ZZ;
    r.ZZZ = W * p.ZZZ;
    return r;
}

// p + q with q affine (mixed addition): 8M + 2S.
template <class F>
__device__ XYZZ_INLINE xyzz_t<F> xyzz_madd(const xyzz_t<F>& p, const affine_t<F>& q) {
    if (p.is_inf()) {
        xyzz_t<F> r;
        r.X = q.x; r.Y = q.y; r.ZZ = F::one(); r.ZZZ = F::one();
        return r;
    }
    const F U2 = q.x * p.ZZ;
    const F S2 = q.y * p.ZZZ;
    const F P = U2 - p.X;
    const F R = S2 - p.Y;
    if (P.is_zero()) return R.is_zero() ? xyzz_mdbl(q) : xyzz_t<F>::inf();
    const F PP = sqr(P);
    const F PPP = P * PP;
    const F Q = p.X * PP;
    xyzz_t<F> r;
    r.X = sqr(R) - PPP - (Q + Q);
    r.Y = mul_sub(R, Q - r.X, p.Y, PPP);
    r.ZZ = p.ZZ * PP;
    r.ZZZ = p.ZZZ * PPP;
    return r;
}

// p + q: 12M + 2S.
template <class F>
__device__ XYZZ_INLINE xyzz_t<F> xyzz_add(const xyzz_t<F>& p, const xyzz_t<F>& q) {
    if (p.is_inf()) return q;
    if (q.is_inf()) return p;
    const F U1 = p.X * q.ZZ, U2 = q.X * p.ZZ;
    const F S1 = p.Y * q.ZZZ, S2 = q.Y * p.ZZZ;
    const F P = U2 - U1;
    const F R = S2 - S1;
    if (P.is_zero()) return R.is_zero() ? xyzz_dbl(p) : xyzz_t<F>::inf();
    const F PP = sqr(P);
    const F PPP = P * PP;
    const F Q = U1 * PP;
    xyzz_t<F> r;
    r.X = sqr(R) - PPP - (Q + Q);
    r.Y = mul_sub(R, Q - r.X, S1, PPP);
    r.ZZ = p.ZZ * q.ZZ * PP;
    r.ZZZ = p.ZZZ * q.ZZZ * PPP;
    return r;
}

// XYZZ -> affine (x, y), Montgomery form; infinity -> (0, 0). One inversion + 3M + 1S:
// t = 1/ZZZ, 1/ZZ = (ZZ t)^2 (as ZZ^3 = ZZZ^2).
template <class F>
__device__ __forceinline__ affine_t<F> xyzz_to_affine(const xyzz_t<F>& p) {
    affine_t<F> r;
    if (p.is_inf()) {
        r.x = F::zero(); r.y = F::zero();
        return r;
    }
    const F t = inverse(p.ZZZ);
    const F zz_inv = sqr(p.ZZ * t);
    r.x = p.X * zz_inv;
    r.y = p.Y * t;
    return r;
}

// Global memory <-> registers: an affine point is 2 elements (x, y), an XYZZ point 4.
template <class F>
__device__ __forceinline__ affine_t<F> load_affine(const u32* base, u64 i) {
    affine_t<F> p;
    p.x = load_elem<F>(base, 2 * i);
    p.y = load_elem<F>(base, 2 * i + 1);
    return p;
}

template <class F>
__device__ __forceinline__ void store_affine(u32* base, u64 i, const affine_t<F>& p) {
    store_elem<F>(base, 2 * i, p.x);
    store_elem<F>(base, 2 * i + 1, p.y);
}

template <class F>
__device__ __forceinline__ xyzz_t<F> load_xyzz(const u32* buf, u64 i) {
    xyzz_t<F> p;
    p.X = load_elem<F>(buf, 4 * i); p.Y = load_elem<F>(buf, 4 * i + 1);
    p.ZZ = load_elem<F>(buf, 4 * i + 2); p.ZZZ = load_elem<F>(buf, 4 * i + 3);
    return p;
}

template <class F>
__device__ __forceinline__ void store_xyzz(u32* buf, u64 i, const xyzz_t<F>& p) {
    store_elem<F>(buf, 4 * i, p.X); store_elem<F>(buf, 4 * i + 1, p.Y);
    store_elem<F>(buf, 4 * i + 2, p.ZZ); store_elem<F>(buf, 4 * i + 3, p.ZZZ);
}
