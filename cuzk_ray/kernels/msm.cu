// G1 multi-scalar multiplication (Fp coordinates): the kernels of ec/msm_impl.cuh, unprefixed
// (msm_digits, msm_seg_points, msm_seg_partials, msm_chunks, msm_sum_points, xyzz_sum_rows).
// Host side: cuzk_ray/backends/cuda_msm.py.
// Field products by mul_wide (64-bit-pair carry chains; ff/mont32.cuh); -DMONT_MUL_WIDE=0 for CIOS.
#ifndef MONT_MUL_WIDE
#define MONT_MUL_WIDE 1
#endif
#include "ec/msm_impl.cuh"

DEFINE_MSM_KERNELS(fp_t, )
