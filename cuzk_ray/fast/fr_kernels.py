"""Compiled (numba) Fr arithmetic and NTT kernels for the fast CPU path (cuzk_ray/fast/ntt.py).

Element layout: ``uint64[..., 4]`` little-endian 64-bit limbs, the project's Fr limb format.
numba has no 128-bit integer, so the 64 x 64 -> 128-bit multiply-accumulate and the carry and
borrow chains are three tiny LLVM-IR intrinsics (mac, adc, sbb); the word-wise Montgomery
multiplication (CIOS) is written on top of them.

Data stays in *standard* form: twiddles and scale tables are in Montgomery form (w * 2^256 mod r),
and mont_mul(x, w * 2^256) = x * w. Every kernel keeps values reduced (< r).

The scalar helpers are unrolled by a small code generator (loops over limbs written out), so
LLVM keeps every limb in a register; the array kernels below are plain numba functions that
release the GIL, which lets fast/ntt.py run two of them at once on two cores.
"""

from __future__ import annotations

import os

# One on-disk kernel cache per user, not beside the sources: Ray workers import this package from
# an extracted runtime_env copy, where numba's default __pycache__ would be a fresh, empty cache.
os.environ.setdefault("NUMBA_CACHE_DIR", os.path.join(os.path.expanduser("~"), ".cache", "cuzk-ray", "numba"))

import numpy as np  # noqa: E402
from llvmlite import ir  # noqa: E402
from numba import njit  # noqa: E402
from numba.core import types  # noqa: E402
from numba.extending import intrinsic  # noqa: E402

from ..field import FR_INV64, FR_MOD_LIMBS

NL = 4  # 64-bit limbs per Fr element
_P = FR_MOD_LIMBS


# 64 x 64 -> 128-bit products and carry chains, written in LLVM IR (numba has no 128-bit type);
# LLVM turns them into one mul and add/adc pairs.
def _i128_op(builder, args, op):
    i64, i128 = ir.IntType(64), ir.IntType(128)
    wide = [builder.zext(v, i128) for v in args]
    s = op(builder, *wide)
    return builder.trunc(s, i64), builder.trunc(builder.lshr(s, ir.Constant(i128, 64)), i64)


def _u64_intrinsic(nargs, op, hi_bit=False):
    def typer(typingctx, *args):
        sig = types.UniTuple(types.uint64, 2)(*([types.uint64] * nargs))

        def codegen(context, builder, signature, llargs):
            lo, hi = _i128_op(builder, llargs, op)
            if hi_bit:  # borrow: 1 if the 128-bit difference went negative
                hi = builder.lshr(hi, ir.Constant(ir.IntType(64), 63))
            return context.make_tuple(builder, signature.return_type, (lo, hi))

        return sig, codegen

    return typer


@intrinsic
def mac(typingctx, t, a, b, c):
    """(lo, hi) of t + a * b + c < 2^128."""
    return _u64_intrinsic(4, lambda bld, t, a, b, c: bld.add(bld.add(bld.mul(a, b), t), c))(typingctx, t, a, b, c)


@intrinsic
def adc(typingctx, a, b, c):
    """(a + b + c mod 2^64, carry)."""
    return _u64_intrinsic(3, lambda bld, a, b, c: bld.add(bld.add(a, b), c))(typingctx, a, b, c)


@intrinsic
def sbb(typingctx, a, b, br):
    """(a - b - br mod 2^64, borrow)."""
    return _u64_intrinsic(3, lambda bld, a, b, br: bld.sub(bld.sub(a, b), br), hi_bit=True)(typingctx, a, b, br)


def _limb_names(prefix):
    return ", ".join(f"{prefix}{i}" for i in range(NL))


def _gen_mont_mul() -> str:
    """CIOS Montgomery multiplication a * b * 2^-256 mod r on 4 limbs of 64 bits (a, b < r).

    Cost: 16 products for a * b, 4 for the quotient digits' reduction rows of 4 each (16), plus
    4 wrapping multiplications for the digits; one conditional subtraction at the end."""
    lines = [f"def mont_mul({_limb_names('a')}, {_limb_names('b')}):"]
    lines += [f"    t{j} = Z" for j in range(NL + 2)]
    for i in range(NL):
        lines.append("    c = Z")
        for j in range(NL):
            lines.append(f"    t{j}, c = mac(t{j}, a{j}, b{i}, c)")
        lines.append(f"    t{NL}, t{NL + 1} = adc(t{NL}, c, Z)")
        lines.append("    m = t0 * INV64")
        lines.append("    _, c = mac(t0, m, P0, Z)")
        for j in range(1, NL):
            lines.append(f"    t{j - 1}, c = mac(t{j}, m, P{j}, c)")
        lines.append(f"    t{NL - 1}, c = adc(t{NL}, c, Z)")
        lines.append(f"    t{NL} = t{NL + 1} + c")
    # t < 2r < 2^256 here (t4 == 0): one conditional subtraction of r.
    lines += _gen_cond_sub("t", f"t{NL}")
    return "\n".join(lines)


