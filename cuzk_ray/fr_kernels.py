"""Compiled (numba) Fr arithmetic and NTT kernels for the fast CPU path (cuzk_ray/ntt_fast.py).

Element layout: ``uint32[..., 8]`` little-endian 32-bit limbs, which is exactly a standard-form
``uint64[..., 4]`` limb array viewed as uint32 (no copy). Products of two 32-bit limbs plus two
32-bit carries fit in a uint64, so the word-wise Montgomery multiplication (CIOS) needs no
128-bit type: 8x8 limb products + 8x8 for the reduction + 8 for the quotient digits.

Data stays in *standard* form: twiddles and scale tables are in Montgomery form (w * 2^256 mod r),
and mont_mul(x, w * 2^256) = x * w. Every kernel keeps values reduced (< r).

The scalar helpers are unrolled by a small code generator (loops over limbs written out), so
LLVM keeps every limb in a register; the array kernels below are plain numba functions that
release the GIL, which lets ntt_fast run two of them at once on two cores.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .field import FR_INV32, R_MOD

NL = 8  # 32-bit limbs per Fr element
_P = [(R_MOD >> (32 * i)) & 0xFFFFFFFF for i in range(NL)]


def _limb_names(prefix):
    return ", ".join(f"{prefix}{i}" for i in range(NL))


def _gen_mont_mul() -> str:
    """CIOS Montgomery multiplication a * b * 2^-256 mod r on 8 limbs of 32 bits (a, b < r)."""
    lines = [f"def mont_mul({_limb_names('a')}, {_limb_names('b')}):"]
    lines += [f"    t{j} = Z" for j in range(NL + 2)]
    for i in range(NL):
        lines.append("    c = Z")
        for j in range(NL):
            lines.append(f"    s = t{j} + a{j} * b{i} + c")
            lines.append(f"    t{j} = s & M32")
            lines.append("    c = s >> S32")
        lines.append(f"    s = t{NL} + c")
        lines.append(f"    t{NL} = s & M32")
        lines.append(f"    t{NL + 1} = s >> S32")
        lines.append("    m = (t0 * INV32) & M32")
        lines.append("    s = t0 + m * P0")
        lines.append("    c = s >> S32")
        for j in range(1, NL):
            lines.append(f"    s = t{j} + m * P{j} + c")
            lines.append(f"    t{j - 1} = s & M32")
            lines.append("    c = s >> S32")
        lines.append(f"    s = t{NL} + c")
        lines.append(f"    t{NL - 1} = s & M32")
        lines.append(f"    t{NL} = t{NL + 1} + (s >> S32)")
    # t < 2r < 2^256 here (t8 == 0): one conditional subtraction of r.
    lines += _gen_cond_sub("t", "t8")
    return "\n".join(lines)


def _gen_cond_sub(v: str, carry: str) -> list[str]:
    """Return v - r if (carry, v) >= r else v, where carry is the limb above v's top limb."""
    lines = ["    br = Z"]
    for j in range(NL):
        lines.append(f"    x = {v}{j} + B32 - P{j} - br")
        lines.append(f"    d{j} = x & M32")
        lines.append("    br = ONE - (x >> S32)")
    lines.append(f"    if {carry} != Z or br == Z:")
    lines.append(f"        return {_limb_names('d')}")
    lines.append(f"    return {_limb_names(v)}")
    return lines


def _gen_add() -> str:
    lines = [f"def mod_add({_limb_names('a')}, {_limb_names('b')}):", "    c = Z"]
    for j in range(NL):
        lines.append(f"    s = a{j} + b{j} + c")
        lines.append(f"    t{j} = s & M32")
        lines.append("    c = s >> S32")
    lines += _gen_cond_sub("t", "c")
    return "\n".join(lines)


def _gen_sub() -> str:
    lines = [f"def mod_sub({_limb_names('a')}, {_limb_names('b')}):", "    br = Z"]
    for j in range(NL):
        lines.append(f"    x = a{j} + B32 - b{j} - br")
        lines.append(f"    t{j} = x & M32")
        lines.append("    br = ONE - (x >> S32)")
    lines.append("    if br == Z:")
    lines.append(f"        return {_limb_names('t')}")
    lines.append("    c = Z")
    for j in range(NL):
        lines.append(f"    s = t{j} + P{j} + c")
        lines.append(f"    d{j} = s & M32")
        lines.append("    c = s >> S32")
    lines.append(f"    return {_limb_names('d')}")
    return "\n".join(lines)


