// BLS12-381 fields: Fr (scalar field, 8 x 32-bit limbs) and Fp (base field, 12 limbs) as
// instances of mont_t, and Fp2 = Fp[u]/(u^2 + 1).
// Constants are generated from cuzk_ray/field.py (R = 2^256 for Fr, 2^384 for Fp); the test
// tests/test_kernels_compile.py re-derives them from field.py so a typo here fails CI.
#pragma once
#include "ff/mont32.cuh"

__device__ __constant__ u32 FR_MOD[8] = {0x00000001u, 0xffffffffu, 0xfffe5bfeu, 0x53bda402u,
                                         0x09a1d805u, 0x3339d808u, 0x299d7d48u, 0x73eda753u};
__device__ __constant__ u32 FR_ONE[8] = {0xfffffffeu, 0x00000001u, 0x00034802u, 0x5884b7fau,
                                         0xecbc4ff5u, 0x998c4fefu, 0xacc5056fu, 0x1824b159u};
__device__ __constant__ u32 FR_R2[8] = {0xf3f29c6du, 0xc999e990u, 0x87925c23u, 0x2b6cedcbu,
                                        0x7254398fu, 0x05d31496u, 0x9f59ff11u, 0x0748d9d9u};
__device__ __constant__ u32 FR_PM2[8] = {0xffffffffu, 0xfffffffeu, 0xfffe5bfeu, 0x53bda402u,
                                         0x09a1d805u, 0x3339d808u, 0x299d7d48u, 0x73eda753u};

struct fr_params {
    static constexpr int N = 8;
    static constexpr u32 INV = 0xffffffffu;
    static constexpr u32 TOP = 0x73eda753u;  // FR_MOD[7]
    __device__ __forceinline__ static u32 mod(int i) { return FR_MOD[i]; }
    __device__ __forceinline__ static u32 one(int i) { return FR_ONE[i]; }
    __device__ __forceinline__ static u32 r2(int i) { return FR_R2[i]; }
    __device__ __forceinline__ static u32 pm2(int i) { return FR_PM2[i]; }
};

__device__ __constant__ u32 FP_MOD[12] = {0xffffaaabu, 0xb9feffffu, 0xb153ffffu, 0x1eabfffeu,
                                          0xf6b0f624u, 0x6730d2a0u, 0xf38512bfu, 0x64774b84u,
                                          0x434bacd7u, 0x4b1ba7b6u, 0x397fe69au, 0x1a0111eau};
__device__ __constant__ u32 FP_ONE[12] = {0x0002fffdu, 0x76090000u, 0xc40c0002u, 0xebf4000bu,
                                          0x53c758bau, 0x5f489857u, 0x70525745u, 0x77ce5853u,
                                          0xa256ec6du, 0x5c071a97u, 0xfa80e493u, 0x15f65ec3u};
__device__ __constant__ u32 FP_R2[12] = {0x1c341746u, 0xf4df1f34u, 0x09d104f1u, 0x0a76e6a6u,
                                         0x4c95b6d5u, 0x8de5476cu, 0x939d83c0u, 0x67eb88a9u,
                                         0xb519952du, 0x9a793e85u, 0x92cae3aau, 0x11988fe5u};
__device__ __constant__ u32 FP_PM2[12] = {0xffffaaa9u, 0xb9feffffu, 0xb153ffffu, 0x1eabfffeu,
                                          0xf6b0f624u, 0x6730d2a0u, 0xf38512bfu, 0x64774b84u,
                                          0x434bacd7u, 0x4b1ba7b6u, 0x397fe69au, 0x1a0111eau};

struct fp_params {
    static constexpr int N = 12;
    static constexpr u32 INV = 0xfffcfffdu;
    static constexpr u32 TOP = 0x1a0111eau;  // FP_MOD[11]
    __device__ __forceinline__ static u32 mod(int i) { return FP_MOD[i]; }
    __device__ __forceinline__ static u32 one(int i) { return FP_ONE[i]; }
    __device__ __forceinline__ static u32 r2(int i) { return FP_R2[i]; }
    __device__ __forceinline__ static u32 pm2(int i) { return FP_PM2[i]; }
};

typedef mont_t<fr_params> fr_t;
typedef mont_t<fp_params> fp_t;

#include "ff/fp2.cuh"

// a * (u + 1) = (a0 - a1) + (a0 + a1) u: 2 Fp add/sub (the G2 twist's non-residue; b = 4(u + 1)).
__device__ __forceinline__ fp2_t mul_by_u_plus_1(const fp2_t& a) { return {a.c0 - a.c1, a.c0 + a.c1}; }
