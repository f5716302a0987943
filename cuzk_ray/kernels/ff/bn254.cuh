// BN254 (alt_bn128, circom's "bn128") fields: Fr (scalar field) and Fp (base field), each 8 x
// 32-bit limbs (254 bits; 4 x 64 in the host's uint64 layout), as instances of mont_t, and
// Fp2 = Fp[u]/(u^2 + 1) (ff/fp2.cuh). R = 2^256 for both. Both moduli leave 2 spare bits, so
// every bound of ff/mont32.cuh holds (2p < R; 3p < R, so mul_sub_wide takes its one-reduction
// path for Fr too); neither has p_0 = 1 (INV != 0xffffffff: the generic reduction rounds).
// Constants generated from the moduli; tests/test_kernels_compile.py re-derives them from the
// moduli in cuzk_ray/curves.py (through ref/bn254.py) so a typo here fails CI.
#pragma once
#include "ff/mont32.cuh"

__device__ __constant__ u32 FR_MOD[8] = {0xf0000001u, 0x43e1f593u, 0x79b97091u, 0x2833e848u,
                                         0x8181585du, 0xb85045b6u, 0xe131a029u, 0x30644e72u};
__device__ __constant__ u32 FR_ONE[8] = {0x4ffffffbu, 0xac96341cu, 0x9f60cd29u, 0x36fc7695u,
                                         0x7879462eu, 0x666ea36fu, 0x9a07df2fu, 0x0e0a77c1u};
__device__ __constant__ u32 FR_R2[8] = {0xae216da7u, 0x1bb8e645u, 0xe35c59e3u, 0x53fe3ab1u,
                                        0x53bb8085u, 0x8c49833du, 0x7f4e44a5u, 0x0216d0b1u};
__device__ __constant__ u32 FR_PM2[8] = {0xefffffffu, 0x43e1f593u, 0x79b97091u, 0x2833e848u,
                                         0x8181585du, 0xb85045b6u, 0xe131a029u, 0x30644e72u};

struct fr_params {
    static constexpr int N = 8;
    static constexpr u32 INV = 0xefffffffu;
    static constexpr u32 TOP = 0x30644e72u;  // FR_MOD[7]
    __device__ __forceinline__ static u32 mod(int i) { return FR_MOD[i]; }
    __device__ __forceinline__ static u32 one(int i) { return FR_ONE[i]; }
    __device__ __forceinline__ static u32 r2(int i) { return FR_R2[i]; }
    __device__ __forceinline__ static u32 pm2(int i) { return FR_PM2[i]; }
};

__device__ __constant__ u32 FP_MOD[8] = {0xd87cfd47u, 0x3c208c16u, 0x6871ca8du, 0x97816a91u,
                                         0x8181585du, 0xb85045b6u, 0xe131a029u, 0x30644e72u};
__device__ __constant__ u32 FP_ONE[8] = {0xc58f0d9du, 0xd35d438du, 0xf5c70b3du, 0x0a78eb28u,
                                         0x7879462cu, 0x666ea36fu, 0x9a07df2fu, 0x0e0a77c1u};
__device__ __constant__ u32 FP_R2[8] = {0x538afa89u, 0xf32cfc5bu, 0xd44501fbu, 0xb5e71911u,
                                        0x0a417ff6u, 0x47ab1effu, 0xcab8351fu, 0x06d89f71u};
__device__ __constant__ u32 FP_PM2[8] = {0xd87cfd45u, 0x3c208c16u, 0x6871ca8du, 0x97816a91u,
                                         0x8181585du, 0xb85045b6u, 0xe131a029u, 0x30644e72u};

struct fp_params {
    static constexpr int N = 8;
    static constexpr u32 INV = 0xe4866389u;
    static constexpr u32 TOP = 0x30644e72u;  // FP_MOD[7]
    __device__ __forceinline__ static u32 mod(int i) { return FP_MOD[i]; }
    __device__ __forceinline__ static u32 one(int i) { return FP_ONE[i]; }
    __device__ __forceinline__ static u32 r2(int i) { return FP_R2[i]; }
    __device__ __forceinline__ static u32 pm2(int i) { return FP_PM2[i]; }
};

typedef mont_t<fr_params> fr_t;
typedef mont_t<fp_params> fp_t;

#include "ff/fp2.cuh"