def _gen_reduce() -> str:
    return "\n".join([f"def reduce_once({_limb_names('a')}):"] + _gen_cond_sub("a", "Z"))


# Every constant is a uint64: numba turns uint64 (op) int64 into float64.
_NS = {
    "Z": np.uint64(0),
    "ONE": np.uint64(1),
    "M32": np.uint64(0xFFFFFFFF),
    "B32": np.uint64(1 << 32),
    "S32": np.uint64(32),
    "INV32": np.uint64(FR_INV32),
    **{f"P{i}": np.uint64(p) for i, p in enumerate(_P)},
}
for _src in (_gen_mont_mul(), _gen_add(), _gen_sub(), _gen_reduce()):
    exec(compile(_src, "<fr_kernels generated>", "exec"), _NS)
mont_mul = njit(_NS["mont_mul"])
mod_add = njit(_NS["mod_add"])
mod_sub = njit(_NS["mod_sub"])
reduce_once = njit(_NS["reduce_once"])

U32 = np.uint32
_KW = dict(nogil=True, cache=True, boundscheck=False)


@njit
def _load(x, i):
    return (np.uint64(x[i, 0]), np.uint64(x[i, 1]), np.uint64(x[i, 2]), np.uint64(x[i, 3]),
            np.uint64(x[i, 4]), np.uint64(x[i, 5]), np.uint64(x[i, 6]), np.uint64(x[i, 7]))


@njit
def _store(x, i, v):
    for k in range(8):
        x[i, k] = U32(v[k])


@njit(**_KW)
def mul_table(x, table, lo, hi):
    """x[i] *= table[i] (Montgomery) for lo <= i < hi."""
    for i in range(lo, hi):
        _store(x, i, mont_mul(*_load(x, i), *_load(table, i)))


@njit(**_KW)
def reduce_in_place(x):
    """Bring standard-form limbs into [0, r): a value below 2^256 < 3r needs at most two r's off."""
    for i in range(x.shape[0]):
        _store(x, i, reduce_once(*reduce_once(*_load(x, i))))


@njit(**_KW)
def powers_mont(base_mont, start_mont, out):
    """out[i] = start * base^i, all in Montgomery form (sequential: n multiplications)."""
    _store(out, 0, _load(start_mont, 0))
    for i in range(1, out.shape[0]):
        _store(out, i, mont_mul(*_load(out, i - 1), *_load(base_mont, 0)))


@njit(**_KW)
def dif_stage(x, tw, tw_step, half, j_lo, j_hi):
    """One decimation-in-frequency stage with blocks of 2*half: (u, v) -> (u + v, (u - v) w^j)."""
    for k in range(0, x.shape[0], 2 * half):
        for j in range(j_lo, j_hi):
            u = _load(x, k + j)
            v = _load(x, k + j + half)
            _store(x, k + j, mod_add(*u, *v))
            _store(x, k + j + half, mont_mul(*mod_sub(*u, *v), *_load(tw, j * tw_step)))


@njit(**_KW)
def dit_stage(x, tw, tw_step, half, j_lo, j_hi):
    """One decimation-in-time stage with blocks of 2*half: (u, v) -> (u + v w^j, u - v w^j)."""
    for k in range(0, x.shape[0], 2 * half):
        for j in range(j_lo, j_hi):
            u = _load(x, k + j)
            t = mont_mul(*_load(x, k + j + half), *_load(tw, j * tw_step))
            _store(x, k + j, mod_add(*u, *t))
            _store(x, k + j + half, mod_sub(*u, *t))


@njit(**_KW)
def dif(x, tw, tw_step):
    """Natural order in, bit-reversed out. tw[j * tw_step] = w^j for the transform's root w."""
    m = x.shape[0]
    half, step = m // 2, tw_step
    while half >= 1:
        dif_stage(x, tw, step, half, 0, half)
        half //= 2
        step *= 2


@njit(**_KW)
def dit(x, tw, tw_step):
    """Bit-reversed order in, natural out. tw as for dif, with the step of the full size."""
    m = x.shape[0]
    half, step = 1, tw_step * (m // 2)
    while half < m:
        dit_stage(x, tw, step, half, 0, half)
        half *= 2
        step //= 2


@njit(**_KW)
def h_combine(a, b, c, out, lo, hi):
    """out[i] = a[i] * b[i] - c[i] (Montgomery product: a carries a factor 2^256) for lo <= i < hi."""
    for i in range(lo, hi):
        _store(out, i, mod_sub(*mont_mul(*_load(a, i), *_load(b, i)), *_load(c, i)))
