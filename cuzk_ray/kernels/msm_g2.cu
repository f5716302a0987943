// G2 multi-scalar multiplication (Fp2 coordinates): the kernels of ec/msm_impl.cuh with the
// prefix g2_ (g2_msm_digits, g2_msm_seg_points, ...). A module of its own so that the G1 module
// does not compile the larger Fp2 code. Host side: cuzk_ray/backends/cuda_msm.py (group "g2").
// The point formulas out of line: inlined, every G2 kernel ran out of its 255 registers and spilled
// kilobytes per thread (ptxas -v); as calls the spills are gone. -DXYZZ_INLINE=__forceinline__
// builds the inlined variant for comparison (jobs/bench_kernels.py --g2-defines).
#ifndef XYZZ_INLINE
#define XYZZ_INLINE __noinline__
#endif
// Field products by mul_wide (64-bit-pair carry chains; ff/mont32.cuh); -DMONT_MUL_WIDE=0 for CIOS.
#ifndef MONT_MUL_WIDE
#define MONT_MUL_WIDE 1
#endif
// Fp2 products lazily reduced (ff/fp2.cuh mul_lazy: 2 reductions per Fp2 mul instead of 3).
// H200, G2 2^24 uniform (docs/BENCHMARKS.md, tenth session): 1 (operator* only) 377.3 ms against
// 424.7 for 0 (the Karatsuba of 3 reduced Fp mul); 2 (also mul_sub_lazy for a b - c d, 2
// reductions instead of 6) 476.5: its four-operand call holds more of the callers' registers
// (xyzz_madd's spill stores 44 -> 164 bytes, ptxas -v) and that costs more than it saves.
#ifndef FP2_MUL_LAZY
#define FP2_MUL_LAZY 1
#endif
// The affine levels without the next slot's x prefetched (ec/msm_impl.cuh AFF_PREFETCH): the two
// Fp2 x take 24 registers the kernel does not have (255 registers, spill stores 312 bytes with
// it); H200, G2 2^24 uniform 285.3 ms without, 289.5 with; 90 % bits 62.2 / 61.8 (eleventh session).
#ifndef AFF_PREFETCH
#define AFF_PREFETCH 0
#endif
#include "ec/msm_impl.cuh"

DEFINE_MSM_KERNELS(fp2_t, g2_)
