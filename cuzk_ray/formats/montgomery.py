"""Vectorized Montgomery -> standard conversion on limb arrays (numpy, no Python ints per element).

snarkjs stores points with Montgomery coordinates (x * 2^384 mod q) and zkey coefficients as
c * R^2 mod r. Converting ~10^6 coordinates through Python ints takes seconds; this word-wise
Montgomery reduction (REDC) runs on 32-bit words held in uint64 lanes, all elements at once,
a chunk at a time so the working set stays in cache. Cost per element: 2k rounds of ~5 vector ops
over 2k words (k = 64-bit limbs). It belongs next to cuzk_ray.field; it lives here to keep this
branch off the shared module.
"""

from __future__ import annotations

import numpy as np

M32 = np.uint64(0xFFFFFFFF)
S32 = np.uint64(32)


def redc_limbs(mont: np.ndarray, modulus: int, chunk: int = 1 << 13) -> np.ndarray:
    """``uint64[n, k]`` with every value < modulus -> ``x * 2^(-64k) mod modulus`` (same shape).

    With k = 6 and q this is Montgomery -> standard form in Fp; with k = 4 and r in Fr. Inputs
    must be reduced (callers check with field.limbs_below); then the result is < modulus.
    """
    mont = np.ascontiguousarray(mont, dtype=np.uint64)
    n, k = mont.shape
    w = 2 * k
    p32 = np.array([(modulus >> (32 * i)) & 0xFFFFFFFF for i in range(w)], dtype=np.uint64)[:, None]
    pinv = np.uint64((-pow(modulus, -1, 1 << 32)) % (1 << 32))
    out = np.empty_like(mont)
    for lo in range(0, n, chunk):
        xt = mont[lo : lo + chunk].T  # (k, c)
        c = xt.shape[1]
        t = np.zeros((2 * w + 1, c), dtype=np.uint64)  # 32-bit words, lazily carried
        t[0:w:2] = xt & M32
        t[1:w:2] = xt >> S32
        prod = np.empty((w, c), dtype=np.uint64)
        part = np.empty((w, c), dtype=np.uint64)
        for i in range(w):
            m = (t[i] * pinv) & M32  # t[i] * pinv wraps mod 2^64; only its low 32 bits matter
            np.multiply(p32, m, out=prod)  # < 2^64
            np.bitwise_and(prod, M32, out=part)
            t[i : i + w] += part
            np.right_shift(prod, S32, out=part)
            t[i + 1 : i + w + 1] += part
            t[i + 1] += t[i] >> S32  # word i is now 0 mod 2^32; push its carry up
        res = t[w:]  # (x + m q) / 2^(32w), words not yet normalized; each < 2^38
        for j in range(w):
            res[j + 1] += res[j] >> S32
            res[j] &= M32
        out[lo : lo + c] = (res[0:w:2] | (res[1:w:2] << S32)).T
    return out
