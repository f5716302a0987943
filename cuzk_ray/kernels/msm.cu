// G1 multi-scalar multiplication (Fp coordinates): the kernels of ec/msm_impl.cuh, unprefixed
// (msm_digits, msm_seg_points, msm_seg_partials, msm_chunks, msm_sum_points, xyzz_sum_rows).
// Host side: cuzk_ray/backends/cuda_msm.py.
// Field products by mul_wide (64-bit-pair carry chains; ff/mont32.cuh); -DMONT_MUL_WIDE=0 for CIOS.
#ifndef MONT_MUL_WIDE
#define MONT_MUL_WIDE 1
#endif
// Batch-affine levels at 4 blocks of 128 threads per SM (<= 128 registers): H200, G1 2^24
// uniform, levels 151.5 / 145.7 / 121.6 ms at 2 / 3 / 4 blocks (docs/BENCHMARKS.md): they wait
// on memory, so occupancy pays. G2 keeps the header's 2 (its Fp2 code needs the registers).
#ifndef AFF_MINB
#define AFF_MINB 4
#endif
#include "ec/msm_impl.cuh"

DEFINE_MSM_KERNELS(fp_t, )
