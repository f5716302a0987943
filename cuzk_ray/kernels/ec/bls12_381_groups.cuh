// The two groups of BLS12-381 as instances of the generic XYZZ arithmetic (ec/xyzz.cuh):
// G1 over Fp (y^2 = x^3 + 4), G2 over Fp2 (the twist y^2 = x^3 + 4(u + 1)).
#pragma once
#include "ec/xyzz.cuh"

typedef affine_t<fp_t> g1_affine;
typedef xyzz_t<fp_t> g1_xyzz;
typedef affine_t<fp2_t> g2_affine;
typedef xyzz_t<fp2_t> g2_xyzz;
