"""Fixed-base multiplication [s_i G] in BLS12-381's G1 and G2 on the CPU (numba): the development
setup's point work (groth16/setup.py), bit for bit ref.msm.fixed_base_mul_array.

    fixed_base_mul_array(group, scalars, workers=None)   # "g1" | "g2", standard-form uint64[n, 4] < r
        -> uint64[n, 2, 6] (G1) or uint64[n, 2, 2, 6] (G2): affine, standard form, infinity all zero
           (curve.py's layouts, py-arkworks' to_xy_bytes_le bytes)

fast/ec_kernels.py's XYZZ formulas and Fp2 = Fp[u]/(u^2 + 1) over BLS12-381's Fp (6 limbs,
limb_arith's field_namespace); the loads and stores here are those of 6-limb coordinates.

Method (signed fixed windows of C bits, NW = ceil(256 / C) windows, H = 2^(C-1)):
  table[j H + k] = (k + 1) 2^(C j) G, affine (Montgomery form), made once per process and group;
  s = sum_j d_j 2^(C j) with d_j in [-H, H]  ->  s G = sum_j sign(d_j) table[j H + |d_j| - 1]:
  at most NW mixed additions (XYZZ += affine, 8M + 2S each) and no doubling per scalar, then a
  block of BLOCK accumulators goes to affine with one inversion (Montgomery's trick: ~3M + 1S
  per point for 1/ZZZ, 2S + 3M for 1/ZZ, x and y) and out of Montgomery form (2M per coordinate).
Costs (C = 16: NW = 16): G1 ~16 madds = ~160 Fp products a scalar, G2 ~16 madds of Fp2 (3 Fp
products an Fp2 product: ~450); tables 2^15 * 16 points: G1 48 MiB (96 bytes a point), G2 96 MiB
(192 bytes), ~1 s / ~2 s to make, once a process. Measured on the 2-core dev box (shared), two
threads: G1 ~159,000 points/s, G2 ~58,500 (~12 / ~34 us a point a core); the py-arkworks
reference on two processes: ~20,000 / ~9,300 (~7.9x / ~6.3x slower). C = 12 was ~15 %
slower (22 windows; its 4 MiB table misses the caches less, not enough to pay for 6 more additions).
The kernels release the GIL: the scalars are cut in parts that threads run on every core.
"""

# ruff: noqa: F821 (the templates' field operations and constants are their namespace's globals)

from __future__ import annotations

import functools
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..curve import G1_GEN, G2_GEN
from ..field import FP_LIMBS, Q_MOD, R_MOD, FrVector, fr_to_limbs
from . import ec_kernels as E
from .limb_arith import field_namespace, instantiate, module_name

