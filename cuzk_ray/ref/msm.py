"""Multi-scalar multiplication in G1 and G2 on the CPU (py-arkworks-bls12381), the naive
reference the GPU kernels are checked against, and fixed-base multiplication (the setup's).

Scalars are Fr ints (object vector), standard-form ``uint64[n, 4]`` limbs or an FrVector; bases are lists of
arkworks points (converted once from key arrays by cuzk_ray.curve and kept by the backend).
"""

from __future__ import annotations

import numpy as np
from py_arkworks_bls12381 import G1Point, G2Point, Scalar

from ..curve import scalars as to_scalars
from ..field import FrVector, fr_to_limbs


def _nonzero(scalars) -> tuple[np.ndarray, np.ndarray]:
    """(indices of non-zero scalars, their limbs)."""
    if isinstance(scalars, FrVector):
        scalars = np.asarray(scalars.limbs)
    limbs = scalars if isinstance(scalars, np.ndarray) and scalars.dtype == np.uint64 else fr_to_limbs(scalars)
    idx = np.flatnonzero(limbs.any(axis=1))
    return idx, limbs[idx]


def _msm(cls, bases: list, scalars, start: int | None = None):
    if start is None:  # the whole query: counts must match
        if len(scalars) != len(bases):
            raise ValueError(f"MSM: {len(bases)} bases but {len(scalars)} scalars")
    else:  # an explicit slice of the bases, from start (an MSM split in parts)
        if start < 0 or start + len(scalars) > len(bases):
            raise ValueError(f"MSM: {len(scalars)} scalars from base {start} but {len(bases)} bases")
        bases = bases[start : start + len(scalars)]
    idx, limbs = _nonzero(scalars)
    if len(idx) == 0:
        return cls.identity()
    pts = [bases[i] for i in idx.tolist()]
    return cls.multiexp_unchecked(pts, to_scalars(limbs))


def msm_g1(bases: list[G1Point], scalars, start: int | None = None) -> G1Point:
    """sum_i s_i * P_(start+i) in G1; zero scalars are dropped, infinity bases contribute nothing.
    Without start the counts must match; with it the scalars cover bases[start:start+len]."""
    return _msm(G1Point, bases, scalars, start)


def msm_g2(bases: list[G2Point], scalars, start: int | None = None) -> G2Point:
    """sum_i s_i * Q_(start+i) in G2."""
    return _msm(G2Point, bases, scalars, start)


def naive_msm(bases: list, scalars, identity):
    """Reference: one scalar multiplication per term, summed left to right (tests only)."""
    acc = identity
    for p, s in zip(bases, scalars):
        acc = acc + p * Scalar(int(s))
    return acc


def fixed_base_mul(base, scalars) -> list:
    """[s * base for s in scalars] with an 8-bit comb table: 32 additions per scalar instead of a
    full double-and-add (about 5x faster than ``base * Scalar`` one by one; setup uses it)."""
    limbs = fr_to_limbs(scalars) if not (isinstance(scalars, np.ndarray) and scalars.dtype == np.uint64) else scalars
    digits = np.ascontiguousarray(limbs).view(np.uint8).reshape(-1, 32)
    identity = type(base).identity()
    table = []  # table[w][d] = d * 256^w * base
    window_base = base
    for _ in range(32):
        row = [identity, window_base]
        for _d in range(2, 256):
            row.append(row[-1] + window_base)
        table.append(row)
        window_base = row[255] + window_base
    out = []
    for row_digits in digits.tolist():
        acc = identity
        for w, d in enumerate(row_digits):
            if d:
                acc = acc + table[w][d]
        out.append(acc)
    return out


def _fixed_base_chunk(group: str, limbs: np.ndarray) -> bytes:
    """Worker-process body of fixed_base_mul_array: xy bytes of s * generator for a chunk."""
    base = G1Point() if group == "g1" else G2Point()
    return b"".join(p.to_xy_bytes_le() for p in fixed_base_mul(base, limbs))


def fixed_base_mul_array(group: str, scalars, workers: int | None = None, min_parallel: int = 1 << 14) -> np.ndarray:
    """[s * generator] of G1 ("g1") or G2 ("g2") as a point array, on ``workers`` processes for
    large inputs (py-arkworks holds the GIL in scalar arithmetic, so threads would not help)."""
    import multiprocessing
    import os
    from concurrent.futures import ProcessPoolExecutor

    from ..curve import g1_array, g2_array

    limbs = scalars if isinstance(scalars, np.ndarray) and scalars.dtype == np.uint64 else fr_to_limbs(scalars)
    to_array = g1_array if group == "g1" else g2_array
    gen = G1Point() if group == "g1" else G2Point()
    workers = workers or os.cpu_count() or 1
    if workers < 2 or len(limbs) < min_parallel:
        return to_array(fixed_base_mul(gen, limbs))
    chunks = np.array_split(limbs, workers * 4)
    # spawn, not fork: the caller may have threads (a Ray driver does), and fork copies only one.
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as ex:
        raw = b"".join(ex.map(_fixed_base_chunk, [group] * len(chunks), chunks))
    width = 96 if group == "g1" else 192
    cls = G1Point if group == "g1" else G2Point
    return to_array([cls.from_xy_bytes_unchecked_le(raw[i : i + width]) for i in range(0, len(raw), width)])
