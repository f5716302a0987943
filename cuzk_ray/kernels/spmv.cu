// Sparse matrix-vector products over Fr for a, b, c = A.w, B.w, C.w (prover) and u = A^T L
// (setup, cuda/setup.py), with the constraint matrices resident in VRAM. The setup's elementwise
// kernels (Lagrange values at tau, linear combinations) are in setup.cu.
//
// Matrix layout (built once per constraint system by cuda/spmv.py):
//   indptr  u64[rows + 1]       CSR row starts
//   entries uint2[nnz]          (column, code) per non-zero
//   table   Fr[k], Montgomery   coefficient of code t is table[t]; codes 0 and 1 are +1 and -1
// Vectors (witness, a, b, c, L) are standard-form Fr, 8 x 32-bit words per element. A Montgomery
// product of a standard x with c*R is x*c in standard form, so no conversion pass is needed.
// Costs per non-zero: one 32-byte gather of x, one 8-byte entry load, and with `fast` set, an
// add (code 0) or a sub (code 1) instead of a multiplication (256 mad); other codes 1 Fr mul.
// Every product here by mul_wide (ff/mont32.cuh: Fr 52-54 G mul/s on the H200 against 36 for the
// CIOS operator*); the same bits.
#define MONT_MUL_WIDE 1
#include "ff/curve.cuh"

typedef fr_t F;

// One row's terms from entry `e` on, every `step`-th, summed (the thread-per-row kernel: step 1;
// the warp-per-row one: a lane's share, step 32). Per term: an 8-byte entry load, a 32-byte gather
// of x, then an add (code 0), a sub (code 1) or one Fr mul by the table row (with `fast` unset: a
// mul for every code).
__device__ __forceinline__ F row_terms(const uint2* entries, const u32* table, const u32* x, u64 e, u64 end,
                                       u64 step, int fast) {
    F acc = F::zero();
    for (; e < end; e += step) {
        const uint2 ent = entries[e];
        const F v = load<fr_params>(x, ent.x);
        if (fast && ent.y == 0)
            acc = acc + v;
        else if (fast && ent.y == 1)
            acc = acc - v;
        else
            acc = acc + v * load<fr_params>(table, ent.y);
    }
    return acc;
}

// out[i] for i < n: row i of the matrix times x for i < rows; x[i - rows] for rows <= i < rows +
// copy_rows (the QAP's public-input rows of A: a_(m+s) = w_s); 0 above (domain padding).
// One thread per row; rows are short in R1CS (1-3 terms). Rows of more than `long_row` terms
// are left alone (not written): spmv_csr_long sums them a warp each. Why: a thread's warp waits
// for its longest row; at 32 GiB the real circuit's A has rows of up to 929 terms every few rows
// (packings, MultiEq), which kept 8.4 % of the lanes busy (115 M warp steps for 309 M terms; with
// rows above 16 terms split off, ~8 M here + ~4 M in spmv_csr_long).
extern "C" __global__ void spmv_csr(u32* out, const u64* indptr, const uint2* entries, const u32* table,
                                    const u32* x, u64 rows, u64 n, u64 copy_rows, int fast, u64 long_row) {
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    F acc = F::zero();
    if (i < rows) {
        const u64 start = indptr[i], end = indptr[i + 1];
        if (end - start > long_row) return;  // spmv_csr_long's
        acc = row_terms(entries, table, x, start, end, 1, fast);
    } else if (i - rows < copy_rows) {
        acc = load<fr_params>(x, i - rows);
    }
    store(out, i, acc);
}

// out[r] for the `count` rows r listed in long_rows (those spmv_csr leaves: more than its
// long_row terms), one warp per row: lane l sums terms l, l + 32, ..., then the 32 partial sums
// are added by shuffles (5 rounds of 8 words and an Fr add). The block size is a multiple of 32,
// so a warp's lanes share their row. Field addition is exact: the same value as one thread's sum.
extern "C" __global__ void spmv_csr_long(u32* out, const u64* indptr, const uint2* entries, const u32* table,
                                         const u32* x, const u32* long_rows, u64 count, int fast) {
    const u64 w = ((u64)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const u32 lane = threadIdx.x & 31;
    if (w >= count) return;  // the whole warp
    const u64 row = long_rows[w];
    F acc = row_terms(entries, table, x, indptr[row] + lane, indptr[row + 1], 32, fast);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        F other;
#pragma unroll
        for (int k = 0; k < F::N; k++) other.v[k] = __shfl_down_sync(0xffffffffu, acc.v[k], off);
        acc = acc + other;
    }
    if (lane == 0) store(out, row, acc);
}

// c = a * b on n elements, all standard form (c = A.w * B.w when C is not stored). 2 mul.
extern "C" __global__ void fr_mul_std(u32* c, const u32* a, const u32* b, u64 n) {
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    store(c, i, load<fr_params>(a, i) * to_mont(load<fr_params>(b, i)));
}

// c = a * b / R on n elements (one Montgomery product of standard a, b): what the H computation
// takes when it folds the factor R into c's 1/n scaling (ntt.compute_h_device c_over_r), so c =
// A.w * B.w costs one product instead of fr_mul_std's two. 1 mul.
extern "C" __global__ void fr_mul_mont(u32* c, const u32* a, const u32* b, u64 n) {
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    store(c, i, load<fr_params>(a, i) * load<fr_params>(b, i));
}

// x <- x * R (standard -> Montgomery form) in place. 1 mul.
extern "C" __global__ void fr_to_mont(u32* x, u64 n) {
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    store(x, i, to_mont(load<fr_params>(x, i)));
}