def _gen_cond_sub(v: str, carry: str) -> list[str]:
    """Return v - r if (carry, v) >= r else v (carry: 0 or 1, the bit above v's top limb).

    Branch-free (a mask selects): the branch would be taken at random and mispredict."""
    lines = ["    br = Z"]
    for j in range(NL):
        lines.append(f"    d{j}, br = sbb({v}{j}, P{j}, br)")
    lines.append(f"    keep = Z - (br & (ONE - {carry}))  # all ones: v < r, keep v")
    return lines + ["    return " + ", ".join(f"(d{j} & ~keep) | ({v}{j} & keep)" for j in range(NL))]


def _gen_add() -> str:
    lines = [f"def mod_add({_limb_names('a')}, {_limb_names('b')}):", "    c = Z"]
    for j in range(NL):
        lines.append(f"    t{j}, c = adc(a{j}, b{j}, c)")
    lines += _gen_cond_sub("t", "c")
    return "\n".join(lines)


def _gen_sub() -> str:
    """a - b, plus r where that borrowed (added under a mask, no branch)."""
    lines = [f"def mod_sub({_limb_names('a')}, {_limb_names('b')}):", "    br = Z"]
    for j in range(NL):
        lines.append(f"    t{j}, br = sbb(a{j}, b{j}, br)")
    lines += ["    mask = Z - br", "    c = Z"]
    for j in range(NL):
        lines.append(f"    t{j}, c = adc(t{j}, P{j} & mask, c)")
    lines.append(f"    return {_limb_names('t')}")
    return "\n".join(lines)


def _gen_reduce() -> str:
    return "\n".join([f"def reduce_once({_limb_names('a')}):"] + _gen_cond_sub("a", "Z"))


# Every constant is a uint64: numba turns uint64 (op) int64 into float64.
_NS = {
    "Z": np.uint64(0),
    "ONE": np.uint64(1),
    "INV64": np.uint64(FR_INV64),
    "mac": mac,
    "adc": adc,
    "sbb": sbb,
    **{f"P{i}": np.uint64(p) for i, p in enumerate(_P)},
}
for _src in (_gen_mont_mul(), _gen_add(), _gen_sub(), _gen_reduce()):
    exec(compile(_src, "<fr_kernels generated>", "exec"), _NS)
mont_mul = njit(_NS["mont_mul"])
mod_add = njit(_NS["mod_add"])
mod_sub = njit(_NS["mod_sub"])
reduce_once = njit(_NS["reduce_once"])

_KW = dict(nogil=True, cache=True, boundscheck=False)


@njit
def _load(x, i):
    return x[i, 0], x[i, 1], x[i, 2], x[i, 3]


@njit
def _store(x, i, v):
    x[i, 0], x[i, 1], x[i, 2], x[i, 3] = v


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
            if j == 0:  # w^0 = 1: the whole last stage and half the one before skip the product
                _store(x, k + j + half, mod_sub(*u, *v))
            else:
                _store(x, k + j + half, mont_mul(*mod_sub(*u, *v), *_load(tw, j * tw_step)))


@njit(**_KW)
def dit_stage(x, tw, tw_step, half, j_lo, j_hi):
    """One decimation-in-time stage with blocks of 2*half: (u, v) -> (u + v w^j, u - v w^j)."""
    for k in range(0, x.shape[0], 2 * half):
        for j in range(j_lo, j_hi):
            u = _load(x, k + j)
            t = _load(x, k + j + half)
            if j != 0:  # w^0 = 1
                t = mont_mul(*t, *_load(tw, j * tw_step))
            _store(x, k + j, mod_add(*u, *t))
            _store(x, k + j + half, mod_sub(*u, *t))


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
        _store(out, i, mod_sub(*mont_mul(*_load(a, i), *_load(b, i)), *_load(c, i)))
