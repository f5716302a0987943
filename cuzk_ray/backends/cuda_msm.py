"""G1 multi-scalar multiplication on the GPU (kernels/msm.cu).

``msm_g1(points, scalars)``: points affine standard form ``uint64[n, 2, 6]`` (all-zero rows =
infinity), scalars standard-form Fr ``uint64[n, 4]``; numpy or cupy (cupy arrays stay where they
are, so resident bases are not copied). Returns sum_i s_i P_i as a numpy ``uint64[2, 6]``
(affine, standard form, all zero for infinity), bit for bit what g1_ref.msm_naive gives.

Pipeline (see msm.cu for the kernels and their costs):
scalars 0 dropped, scalars 1 summed by a tree of batch additions (msm_sum_points, xyzz_sum_rows);
the rest: signed-digit decomposition (device) -> sort of 64-bit (bucket key, point) entries
(CuPy) -> segmented bucket accumulation, S entries per thread whatever the bucket sizes
(msm_seg_points, then msm_seg_partials for buckets that cross segments) -> per-chunk bucket
reduction (msm_chunks) -> one sum per window (xyzz_sum_rows). The host combines the W window
sums and the scalar-1 sum with Python ints (g1_ref): ~c W doublings, then one inversion.
"""

from __future__ import annotations

import numpy as np

from ..field import FP_LIMBS, FP_R_INV, Q_MOD, limbs_to_ints
from ..kernels.loader import get_kernel, require_cupy
from . import g1_ref
from .cuda import _check_fr

MODULE = "msm.cu"
THREADS = 128
NO_KEY = 0xFFFFFFFF
SEG_PARTIALS = 16  # slots per thread in the passes over cross-segment partial sums
SUM_FANIN = 32  # points per thread in the sum of the scalar-1 points and of the chunk sums
CHUNK_THREADS = 32768  # about this many threads for the bucket reduction (msm_chunks)


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


def _launch(name: str, nthreads: int, args) -> None:
    get_kernel(MODULE, name)(((nthreads + THREADS - 1) // THREADS,), (THREADS,), args)


def _sum_rows(cp, parts, rows: int, m: int):
    """[rows][m] XYZZ -> [rows] XYZZ by xyzz_sum_rows launches (a tree of fan-in SUM_FANIN)."""
    while m > 1:
        mo = (m + SUM_FANIN - 1) // SUM_FANIN
        out = cp.empty((rows * mo, 4, FP_LIMBS), dtype=cp.uint64)
        _launch("xyzz_sum_rows", rows * mo, (parts, np.uint32(rows), np.uint32(m), np.uint32(SUM_FANIN), out))
        parts, m = out, mo
    return parts


def split_scalars(cp, s):
    """Indices (uint32, device) of the scalars equal to 1 and of those other than 0 and 1."""
    small = (s[:, 1] | s[:, 2] | s[:, 3]) == 0
    lo = s[:, 0]
    ones = cp.flatnonzero(small & (lo == 1)).astype(cp.uint32)
    rest = cp.flatnonzero(~(small & (lo <= 1))).astype(cp.uint32)
    return ones, rest


def sum_points(cp, pts, idx):
    """sum of the points idx (device uint32) as one XYZZ row (device), Montgomery form."""
    m = int(idx.shape[0])
    mo = (m + SUM_FANIN - 1) // SUM_FANIN
    parts = cp.empty((mo, 4, FP_LIMBS), dtype=cp.uint64)
    _launch("msm_sum_points", mo, (pts, idx, np.uint32(m), np.uint32(SUM_FANIN), parts))
    return _sum_rows(cp, parts, 1, mo)


def segment_size(length: int) -> int:
    """Entries per thread: about length / 2^18 (enough threads to fill an H200), 4..32."""
    s = 4
    while s < 32 and s * 2**18 < length:
        s *= 2
    return s


def bucket_sums(cp, pts, sorted_entries, M: int, total: int):
    """[total] XYZZ buckets from M sorted (key << 32 | value) entries by the segmented reduction."""
    buckets = cp.zeros((total, 4, FP_LIMBS), dtype=cp.uint64)
    S = segment_size(M)
    nseg = (M + S - 1) // S
    keys = cp.empty(2 * nseg, dtype=cp.uint32)
    part = cp.empty((2 * nseg, 4, FP_LIMBS), dtype=cp.uint64)
    _launch("msm_seg_points", nseg, (pts, sorted_entries, np.uint32(M), np.uint32(S), buckets, keys, part))
    while nseg > 1:  # the partial sums of buckets that cross segments, same reduction again
        length, S = 2 * nseg, SEG_PARTIALS
        nseg = (length + S - 1) // S
        keys2 = cp.empty(2 * nseg, dtype=cp.uint32)
        part2 = cp.empty((2 * nseg, 4, FP_LIMBS), dtype=cp.uint64)
        _launch("msm_seg_partials", nseg, (keys, part, np.uint32(length), np.uint32(S), buckets, keys2, part2))
        keys, part = keys2, part2
    return buckets


def window_sums(cp, pts, scalars, idx, c: int):
    """[W] XYZZ rows (device): sum over the scalars idx of digit_w(s) * P, per window w."""
    m = int(idx.shape[0])
    W = 255 // c + 1  # enough signed digits for 255-bit scalars plus the final carry
    nb = 1 << (c - 1)
    total = W * nb
    entries = cp.empty(W * m, dtype=cp.uint64)
    _launch("msm_digits", m, (scalars, idx, np.uint32(m), np.int32(c), np.int32(W), entries))
    entries.sort()
    M = int(cp.searchsorted(entries, cp.asarray([NO_KEY << 32], dtype=cp.uint64))[0])
    buckets = bucket_sums(cp, pts, entries, M, total) if M else cp.zeros((total, 4, FP_LIMBS), dtype=cp.uint64)
    del entries
    L = min(nb, 1 << max(0, (total // CHUNK_THREADS).bit_length() - 1))  # a power of two, divides nb
    nchunks = total // L
    chunks = cp.empty((nchunks, 4, FP_LIMBS), dtype=cp.uint64)
    _launch("msm_chunks", nchunks, (buckets, np.uint32(nb), np.uint32(L), np.uint32(nchunks), chunks))
    return _sum_rows(cp, chunks, W, nchunks // W), W


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
    if window is not None and not 2 <= window <= 20:
        raise ValueError(f"msm_g1: window {window} outside 2..20")
    ones, rest = split_scalars(cp, s)
    acc = g1_ref.INF_XYZZ
    if rest.shape[0]:
        c = window or default_window(int(rest.shape[0]))
        sums, W = window_sums(cp, pts, cp.ascontiguousarray(s[rest]), rest, c)
        for w, p in enumerate(reversed(_xyzz_rows_to_ints(cp.asnumpy(sums)))):
            if w:
                for _ in range(c):
                    acc = g1_ref.xyzz_dbl(acc)
            acc = g1_ref.xyzz_add(acc, p)
    if ones.shape[0]:
        acc = g1_ref.xyzz_add(acc, _xyzz_rows_to_ints(cp.asnumpy(sum_points(cp, pts, ones)))[0])
    aff = g1_ref.xyzz_to_affine(acc)
    if aff is not None:
        out[:] = np.array([[(v >> (64 * k)) & (2**64 - 1) for k in range(FP_LIMBS)] for v in aff], dtype=np.uint64)
    return out
