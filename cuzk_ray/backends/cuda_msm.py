"""G1 multi-scalar multiplication on the GPU (kernels/msm.cu), first slice.

``msm_g1(points, scalars)``: points affine standard form ``uint64[n, 2, 6]`` (all-zero rows =
infinity), scalars standard-form Fr ``uint64[n, 4]``; numpy or cupy (cupy arrays stay where they
are, so resident bases are not copied). Returns sum_i s_i P_i as a numpy ``uint64[2, 6]``
(affine, standard form, all zero for infinity), bit for bit what g1_ref.msm_naive gives.

Pipeline: signed-digit decomposition (device) -> radix sort of bucket keys (CuPy) -> per-bucket
XYZZ accumulation (device) -> per-chunk bucket reduction (device) -> the W * 64 chunk sums are
combined on the host with Python ints (g1_ref), then one inversion to affine.
"""

from __future__ import annotations

import numpy as np

from ..field import FP_LIMBS, FP_R_INV, Q_MOD, limbs_to_ints
from ..kernels.loader import get_kernel, require_cupy
from . import g1_ref
from .cuda import _check_fr

MODULE = "msm.cu"
THREADS = 128
CHUNKS_PER_WINDOW = 64


def default_window(n: int) -> int:
    """Window bits c: about log2(n) - 2, between 4 and 16."""
    return max(4, min(16, n.bit_length() - 3))


def _check_points(points, n: int):
    cp = require_cupy()
    if not isinstance(points, (np.ndarray, cp.ndarray)) or points.dtype != np.uint64:
        raise TypeError("msm_g1 points: expected a numpy or cupy uint64 array [n, 2, 6] (affine, standard form)")
    if points.shape != (n, 2, FP_LIMBS):
        raise ValueError(f"msm_g1 points: expected shape ({n}, 2, {FP_LIMBS}) to match the scalars, got {tuple(points.shape)}")
    if not points.flags.c_contiguous:
        raise ValueError("msm_g1 points: array must be C-contiguous")
    return cp.asarray(points)


def _xyzz_rows_to_ints(rows: np.ndarray) -> list[tuple]:
    """uint64[m, 4, 6] Montgomery XYZZ -> list of standard-form XYZZ int tuples."""
    vals = limbs_to_ints(rows.reshape(-1, FP_LIMBS))
    vals = [int(v) * FP_R_INV % Q_MOD for v in vals]
    return [tuple(vals[4 * i : 4 * i + 4]) for i in range(len(vals) // 4)]


def msm_g1(points, scalars, window: int | None = None) -> np.ndarray:
    """sum_i scalars[i] * points[i] in G1; see the module docstring for formats."""
    cp = require_cupy()
    s = _check_fr(scalars, "msm_g1 scalars")
    n = s.shape[0]
    pts = _check_points(points, n)
    out = np.zeros((2, FP_LIMBS), dtype=np.uint64)
    if n == 0:
        return out
    if n >= 2**31:
        raise ValueError(f"msm_g1: {n} points is more than this kernel indexes (2^31 - 1)")
    c = window or default_window(n)
    if not 2 <= c <= 20:
        raise ValueError(f"msm_g1: window {c} outside 2..20")
    W = 255 // c + 1  # enough signed digits for 255-bit scalars plus the final carry
    nb = 1 << (c - 1)
    total = W * nb

    keys = cp.empty(W * n, dtype=cp.uint32)
    vals = cp.empty(W * n, dtype=cp.uint32)
    get_kernel(MODULE, "msm_digits")(((n + THREADS - 1) // THREADS,), (THREADS,),
                                     (s, np.uint32(n), np.int32(c), np.int32(W), keys, vals))
    order = cp.argsort(keys)
    skeys, svals = keys[order], vals[order]
    del keys, vals, order
    offsets = cp.searchsorted(skeys, cp.arange(total + 1, dtype=cp.uint32)).astype(cp.uint32)

    buckets = cp.empty((total, 4, FP_LIMBS), dtype=cp.uint64)
    get_kernel(MODULE, "msm_buckets")(((total + THREADS - 1) // THREADS,), (THREADS,),
                                      (pts, svals, offsets, np.uint32(total), buckets))
    L = max(1, nb // CHUNKS_PER_WINDOW)
    nchunks = total // L
    chunks = cp.empty((nchunks, 4, FP_LIMBS), dtype=cp.uint64)
    get_kernel(MODULE, "msm_chunks")(((nchunks + THREADS - 1) // THREADS,), (THREADS,),
                                     (buckets, np.uint32(nb), np.uint32(L), np.uint32(nchunks), chunks))

    parts = _xyzz_rows_to_ints(cp.asnumpy(chunks))
    per_window = nchunks // W
    acc = g1_ref.INF_XYZZ
    for w in range(W - 1, -1, -1):
        for _ in range(c):
            acc = g1_ref.xyzz_dbl(acc)
        for p in parts[w * per_window : (w + 1) * per_window]:
            acc = g1_ref.xyzz_add(acc, p)
    aff = g1_ref.xyzz_to_affine(acc)
    if aff is not None:
        out[:] = np.array([[(v >> (64 * k)) & (2**64 - 1) for k in range(FP_LIMBS)] for v in aff], dtype=np.uint64)
    return out
