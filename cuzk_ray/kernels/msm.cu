// G1 multi-scalar multiplication (Fp coordinates): the kernels of ec/msm_impl.cuh, unprefixed
// (msm_digits, msm_seg_points, msm_seg_partials, msm_chunks, msm_sum_points, xyzz_sum_rows).
// Host side: cuzk_ray/backends/cuda_msm.py.
// Field products by mul_wide (64-bit-pair carry chains; ff/mont32.cuh); -DMONT_MUL_WIDE=0 for CIOS.
// -DMONT_MUL_F64=1 (variant msm.cu:MONT_MUL_F64=1, default 0): every Fp product and square by
// mul_f64 / sqr_f64 (ff/mont_f64.cuh: the a*b limb products on the FP64 units). msm_seg_points
// then (sm_90, nvcc 13.0) 255 registers, 76 B spill stores (254 and none with mul_wide); per
// accumulation step 6158 instructions, 2498 FP64, 3277 IMAD-pipe slots against 4262 / 0 / 5621.
// NVVM converts each reused operand (ZZ, ZZZ, P, PP, PPP, R) to double limbs once by itself (11
// conversions per mixed addition): converting them explicitly in xyzz_madd gave the same SASS.
// Measured on the H200: slower (G1 2^27 uniform 958.7 against 790.1 ms; docs/BENCHMARKS.md).
#ifndef MONT_MUL_WIDE
#define MONT_MUL_WIDE 1
#endif
// The point formulas' a b - c d (Y3 of every addition and doubling) in one Montgomery reduction
// (mul_sub_wide, ff/mont32.cuh): ~5 % fewer IMAD slots and instructions per mixed addition
// (msm_seg_points 35992 -> 34248 SASS instructions, 254 registers, no spills). -DMONT_MUL_SUB=0
// for two products and a subtraction (docs/BENCHMARKS.md compares the two).
#ifndef MONT_MUL_SUB
#define MONT_MUL_SUB 1
#endif
// Batch-affine levels at 4 blocks of 128 threads per SM (<= 128 registers): H200, G1 2^24
// uniform, levels 151.5 / 145.7 / 121.6 ms at 2 / 3 / 4 blocks (docs/BENCHMARKS.md): they wait
// on memory, so occupancy pays. G2 keeps the header's 2 (its Fp2 code needs the registers).
#ifndef AFF_MINB
#define AFF_MINB 4
#endif
#include "ec/msm_impl.cuh"

DEFINE_MSM_KERNELS(fp_t, )
