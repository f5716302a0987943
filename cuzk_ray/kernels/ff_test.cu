// Test kernels for the field arithmetic: one thread per element, inputs and outputs as
// standard-form little-endian limbs (uint64[n, k] viewed as uint32[n, 2k]).
//
// Ops 0..5 convert the inputs to Montgomery form, apply the op, and convert back, so they also
// exercise to_mont / from_mont. Ops 6..11 act on the raw limbs to check the conversions alone
// (9: mul_wide, the 64-bit-pair multiplication, a*b*R^-1 like 8; 10: sqr_wide, a*a*R^-1; 11: mul_f64,
// the FP64-product multiplication of ff/mont_f64.cuh, a*b*R^-1; 12: mul_kara, the Karatsuba product
// with sqr_wide's reduction, a*b*R^-1; 13: mul_sub_wide(a, b, a + b, b - a), (a b - (a + b)(b - a)) R^-1).
#include "ff/curve.cuh"
#include "ff/mont_f64.cuh"

enum { OP_ADD = 0, OP_SUB, OP_MUL, OP_SQR, OP_INV, OP_NEG, OP_TO_MONT, OP_FROM_MONT, OP_RAW_MUL, OP_RAW_MUL_WIDE,
       OP_RAW_SQR_WIDE, OP_RAW_MUL_F64, OP_RAW_MUL_KARA,
       OP_RAW_MUL_SUB };

template <class F>
__device__ __forceinline__ F apply(int op, const F& a, const F& b) {
    switch (op) {
        case OP_ADD: return from_mont(to_mont(a) + to_mont(b));
        case OP_SUB: return from_mont(to_mont(a) - to_mont(b));
        case OP_MUL: return from_mont(to_mont(a) * to_mont(b));
        case OP_SQR: return from_mont(sqr(to_mont(a)));
        case OP_INV: return from_mont(inverse(to_mont(a)));
        case OP_NEG: return from_mont(-to_mont(a));
        case OP_TO_MONT: return to_mont(a);
        case OP_FROM_MONT: return from_mont(a);
        case OP_RAW_MUL: return a * b;  // a*b*R^-1
        case OP_RAW_MUL_WIDE: return mul_wide(a, b);
        case OP_RAW_SQR_WIDE: return sqr_wide(a);
        case OP_RAW_MUL_F64: return mul_f64(a, b);
        case OP_RAW_MUL_KARA: return mul_kara(a, b);
        default: return mul_sub_wide(a, b, a + b, b - a);  // OP_RAW_MUL_SUB
    }
}

extern "C" __global__ void fr_test(const u32* a, const u32* b, u32* out, int op, u64 n) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    store(out, i, apply<fr_t>(op, load<fr_params>(a, i), load<fr_params>(b, i)));
}

extern "C" __global__ void fp_test(const u32* a, const u32* b, u32* out, int op, u64 n) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    store(out, i, apply<fp_t>(op, load<fp_params>(a, i), load<fp_params>(b, i)));
}

// Fp2: element i is (c0, c1) at limbs [2i], [2i+1] (uint64[n, 2, 6]). op 0 = mul, 1 = sqr,
// 2 = mul_lazy, 3 = mul_sub_lazy(x, y, x + y, y - x) (ff/fp2.cuh).
extern "C" __global__ void fp2_test(const u32* a, const u32* b, u32* out, int op, u64 n) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    fp2_t x = {to_mont(load<fp_params>(a, 2 * i)), to_mont(load<fp_params>(a, 2 * i + 1))};
    fp2_t y = {to_mont(load<fp_params>(b, 2 * i)), to_mont(load<fp_params>(b, 2 * i + 1))};
    fp2_t z = op == 0 ? x * y : op == 1 ? sqr(x) : op == 2 ? mul_lazy(x, y) : mul_sub_lazy(x, y, x + y, y - x);
    store(out, 2 * i, from_mont(z.c0));
    store(out, 2 * i + 1, from_mont(z.c1));
}

