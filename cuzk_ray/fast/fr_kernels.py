"""Compiled (numba) Fr arithmetic and NTT kernels for the fast CPU path (cuzk_ray/fast/ntt.py).

Element layout: ``uint64[..., 4]`` little-endian 64-bit limbs, the project's Fr limb format.
The scalar operations (Montgomery multiplication by CIOS, addition, subtraction, reduction) are
fast/limb_arith.py's, generated for BLS12-381's r; the array kernels below are written once and
serve every 4-limb field: fast/ntt_kernels.py instantiates them over BN254's r.

Data stays in *standard* form: twiddles and scale tables are in Montgomery form (w * 2^256 mod r),
and mont_mul(x, w * 2^256) = x * w. Every kernel keeps values reduced (< r).

The array kernels are plain numba functions that release the GIL, which lets fast/ntt.py run two
of them at once on two cores.
"""

from __future__ import annotations

from numba import njit

from ..field import R_MOD
from .limb_arith import adc, field_namespace, mac, sbb

NL = 4  # 64-bit limbs per Fr element

_NS = field_namespace(R_MOD, NL)
mont_mul = _NS["mont_mul"]
mod_add = _NS["mod_add"]
mod_sub = _NS["mod_sub"]
reduce_once = _NS["reduce_once"]
__all__ = ["NL", "adc", "mac", "sbb", "mont_mul", "mod_add", "mod_sub", "reduce_once"]

_KW = dict(nogil=True, cache=True, boundscheck=False)


@njit
def load_row(x, i):
    """Row i of uint64[n, 4] as a 4-tuple (fast/ntt_kernels.py's instances get it too)."""
    return x[i, 0], x[i, 1], x[i, 2], x[i, 3]


@njit
def store_row(x, i, v):
    """Row i of uint64[n, 4] <- a 4-tuple."""
    x[i, 0], x[i, 1], x[i, 2], x[i, 3] = v


@njit(**_KW)
def mul_table(x, table, lo, hi):
    """x[i] *= table[i] (Montgomery) for lo <= i < hi."""
    for i in range(lo, hi):
        store_row(x, i, mont_mul(*load_row(x, i), *load_row(table, i)))


# Subtractions of r that bring any 256-bit value below r: 2 for BLS12-381 (2^256 < 3r); a field
# instantiated from these kernels (fast/ntt_kernels.py) sets its own.
REDUCTIONS = 2


@njit(**_KW)
def reduce_in_place(x):
    """Bring standard-form limbs (any 256-bit values) into [0, r)."""
    for i in range(x.shape[0]):
        v = load_row(x, i)
        for _ in range(REDUCTIONS):
            v = reduce_once(*v)
        store_row(x, i, v)


@njit(**_KW)
def powers_mont(base_mont, start_mont, out):
    """out[i] = start * base^i, all in Montgomery form (sequential: n multiplications)."""
    store_row(out, 0, load_row(start_mont, 0))
    for i in range(1, out.shape[0]):
        store_row(out, i, mont_mul(*load_row(out, i - 1), *load_row(base_mont, 0)))


@njit(**_KW)
def dif_stage(x, tw, tw_step, half, j_lo, j_hi):
    """One decimation-in-frequency stage with blocks of 2*half: (u, v) -> (u + v, (u - v) w^j)."""
    for k in range(0, x.shape[0], 2 * half):
        for j in range(j_lo, j_hi):
            u = load_row(x, k + j)
            v = load_row(x, k + j + half)
            store_row(x, k + j, mod_add(*u, *v))
            if j == 0:  # w^0 = 1: the whole last stage and half the one before skip the product
                store_row(x, k + j + half, mod_sub(*u, *v))
            else:
                store_row(x, k + j + half, mont_mul(*mod_sub(*u, *v), *load_row(tw, j * tw_step)))


@njit(**_KW)
def dit_stage(x, tw, tw_step, half, j_lo, j_hi):
    """One decimation-in-time stage with blocks of 2*half: (u, v) -> (u + v w^j, u - v w^j)."""
    for k in range(0, x.shape[0], 2 * half):
        for j in range(j_lo, j_hi):
            u = load_row(x, k + j)
            t = load_row(x, k + j + half)
            if j != 0:  # w^0 = 1
                t = mont_mul(*t, *load_row(tw, j * tw_step))
            store_row(x, k + j, mod_add(*u, *t))
            store_row(x, k + j + half, mod_sub(*u, *t))


# Stages on blocks of more than BLOCK elements stream the whole vector through memory; smaller
# blocks (BLOCK * 32 bytes = 256 KiB, L2-sized) run all their remaining stages while cached.
BLOCK = 1 << 13


@njit(**_KW)
def dif(x, tw, tw_step):
    """Natural order in, bit-reversed out. tw[j * tw_step] = w^j for the transform's root w."""
    m = x.shape[0]
    half = m // 2
    while half >= 1 and 2 * half > BLOCK:
        dif_stage(x, tw, tw_step * (m // (2 * half)), half, 0, half)
        half //= 2
    if half >= 1:
        for k in range(0, m, 2 * half):
            block = x[k : k + 2 * half]
            h = half
            while h >= 1:
                dif_stage(block, tw, tw_step * (m // (2 * h)), h, 0, h)
                h //= 2


@njit(**_KW)
def dit(x, tw, tw_step):
    """Bit-reversed order in, natural out. tw as for dif."""
    m = x.shape[0]
    size = min(m, BLOCK)
    for k in range(0, m, size):
        block = x[k : k + size]
        h = 1
        while h < size:
            dit_stage(block, tw, tw_step * (m // (2 * h)), h, 0, h)
            h *= 2
    half = size
    while half < m:
        dit_stage(x, tw, tw_step * (m // (2 * half)), half, 0, half)
        half *= 2


@njit(**_KW)
def h_combine(a, b, c, out, lo, hi):
    """out[i] = a[i] * b[i] - c[i] (Montgomery product: a carries a factor 2^256) for lo <= i < hi."""
    for i in range(lo, hi):
        store_row(out, i, mod_sub(*mont_mul(*load_row(a, i), *load_row(b, i)), *load_row(c, i)))