C = 16  # window bits
NW = -(-256 // C)  # signed digits of a scalar < r < 2^255 need C NW >= 256 bits
HALF = 1 << (C - 1)
BLOCK = 256  # accumulators converted to affine with one inversion
ROW_U64 = {"g1": 2 * FP_LIMBS, "g2": 4 * FP_LIMBS}  # an affine point's u64s

# ------------------------------------------------------------------------------------------------
# templates: 6-limb coordinate loads and stores (ec_kernels' are 4-limb), and the kernels


def fp_load(arr, i, k):
    """Coordinate k (6 u64s from 6 k) of row i."""
    b = 6 * k
    return arr[i, b], arr[i, b + 1], arr[i, b + 2], arr[i, b + 3], arr[i, b + 4], arr[i, b + 5]


def fp_store(arr, i, k, v):
    b = 6 * k
    arr[i, b], arr[i, b + 1], arr[i, b + 2], arr[i, b + 3], arr[i, b + 4], arr[i, b + 5] = v


def fp2_load(arr, i, k):
    """Coordinate k (c0 then c1: 12 u64s from 12 k) of row i."""
    b = 12 * k
    return ((arr[i, b], arr[i, b + 1], arr[i, b + 2], arr[i, b + 3], arr[i, b + 4], arr[i, b + 5]),
            (arr[i, b + 6], arr[i, b + 7], arr[i, b + 8], arr[i, b + 9], arr[i, b + 10], arr[i, b + 11]))


def fp2_store(arr, i, k, v):
    b = 12 * k
    arr[i, b], arr[i, b + 1], arr[i, b + 2], arr[i, b + 3], arr[i, b + 4], arr[i, b + 5] = v[0]
    arr[i, b + 6], arr[i, b + 7], arr[i, b + 8], arr[i, b + 9], arr[i, b + 10], arr[i, b + 11] = v[1]


def fp_std(a):
    """Montgomery -> standard form (a * 1 / 2^384)."""
    return mul(a, STD_ONE)


def fp2_std(a):
    return fp_std(a[0]), fp_std(a[1])


def to_affine(acc, m, prefix, out, lo, table_form):
    """out[lo + t] = acc[t] (XYZZ rows, t < m) as affine rows, one inversion for all: Montgomery
    form with table_form, else standard form (the output layout). Infinity (ZZ = 0) is all zero."""
    run = F_ONE
    for t in range(m):
        f_store(prefix, t, 0, run)
        zzz = f_load(acc, t, 3)
        if not f_is_zero(zzz):
            run = f_mul(run, zzz)
    inv = f_inv(run)
    for t in range(m - 1, -1, -1):
        zzz = f_load(acc, t, 3)
        if f_is_zero(zzz):
            f_store(out, lo + t, 0, F_ZERO)
            f_store(out, lo + t, 1, F_ZERO)
            continue
        zi = f_mul(inv, f_load(prefix, t, 0))  # 1 / ZZZ
        inv = f_mul(inv, zzz)
        zzi = f_mul(f_sqr(zi), f_sqr(f_load(acc, t, 2)))  # 1 / ZZ = ZZ^2 / ZZZ^2
        x, y = f_mul(f_load(acc, t, 0), zzi), f_mul(f_load(acc, t, 1), zi)
        if not table_form:
            x, y = f_std(x), f_std(y)
        f_store(out, lo + t, 0, x)
        f_store(out, lo + t, 1, y)


def make_table(gen, c, nw, acc, prefix, table):
    """table[j h + k] = (k + 1) 2^(c j) gen (h = 2^(c-1)), affine Montgomery rows; gen: one affine
    Montgomery row. acc: h XYZZ rows, prefix: h field rows (scratch)."""
    h = 1 << (c - 1)
    x, y = f_load(gen, 0, 0), f_load(gen, 0, 1)
    for j in range(nw):
        p = (x, y, F_ONE, F_ONE)
        for k in range(h):
            xyzz_store(acc, k, p)
            p = xyzz_madd(p, x, y)
        xyzz_store(acc, 0, xyzz_dbl(xyzz_load(acc, h - 1)))  # 2^c 2^(c j) gen: the next window's base
        to_affine(acc, 1, prefix, gen, 0, True)
        xyzz_store(acc, 0, (x, y, F_ONE, F_ONE))
        to_affine(acc, h, prefix, table, j * h, True)
        x, y = f_load(gen, 0, 0), f_load(gen, 0, 1)


def fixed_base_mul(table, scalars, c, lo, hi, acc, prefix, out):
    """out[i] = scalars[i] G for lo <= i < hi: affine standard-form rows (infinity all zero), from
    make_table's table of G; scalars standard-form ``uint64[n, 4]`` below r. acc: BLOCK XYZZ rows,
    prefix: BLOCK field rows (scratch; one set per concurrent call)."""
    h = 1 << (c - 1)
    nw = table.shape[0] // h
    mask = (1 << c) - 1
    block = acc.shape[0]
    for b0 in range(lo, hi, block):
        m = min(block, hi - b0)
        for t in range(m):
            i = b0 + t
            p = xyzz_inf()
            carry = 0
            for w in range(nw):  # signed digit w of scalars[i] (with the carry of the one below)
                s = w * c
                limb, off = s // 64, s % 64
                v = 0
                if limb < 4:
                    v = np.int64((scalars[i, limb] >> np.uint64(off)) & np.uint64(mask))
                    if off + c > 64 and limb + 1 < 4:
                        v |= np.int64((scalars[i, limb + 1] << np.uint64(64 - off)) & np.uint64(mask))
                v += carry
                carry = 0
                if v > h:
                    v -= 1 << c
                    carry = 1
                if v == 0:
                    continue
                row = w * h + abs(v) - 1
                x, y = f_load(table, row, 0), f_load(table, row, 1)
                if v < 0:
                    y = f_neg(y)
                p = xyzz_madd(p, x, y)
            xyzz_store(acc, t, p)
        to_affine(acc, m, prefix, out, b0, False)


def first_unreduced(scalars):
    """The index of the first row of standard-form ``uint64[n, 4]`` that is >= r, or -1."""
    for i in range(scalars.shape[0]):
        below = False
        for k in range(3, -1, -1):
            if scalars[i, k] != R_LIMBS[k]:
                below = scalars[i, k] < R_LIMBS[k]
                break
        if not below:
            return i
    return -1


HELPERS = (fp_load, fp_store, fp2_load, fp2_store, fp_std, fp2_std, E.fp_sqr, E.fp_inv, E.fp2_mul, E.fp2_sqr,
           E.fp2_add, E.fp2_sub, E.fp2_neg, E.fp2_is_zero, E.fp2_inv, E.xyzz_inf, E.xyzz_dbl, E.xyzz_mdbl,
           E.xyzz_madd, E.xyzz_load, E.xyzz_store, to_affine)
KERNELS = (make_table, fixed_base_mul, first_unreduced)

# ------------------------------------------------------------------------------------------------
# BLS12-381


def _mont(v: int) -> tuple:
    m = v * pow(2, 64 * FP_LIMBS, Q_MOD) % Q_MOD
    return tuple(np.uint64((m >> (64 * i)) & ((1 << 64) - 1)) for i in range(FP_LIMBS))


@functools.cache
def kernels(group: str):
    """The fixed-base kernels of "g1" (over Fp) or "g2" (over Fp2), compiled or loaded from numba's
    on-disk cache (one module per group)."""
    ns = field_namespace(Q_MOD, FP_LIMBS)
    zero = (np.uint64(0),) * FP_LIMBS
    ns.update(np=np, INV_BITS=tuple(int(b) for b in bin(Q_MOD - 2)[2:]), STD_ONE=(np.uint64(1),) + zero[1:],
              R_LIMBS=tuple(np.uint64((R_MOD >> (64 * i)) & ((1 << 64) - 1)) for i in range(4)))
    if group not in ROW_U64:
        raise ValueError(f"fixed_base: group {group!r} is not 'g1' or 'g2'")
    inst = instantiate(HELPERS + KERNELS, ns, module_name(f"{__name__}.{group}", Q_MOD, C, BLOCK),
                       cached=tuple(f.__name__ for f in KERNELS))
    ns = inst.ns  # the group templates' coordinate field, bound before their first compile
    if group == "g1":
        ns.update(f_mul=ns["mul"], f_sqr=ns["fp_sqr"], f_add=ns["add"], f_sub=ns["sub"], f_neg=ns["neg"],
                  f_is_zero=ns["is_zero"], f_inv=ns["fp_inv"], f_load=ns["fp_load"], f_store=ns["fp_store"],
                  f_std=ns["fp_std"], F_ZERO=zero, F_ONE=ns["MONT_ONE"])
    else:
        ns.update(f_mul=ns["fp2_mul"], f_sqr=ns["fp2_sqr"], f_add=ns["fp2_add"], f_sub=ns["fp2_sub"],
                  f_neg=ns["fp2_neg"], f_is_zero=ns["fp2_is_zero"], f_inv=ns["fp2_inv"], f_load=ns["fp2_load"],
                  f_store=ns["fp2_store"], f_std=ns["fp2_std"], F_ZERO=(zero, zero), F_ONE=(ns["MONT_ONE"], zero))
    return inst


@functools.cache
def generator_table(group: str) -> np.ndarray:
    """make_table's table of the group's generator (NW * HALF affine Montgomery rows)."""
    k = kernels(group)
    coords = G1_GEN if group == "g1" else G2_GEN
    gen = np.array([[x for v in coords for x in _mont(v)]], dtype=np.uint64)
    width = ROW_U64[group]
    table = np.empty((NW * HALF, width), dtype=np.uint64)
    k.make_table(gen, C, NW, np.empty((HALF, 2 * width), dtype=np.uint64),
                 np.empty((HALF, width // 2), dtype=np.uint64), table)
    return table


def fixed_base_mul_array(group: str, scalars, workers: int | None = None) -> np.ndarray:
    """[s * generator] of G1 ("g1") or G2 ("g2") as a point array (see the module docstring), on
    ``workers`` threads (default: every core). Scalars: an FrVector, standard-form ``uint64[n, 4]``
    limbs (each below r: ValueError otherwise) or Fr ints."""
    if group not in ROW_U64:
        raise ValueError(f"fixed_base: group {group!r} is not 'g1' or 'g2'")
    if isinstance(scalars, FrVector):
        scalars = np.asarray(scalars.limbs)
    limbs = scalars if isinstance(scalars, np.ndarray) and scalars.dtype == np.uint64 else fr_to_limbs(scalars)
    limbs = np.ascontiguousarray(limbs, dtype=np.uint64).reshape(-1, 4)
    k = kernels(group)
    bad = k.first_unreduced(limbs)
    if bad >= 0:
        raise ValueError(f"fixed_base: scalar {bad} is not below r (not a reduced Fr element)")
    n, width = len(limbs), ROW_U64[group]
    out = np.empty((n, width), dtype=np.uint64)
    table = generator_table(group)
    workers = max(1, min(workers or os.cpu_count() or 1, -(-n // BLOCK)))
    # more parts than threads: a thread slowed by another process does not hold the rest up
    parts = max(1, min(-(-n // BLOCK), 4 * workers))
    bounds = np.linspace(0, n, parts + 1).astype(np.int64) // BLOCK * BLOCK
    bounds[-1] = n

    def run(span):
        k.fixed_base_mul(table, limbs, C, span[0], span[1], np.empty((BLOCK, 2 * width), dtype=np.uint64),
                         np.empty((BLOCK, width // 2), dtype=np.uint64), out)

    run((0, 0))  # compiled or loaded from the cache here, not by every thread at once
    with ThreadPoolExecutor(workers) as ex:
        list(ex.map(run, zip(bounds[:-1].tolist(), bounds[1:].tolist())))
    return out.reshape((n, 2, FP_LIMBS) if group == "g1" else (n, 2, 2, FP_LIMBS))
