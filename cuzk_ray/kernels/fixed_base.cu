// Fixed-base batch scalar multiplication: out_i = s_i G for one generator G of G1 or G2 and many
// scalars (the development setup's key generation). Host side: backends/cuda_fixed_base.py.
//
// table: [32][256] affine points in Montgomery form, table[w][d] = d 256^w G (row d = 0 unused),
// built once per group on the host. Thread i adds the entries of its scalar's 32 bytes with
// mixed XYZZ additions (<= 32 madd, 8M + 2S each; the exceptional cases are handled, so any
// scalar < 2^256 is exact), then converts to affine (one Fermat inversion in Fp, ~570 Fp mul,
// + 3M + 1S) and to standard form. Scalar 0 gives all-zero words (infinity).
// Per point: G1 ~900 Fp mul, G2 ~1600 Fp mul (Fp2: M = 3, S = 2 Fp mul).
// Field products by mul_wide (64-bit-pair carry chains; ff/mont32.cuh); -DMONT_MUL_WIDE=0 for CIOS.
#ifndef MONT_MUL_WIDE
#define MONT_MUL_WIDE 1
#endif
#include "ec/groups.cuh"

template <class F>
__device__ __forceinline__ void fixed_base_impl(const u32* table, const u32* scalars, u32 n, u32* out) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    u32 s[8];
#pragma unroll
    for (int k = 0; k < 8; k++) s[k] = scalars[8 * (u64)i + k];
    xyzz_t<F> acc = xyzz_t<F>::inf();
#pragma unroll 1
    for (int w = 0; w < 32; w++) {
        const u32 d = (s[w >> 2] >> (8 * (w & 3))) & 0xffu;
        if (d) acc = xyzz_madd(acc, load_affine<F>(table, 256 * (u64)w + d));
    }
    affine_t<F> p = xyzz_to_affine(acc);
    p.x = from_mont(p.x);
    p.y = from_mont(p.y);
    store_affine(out, i, p);
}

// scalars: [n] standard-form Fr (8 u32 each); out: [n] affine standard form (G1: 24 u32 per point,
// G2: 48 u32), infinity all zero.
extern "C" __global__ void fixed_base_g1(const u32* table, const u32* scalars, u32 n, u32* out) {
    fixed_base_impl<fp_t>(table, scalars, n, out);
}

extern "C" __global__ void fixed_base_g2(const u32* table, const u32* scalars, u32 n, u32* out) {
    fixed_base_impl<fp2_t>(table, scalars, n, out);
}
