"""Number-theoretic transform over Fr: the CPU reference (and oracle for the GPU kernels).

Vectors are numpy object arrays of Python ints in [0, r). All transforms take natural order in and
give natural order out. ``convention`` picks the root of unity: "snarkjs" (5^((r-1)/2^32), what
snarkjs zkeys assume) or "native" (7^((r-1)/2^32), arkworks / bellman).
"""

from __future__ import annotations

import numpy as np

from .field import R_MOD, root_of_unity


def _check_size(n: int) -> int:
    log_n = n.bit_length() - 1
    if n < 1 or n != 1 << log_n:
        raise ValueError(f"NTT size {n} is not a power of two")
    return log_n


def bit_reverse_permutation(n: int) -> np.ndarray:
    log_n = _check_size(n)
    idx = np.arange(n, dtype=np.int64)
    rev = np.zeros(n, dtype=np.int64)
    for bit in range(log_n):
        rev |= ((idx >> bit) & 1) << (log_n - 1 - bit)
    return rev


def powers(base: int, n: int, start: int = 1) -> np.ndarray:
    """[start, start*base, start*base^2, ...] (n terms) mod r, built by doubling the prefix."""
    out = np.empty(n, dtype=object)
    if n == 0:
        return out
    out[0] = start % R_MOD
    filled, step = 1, base % R_MOD
    while filled < n:
        take = min(filled, n - filled)
        out[filled : filled + take] = (out[:take] * step) % R_MOD
        filled += take
        step = step * step % R_MOD
    return out


def _transform(values: np.ndarray, omega: int) -> np.ndarray:
    """Iterative radix-2 decimation-in-time NTT with the given n-th root omega."""
    n = len(values)
    log_n = _check_size(n)
    a = np.asarray(values, dtype=object)[bit_reverse_permutation(n)]
    for s in range(log_n):
        half = 1 << s
        # Twiddles for this stage: omega^(n / (2*half) * j), j < half.
        tw = powers(pow(omega, n >> (s + 1), R_MOD), half)
        blocks = a.reshape(-1, 2, half)
        t = (blocks[:, 1, :] * tw) % R_MOD
        u = blocks[:, 0, :]
        a = np.stack(((u + t) % R_MOD, (u - t) % R_MOD), axis=1).reshape(n)
    return a


def ntt(values, convention: str = "snarkjs") -> np.ndarray:
    """Evaluations at omega^0..omega^(n-1) of the polynomial with the given coefficients."""
    return _transform(np.asarray(values, dtype=object), root_of_unity(len(values), convention))


def intt(values, convention: str = "snarkjs") -> np.ndarray:
    """Coefficients of the polynomial with the given evaluations on the n-th roots of unity."""
    n = len(values)
    omega_inv = pow(root_of_unity(n, convention), -1, R_MOD)
    return (_transform(np.asarray(values, dtype=object), omega_inv) * pow(n, -1, R_MOD)) % R_MOD


def coset_ntt(values, shift: int, convention: str = "snarkjs") -> np.ndarray:
    """Evaluations at shift * omega^j: scale coefficient i by shift^i, then NTT."""
    scaled = (np.asarray(values, dtype=object) * powers(shift, len(values))) % R_MOD
    return ntt(scaled, convention)


def coset_intt(values, shift: int, convention: str = "snarkjs") -> np.ndarray:
    """Inverse of coset_ntt: iNTT, then scale coefficient i by shift^-i."""
    coeffs = intt(values, convention)
    return (coeffs * powers(pow(shift, -1, R_MOD), len(values))) % R_MOD


def naive_dft(values, omega: int) -> np.ndarray:
    """O(n^2) evaluation, for tests only."""
    n = len(values)
    return np.array(
        [sum(int(v) * pow(omega, i * j, R_MOD) for i, v in enumerate(values)) % R_MOD for j in range(n)],
        dtype=object,
    )
