// BLS12-381 G1 (y^2 = x^3 + 4 over Fp) in XYZZ coordinates: (X, Y, ZZ, ZZZ) with x = X/ZZ,
// y = Y/ZZZ and ZZ^3 = ZZZ^2; infinity is ZZ = 0. All coordinates in Montgomery form.
// Formulas from the Explicit-Formulas Database, shortw/xyzz (a = 0); costs in Fp mul (M) and
// squarings (S):  madd-2008-s 8M + 2S,  add-2008-s 12M + 2S,  dbl-2008-s-1 6M + 3S,
// mdbl-2008-s-1 4M + 3S. Exceptional cases (equal or opposite inputs, infinity) are handled.
#pragma once
#include "ff/bls12_381.cuh"

struct g1_affine {
    fp_t x, y;
};

struct g1_xyzz {
    fp_t X, Y, ZZ, ZZZ;

    __device__ __forceinline__ static g1_xyzz inf() {
        g1_xyzz r;
        r.X = fp_t::zero(); r.Y = fp_t::zero(); r.ZZ = fp_t::zero(); r.ZZZ = fp_t::zero();
        return r;
    }
    __device__ __forceinline__ bool is_inf() const { return ZZ.is_zero(); }
};

// 2 * (x, y) for an affine point: 4M + 3S (y != 0 on BLS12-381 G1, no 2-torsion).
__device__ __forceinline__ g1_xyzz g1_mdbl(const g1_affine& p) {
    const fp_t U = p.y + p.y;
    const fp_t V = sqr(U);
    const fp_t W = U * V;
    const fp_t S = p.x * V;
    const fp_t xx = sqr(p.x);
    const fp_t M = xx + xx + xx;
    g1_xyzz r;
    r.X = sqr(M) - (S + S);
    r.Y = M * (S - r.X) - W * p.y;
    r.ZZ = V;
    r.ZZZ = W;
    return r;
}

// 2 * p: 6M + 3S.
__device__ __forceinline__ g1_xyzz g1_dbl(const g1_xyzz& p) {
    if (p.is_inf()) return p;
    const fp_t U = p.Y + p.Y;
    const fp_t V = sqr(U);
    const fp_t W = U * V;
    const fp_t S = p.X * V;
    const fp_t xx = sqr(p.X);
    const fp_t M = xx + xx + xx;
    g1_xyzz r;
    r.X = sqr(M) - (S + S);
    r.Y = M * (S - r.X) - W * p.Y;
    r.ZZ = V * p.ZZ;
    r.ZZZ = W * p.ZZZ;
    return r;
}

// p + q with q affine (mixed addition): 8M + 2S.
__device__ __forceinline__ g1_xyzz g1_madd(const g1_xyzz& p, const g1_affine& q) {
    if (p.is_inf()) {
        g1_xyzz r;
        r.X = q.x; r.Y = q.y; r.ZZ = fp_t::one(); r.ZZZ = fp_t::one();
        return r;
    }
    const fp_t U2 = q.x * p.ZZ;
    const fp_t S2 = q.y * p.ZZZ;
    const fp_t P = U2 - p.X;
    const fp_t R = S2 - p.Y;
    if (P.is_zero()) return R.is_zero() ? g1_mdbl(q) : g1_xyzz::inf();
    const fp_t PP = sqr(P);
    const fp_t PPP = P * PP;
    const fp_t Q = p.X * PP;
    g1_xyzz r;
    r.X = sqr(R) - PPP - (Q + Q);
    r.Y = R * (Q - r.X) - p.Y * PPP;
    r.ZZ = p.ZZ * PP;
    r.ZZZ = p.ZZZ * PPP;
    return r;
}

// p + q: 12M + 2S.
__device__ __forceinline__ g1_xyzz g1_add(const g1_xyzz& p, const g1_xyzz& q) {
    if (p.is_inf()) return q;
    if (q.is_inf()) return p;
    const fp_t U1 = p.X * q.ZZ, U2 = q.X * p.ZZ;
    const fp_t S1 = p.Y * q.ZZZ, S2 = q.Y * p.ZZZ;
    const fp_t P = U2 - U1;
    const fp_t R = S2 - S1;
    if (P.is_zero()) return R.is_zero() ? g1_dbl(p) : g1_xyzz::inf();
    const fp_t PP = sqr(P);
    const fp_t PPP = P * PP;
    const fp_t Q = U1 * PP;
    g1_xyzz r;
    r.X = sqr(R) - PPP - (Q + Q);
    r.Y = R * (Q - r.X) - S1 * PPP;
    r.ZZ = p.ZZ * q.ZZ * PP;
    r.ZZZ = p.ZZZ * q.ZZZ * PPP;
    return r;
}
