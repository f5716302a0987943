"""Fixed-base batch scalar multiplication on the GPU (kernels/fixed_base.cu): [s_i G] for the
generator G of G1 or G2 and many scalars, for the development setup's key generation.

``fixed_base_mul_gpu(group, scalars)``: group "g1" | "g2", scalars standard-form Fr
``uint64[n, 4]`` (numpy or cupy, every value < r; checked per chunk) or an FrVector (trusted).
Returns numpy ``uint64[n, 2, 6]`` (G1) or
``uint64[n, 2, 2, 6]`` (G2), affine standard form, infinity (scalar 0) all zero: bit for bit
``cuzk_ray.ref.msm.fixed_base_mul_array`` (same generator, arkworks' G1Point() / G2Point()).

Design: a table of window multiples table[w][d] = d 256^w G (32 x 256 affine points, Montgomery
form) is built once per group and device on the host with arkworks and kept in VRAM; thread i
sums the <= 32 entries of its scalar's bytes with mixed XYZZ additions and converts to affine
with one Fermat inversion. Work goes in chunks of CHUNK points so VRAM stays bounded (G2: 192 MiB
of scalars and 768 MiB of output per 2^22 points, two chunks in flight); the download of chunk k
runs on its own stream while chunk k + 1's kernel runs.
"""

from __future__ import annotations

import numpy as np

from ..field import FP_LIMBS, FP_R, FR_LIMBS, Q_MOD, FrVector, fp_to_limbs, limbs_to_ints
from ..kernels.loader import get_kernel, require_cupy
from .device import FIXED_BASE_TABLES, check_fr

MODULE = "fixed_base.cu"
THREADS = 128
CHUNK = 1 << 22
WINDOWS, DIGITS = 32, 256  # 8-bit windows over 256-bit scalars
_ELEM = {"g1": (FP_LIMBS,), "g2": (2, FP_LIMBS)}


def window_table(group: str) -> np.ndarray:
    """table[w * 256 + d] = d * 256^w * G as affine standard form (row d = 0: all zero), numpy."""
    from py_arkworks_bls12381 import G1Point, G2Point

    from ..curve import g1_array, g2_array

    gen, to_array = (G1Point(), g1_array) if group == "g1" else (G2Point(), g2_array)
    rows, window_base = [], gen
    for _ in range(WINDOWS):
        row = [type(gen).identity(), window_base]
        for _d in range(2, DIGITS):
            row.append(row[-1] + window_base)
        rows += row
        window_base = row[-1] + window_base
    return to_array(rows)


def _device_table(cp, group: str):
    """window_table(group) in Montgomery form on the current device: cupy uint64[32 * 256, 2, *elem]
    (device.FIXED_BASE_TABLES)."""

    def build():
        std = window_table(group)
        mont = fp_to_limbs([int(v) * FP_R % Q_MOD for v in limbs_to_ints(std.reshape(-1, FP_LIMBS))])
        return cp.asarray(mont.reshape(std.shape))

    return FIXED_BASE_TABLES.get(group, build)


def fixed_base_mul_gpu(group: str, scalars, chunk: int = CHUNK) -> np.ndarray:
    """[s * G for s in scalars] on the GPU; see the module docstring for formats."""
    if group not in _ELEM:
        raise ValueError(f"fixed_base_mul_gpu: group {group!r} is not 'g1' or 'g2'")
    cp = require_cupy()
    trusted = isinstance(scalars, FrVector)  # its chunks go to the kernel unchecked
    if trusted:
        scalars = scalars.limbs
    if not isinstance(scalars, (np.ndarray, cp.ndarray)) or scalars.dtype != np.uint64 or scalars.ndim != 2 \
            or scalars.shape[1] != FR_LIMBS:
        raise TypeError("fixed_base_mul_gpu scalars: expected a numpy or cupy uint64 array [n, 4] (standard-form Fr)")
    n = scalars.shape[0]
    out = np.empty((n, 2, *_ELEM[group]), dtype=np.uint64)
    if n == 0:
        return out
    table = _device_table(cp, group)
    kernel = get_kernel(MODULE, f"fixed_base_{group}")
    compute = cp.cuda.Stream(non_blocking=True)
    copy = cp.cuda.Stream(non_blocking=True)
    # Device scalars were made on the caller's stream (the setup gathers them there just before):
    # a non-blocking stream does not wait for it by itself, so it waits for what is queued there.
    compute.wait_event(cp.cuda.get_current_stream().record())
    pending = None  # (device result, its event, host slice) of the previous chunk
    for beg in range(0, n, chunk):
        end = min(beg + chunk, n)
        with compute:
            part = FrVector(scalars[beg:end]) if trusted else scalars[beg:end]
            s = check_fr(part, f"fixed_base_mul_gpu scalars[{beg}:{end}]").limbs
            res = cp.empty((end - beg, *out.shape[1:]), dtype=cp.uint64)
            kernel(((end - beg + THREADS - 1) // THREADS,), (THREADS,), (table, s, np.uint32(end - beg), res))
            done = compute.record()
        if pending is not None:
            _download(copy, *pending)
        pending = (res, done, out[beg:end])
    _download(copy, *pending)
    return out


def _download(stream, res, event, host) -> None:
    """res -> host once event has passed, on stream (the host waits; the GPU goes on)."""
    stream.wait_event(event)
    res.get(stream=stream, out=host)
    stream.synchronize()