// Throughput probes: each thread runs `iters` rounds of two independent multiplications
// (x *= y, z *= y), 2*iters field muls per thread, by operator* (CIOS here), mul_wide (MODE 1) or
// mul_kara (MODE 2); the result is stored so nothing is elided.
template <class P, int MODE>
__device__ __forceinline__ mont_t<P> chain_mul(const mont_t<P>& a, const mont_t<P>& b) {
    if (MODE == 1) return mul_wide(a, b);
    if (MODE == 2) return mul_kara(a, b);
    return a * b;
}
template <class P, int MODE>
__device__ __forceinline__ void mul_chain(u32* data, int iters, u64 n) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    mont_t<P> x = load<P>(data, i), y = load<P>(data, i ^ 1), z = load<P>(data, i ^ 2);
    for (int r = 0; r < iters; r++) {
        x = chain_mul<P, MODE>(x, y);
        z = chain_mul<P, MODE>(z, y);
    }
    store(data, i, x + z);
}
extern "C" __global__ void fr_mul_chain(u32* data, int iters, u64 n) { mul_chain<fr_params, 0>(data, iters, n); }
extern "C" __global__ void fr_mul_wide_chain(u32* data, int iters, u64 n) { mul_chain<fr_params, 1>(data, iters, n); }
extern "C" __global__ void fr_mul_kara_chain(u32* data, int iters, u64 n) { mul_chain<fr_params, 2>(data, iters, n); }
extern "C" __global__ void fp_mul_chain(u32* data, int iters, u64 n) { mul_chain<fp_params, 0>(data, iters, n); }
extern "C" __global__ void fp_mul_wide_chain(u32* data, int iters, u64 n) { mul_chain<fp_params, 1>(data, iters, n); }
extern "C" __global__ void fp_mul_kara_chain(u32* data, int iters, u64 n) { mul_chain<fp_params, 2>(data, iters, n); }

// The same shape for squarings: two independent chains x = x^2, z = z^2 by sqr_wide, 2*iters
// squarings per thread, x + z stored.
template <class P>
__device__ __forceinline__ void sqr_chain(u32* data, int iters, u64 n) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    mont_t<P> x = load<P>(data, i), z = load<P>(data, i ^ 2);
    for (int r = 0; r < iters; r++) {
        x = sqr_wide(x);
        z = sqr_wide(z);
    }
    store(data, i, x + z);
}
extern "C" __global__ void fr_sqr_wide_chain(u32* data, int iters, u64 n) { sqr_chain<fr_params>(data, iters, n); }
extern "C" __global__ void fp_sqr_wide_chain(u32* data, int iters, u64 n) { sqr_chain<fp_params>(data, iters, n); }

// The same shape for mul_f64 (ff/mont_f64.cuh): x = x * y, z = z * y, 2*iters muls per thread.
// PRE = false: the operands are converted to 48-bit double limbs inside the multiplies; y is hidden
// from the compiler each round by an empty asm, so its conversion is not hoisted out of the loop
// (the round's two multiplies share it: 1.5 conversions per multiply, x or z and half of y);
// PRE = true: y is converted once before the loop (an operand reused by many multiplies), 1 per
// multiply. Each conversion: 8 DADD + 12 PRMT for Fp.
template <class P, bool PRE>
__device__ __forceinline__ void mul_f64_chain(u32* data, int iters, u64 n) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    mont_t<P> x = load<P>(data, i), y = load<P>(data, i ^ 1), z = load<P>(data, i ^ 2);
    const f64_operand<P> yf = to_f64(y);
    for (int r = 0; r < iters; r++) {
        if (PRE) {
            x = mul_f64(x, yf);
            z = mul_f64(z, yf);
        } else {
#pragma unroll
            for (int j = 0; j < P::N; j++) asm volatile("" : "+r"(y.v[j]));
            x = mul_f64(x, y);
            z = mul_f64(z, y);
        }
    }
    store(data, i, x + z);
}
extern "C" __global__ void fr_mul_f64_chain(u32* data, int iters, u64 n) { mul_f64_chain<fr_params, false>(data, iters, n); }
extern "C" __global__ void fr_mul_f64_pre_chain(u32* data, int iters, u64 n) { mul_f64_chain<fr_params, true>(data, iters, n); }
extern "C" __global__ void fp_mul_f64_chain(u32* data, int iters, u64 n) { mul_f64_chain<fp_params, false>(data, iters, n); }
extern "C" __global__ void fp_mul_f64_pre_chain(u32* data, int iters, u64 n) { mul_f64_chain<fp_params, true>(data, iters, n); }
