"""Number-theoretic transform over Fr: the CPU reference (and oracle for the GPU kernels).

Vectors are numpy object arrays of Python ints in [0, r). All transforms take natural order in and
give natural order out. ``domain`` (cuzk_ray.domain.Domain, or a root convention name; None:
snarkjs) picks the root of unity: "snarkjs" (5^((r-1)/2^32), what snarkjs zkeys assume) or
"native" (7^((r-1)/2^32), arkworks / bellman).
"""

from __future__ import annotations

import numpy as np

from ..domain import Domain, resolve
from ..field import R_MOD


def check_size(n: int) -> int:
    """log2(n); ValueError unless n is a power of two (>= 1)."""
    log_n = n.bit_length() - 1
    if n < 1 or n != 1 << log_n:
        raise ValueError(f"NTT size {n} is not a power of two")
    return log_n


def bit_reverse_permutation(n: int) -> np.ndarray:
    log_n = check_size(n)
    idx = np.arange(n, dtype=np.int64)
    rev = np.zeros(n, dtype=np.int64)
    for bit in range(log_n):
        rev |= ((idx >> bit) & 1) << (log_n - 1 - bit)
    return rev


def powers(base: int, n: int, start: int = 1, modulus: int = R_MOD) -> np.ndarray:
    """[start, start*base, start*base^2, ...] (n terms) mod r (``modulus``: BLS12-381's r unless
    given), built by doubling the prefix."""
    out = np.empty(n, dtype=object)
    if n == 0:
        return out
    out[0] = start % modulus
    filled, step = 1, base % modulus
    while filled < n:
        take = min(filled, n - filled)
        out[filled : filled + take] = (out[:take] * step) % modulus
        filled += take
        step = step * step % modulus
    return out


def _transform(values: np.ndarray, omega: int, r: int = R_MOD) -> np.ndarray:
    """Iterative radix-2 decimation-in-time NTT with the given n-th root omega."""
    n = len(values)
    log_n = check_size(n)
    a = np.asarray(values, dtype=object)[bit_reverse_permutation(n)]
    for s in range(log_n):
        half = 1 << s
        # Twiddles for this stage: omega^(n / (2*half) * j), j < half.
        tw = powers(pow(omega, n >> (s + 1), r), half, modulus=r)
        blocks = a.reshape(-1, 2, half)
        t = (blocks[:, 1, :] * tw) % r
        u = blocks[:, 0, :]
        a = np.stack(((u + t) % r, (u - t) % r), axis=1).reshape(n)
    return a


def _domain(values, domain: Domain | str | None) -> Domain:
    check_size(len(values))
    return resolve(domain, len(values), "ntt")


def ntt(values, domain: Domain | str | None = None) -> np.ndarray:
    """Evaluations at omega^0..omega^(n-1) of the polynomial with the given coefficients."""
    d = _domain(values, domain)
    return _transform(np.asarray(values, dtype=object), d.omega, d.r)


def intt(values, domain: Domain | str | None = None) -> np.ndarray:
    """Coefficients of the polynomial with the given evaluations on the n-th roots of unity."""
    d = _domain(values, domain)
    return (_transform(np.asarray(values, dtype=object), d.omega_inv, d.r) * d.n_inv) % d.r


def coset_ntt(values, shift: int, domain: Domain | str | None = None) -> np.ndarray:
    """Evaluations at shift * omega^j: scale coefficient i by shift^i, then NTT."""
    d = _domain(values, domain)
    scaled = (np.asarray(values, dtype=object) * powers(shift, len(values), modulus=d.r)) % d.r
    return ntt(scaled, d)


def coset_intt(values, shift: int, domain: Domain | str | None = None) -> np.ndarray:
    """Inverse of coset_ntt: iNTT, then scale coefficient i by shift^-i."""
    d = _domain(values, domain)
    coeffs = intt(values, d)
    return (coeffs * powers(pow(shift, -1, d.r), len(values), modulus=d.r)) % d.r


def naive_dft(values, omega: int) -> np.ndarray:
    """O(n^2) evaluation, for tests only."""
    n = len(values)
    return np.array(
        [sum(int(v) * pow(omega, i * j, R_MOD) for i, v in enumerate(values)) % R_MOD for j in range(n)],
        dtype=object,
    )
