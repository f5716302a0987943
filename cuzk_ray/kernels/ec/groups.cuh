// The groups of the curve a module is compiled for (see ff/curve.cuh): G1 and G2 affine and
// XYZZ types under the same names for every curve.
#pragma once
#include "ff/curve.cuh"
#if CUZK_CURVE_BN254
#include "ec/bn254_groups.cuh"
#else
#include "ec/bls12_381_groups.cuh"
#endif
