// The fields of the curve a module is compiled for: a compile-time choice, one cubin per
// (module, curve). CUZK_CURVE_BN254 1 (kernels/loader.py CURVES["bn254"]) selects BN254, else
// BLS12-381. Both headers define the same names (fr_params, fr_t, fp_params, fp_t, fp2_t), so a
// kernel source is written once.
#pragma once
#ifndef CUZK_CURVE_BN254
#define CUZK_CURVE_BN254 0
#endif
#if CUZK_CURVE_BN254
#include "ff/bn254.cuh"
#else
#include "ff/bls12_381.cuh"
#endif
