// The elementwise kernels of the development setup's scalars on the GPU (driven by
// cuda/setup.py): Lagrange values at tau on a coset of the domain, and the linear combinations
// that turn u, v, w into the key's scalars. The transposed products u = A^T L ... are spmv_csr
// (spmv.cu). All vectors standard-form Fr, 8 x 32-bit words per element.
#include "ff/curve.cuh"

typedef fr_t F;

// Lagrange-type values at tau on a coset of roots: with root_j = hi[j >> lo_bits] * lo[j & mask]
// (Montgomery), out[j] = root_j / (tau - root_j) * factor, standard form (factor is standard, so
// the last Montgomery product leaves the Montgomery form). tau - root_j must be non-zero (the
// caller checks that tau is not on the domain). ~390 mul per element (Fermat inverse).
extern "C" __global__ void lagrange_at_tau(u32* out, u64 n, const u32* hi, const u32* lo, int lo_bits,
                                           const u32* consts /* [tau (Montgomery), factor (standard)] */) {
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const F root = load<fr_params>(hi, i >> lo_bits) * load<fr_params>(lo, i & ((1ull << lo_bits) - 1));
    const F tau = load<fr_params>(consts, 0), factor = load<fr_params>(consts, 1);
    store(out, i, root * inverse(tau - root) * factor);
}

// out = x * k0 + y * k1 + z on n standard-form elements; k0, k1 Montgomery (consts[0], consts[1]).
// 2 mul + 2 add.
extern "C" __global__ void fr_lincomb3(u32* out, const u32* x, const u32* y, const u32* z, const u32* consts, u64 n) {
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    store(out, i, load<fr_params>(x, i) * load<fr_params>(consts, 0) + load<fr_params>(y, i) * load<fr_params>(consts, 1) +
                      load<fr_params>(z, i));
}

// out = x * k on n standard-form elements; k Montgomery (consts[0]). 1 mul.
extern "C" __global__ void fr_scale(u32* out, const u32* x, const u32* consts, u64 n) {
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    store(out, i, load<fr_params>(x, i) * load<fr_params>(consts, 0));
}
