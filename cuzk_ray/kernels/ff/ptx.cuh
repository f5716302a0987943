// Thin wrappers over PTX integer instructions with the carry flag (CC.CF).
//
// The carry flag lives between instructions, not in a C++ variable, so a chain such as
//     add_cc(a0, b0); addc_cc(a1, b1); addc(a2, b2);
// must not be interleaved with other carry-using code. Every wrapper is `asm volatile`, which
// keeps the chain in program order; callers write a chain as straight-line (unrolled) code.
// NVRTC-compatible: no host headers.
#pragma once

typedef unsigned int u32;
typedef unsigned long long u64;

namespace ptx {

__device__ __forceinline__ u32 add_cc(u32 a, u32 b) {
    u32 r; asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b)); return r;
}
__device__ __forceinline__ u32 addc_cc(u32 a, u32 b) {
    u32 r; asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b)); return r;
}
__device__ __forceinline__ u32 addc(u32 a, u32 b) {
    u32 r; asm volatile("addc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b)); return r;
}
__device__ __forceinline__ u32 sub_cc(u32 a, u32 b) {
    u32 r; asm volatile("sub.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b)); return r;
}
__device__ __forceinline__ u32 subc_cc(u32 a, u32 b) {
    u32 r; asm volatile("subc.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b)); return r;
}
__device__ __forceinline__ u32 subc(u32 a, u32 b) {
    u32 r; asm volatile("subc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b)); return r;
}
// c + lo(a*b), sets / consumes the carry as the name says.
__device__ __forceinline__ u32 mad_lo_cc(u32 a, u32 b, u32 c) {
    u32 r; asm volatile("mad.lo.cc.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c)); return r;
}
__device__ __forceinline__ u32 madc_lo_cc(u32 a, u32 b, u32 c) {
    u32 r; asm volatile("madc.lo.cc.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c)); return r;
}
// c + hi(a*b)
__device__ __forceinline__ u32 mad_hi_cc(u32 a, u32 b, u32 c) {
    u32 r; asm volatile("mad.hi.cc.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c)); return r;
}
__device__ __forceinline__ u32 madc_hi_cc(u32 a, u32 b, u32 c) {
    u32 r; asm volatile("madc.hi.cc.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c)); return r;
}

__device__ __forceinline__ u32 madc_hi(u32 a, u32 b, u32 c) {
    u32 r; asm volatile("madc.hi.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c)); return r;
}

}  // namespace ptx
