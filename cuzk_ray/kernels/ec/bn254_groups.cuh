// The two groups of BN254 as instances of the generic XYZZ arithmetic (ec/xyzz.cuh):
// G1 over Fp (y^2 = x^3 + 3), G2 over Fp2 (the D-type twist y^2 = x^3 + 3/(9 + u)). The XYZZ
// formulas never use b (a = 0), so b appears only on the host (cuzk_ray/curves.py BN254).
#pragma once
#include "ec/xyzz.cuh"

typedef affine_t<fp_t> g1_affine;
typedef xyzz_t<fp_t> g1_xyzz;
typedef affine_t<fp2_t> g2_affine;
typedef xyzz_t<fp2_t> g2_xyzz;
