"""Fast CPU NTT over Fr and the snarkjs H computation, bit for bit equal to ref/ntt.py and ref/qap.py.

Same module-level API as cuzk_ray/ref/ntt.py (ntt, intt, coset_ntt, coset_intt; ``domain`` a
cuzk_ray.domain.Domain, a root convention name or None for snarkjs) plus ``compute_h_fast``
(ref.qap.compute_h, also as ``compute_h``); inputs may be int vectors or standard-form ``uint64[n, 4]`` limbs, outputs
are standard-form ``uint64[n, 4]`` limbs (the format the MSMs and the GPU path take).
The arithmetic lives in fast/fr_kernels.py (numba, 64-bit limbs, Montgomery twiddles), over the
domain's curve's Fr: BLS12-381's by default, another 4-limb field (BN254) through
fast/ntt_kernels.py (``Domain(n, "snarkjs", "bn254")``; snarkjs computes H the same way on bn128).

compute_h_fast, step by step (n = domain size, w = n-th root, w2 = 2n-th root, snarkjs H):
    for X in a, b, c:  DIF with w^-1        evaluations -> n * coefficients, bit-reversed order
                       * n^-1 * w2^i         coefficient i (table in bit-reversed order)
                       DIT with w            -> X on the odd 2n-th roots w2 * w^j, natural order
    h_j = a_j * b_j - c_j
No bit-reversal permutation is ever applied: DIF leaves the order DIT wants. On two threads the
work splits in halves: the first DIF stage and the last DIT stage are split by butterfly range;
everything between acts on the two halves of each vector independently. CUZK_H_THREADS=1 in
the environment keeps it on one thread.
"""

from __future__ import annotations

import functools
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..domain import Domain, resolve
from ..field import R_MOD, FrVector, fr_to_limbs, int_vector
from ..ref.ntt import bit_reverse_permutation, check_size
from .ntt_kernels import kernels_for

# Below this size one thread is faster than handing half the work to another.
PARALLEL_MIN_SIZE = 1 << 10
THREADS = max(1, min(2, int(os.environ.get("CUZK_H_THREADS", os.cpu_count() or 1))))
_pool: ThreadPoolExecutor | None = None


def mont_value(value: int, modulus: int = R_MOD) -> np.ndarray:
    """One Fr value (of the field ``modulus``: BLS12-381's r by default) in Montgomery form as
    ``uint64[1, 4]``."""
    mont = value % modulus * pow(2, 256, modulus) % modulus
    return np.frombuffer(mont.to_bytes(32, "little"), dtype="<u8").reshape(1, 4).copy()


def mont_powers(base: int, n: int, start: int = 1, modulus: int = R_MOD) -> np.ndarray:
    """start * base^i for i < n, Montgomery form, ``uint64[n, 4]``."""
    out = np.empty((max(n, 1), 4), dtype=np.uint64)
    kernels_for(modulus).powers_mont(mont_value(base, modulus), mont_value(start, modulus), out)
    return out[:n]


@functools.lru_cache(maxsize=8)
def tables(d: Domain):
    """Twiddles w^j, w^-j (j < n/2) and the H scale tables for a (times 2^256) and b, c, of the
    domain d: built once per process and domain (read-only arrays), then cached."""
    n, r = d.n, d.r
    half = max(n // 2, 1)
    tw, tw_inv = mont_powers(d.omega, half, modulus=r), mont_powers(d.omega_inv, half, modulus=r)
    w2, n_inv = d.omega_2n, d.n_inv
    rev = bit_reverse_permutation(n)
    scale = mont_powers(w2, n, n_inv, r)[rev]
    scale_a = mont_powers(w2, n, n_inv * pow(2, 256, r), r)[rev]
    for t in (tw, tw_inv, scale, scale_a):
        t.flags.writeable = False
    return tw, tw_inv, scale, scale_a


def reduced_limbs(values, modulus: int = R_MOD) -> np.ndarray:
    """A fresh ``uint64[n, 4]`` copy, reduced mod ``modulus``, of an int vector, standard-form
    uint64[n, 4] limbs or a host FrVector."""
    if isinstance(values, FrVector):
        values = np.asarray(values.limbs)
    if isinstance(values, np.ndarray) and values.dtype == np.uint64:
        if values.ndim != 2 or values.shape[1] != 4:
            raise ValueError(f"Fr limbs must be uint64[n, 4], got shape {values.shape}")
        x = np.array(values, dtype=np.uint64, order="C")
    else:
        try:  # Python ints in [0, 2^256): bytes straight away, the kernel reduces mod r
            x = np.frombuffer(bytearray(b"".join([v.to_bytes(32, "little") for v in values])), dtype="<u8")
            x = x.reshape(-1, 4)
        except (AttributeError, OverflowError):  # numpy ints, negative or huge values
            x = fr_to_limbs(int_vector(values) % modulus)
    kernels_for(modulus).reduce_in_place(x)
    return x


def _run_two(fn):
    """fn(0) here and fn(1) on the pool thread, both compiled kernels releasing the GIL."""
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cuzk-h")
    other = _pool.submit(fn, 1)
    fn(0)
    other.result()


def compute_h_fast(a, b, c, domain: Domain | str | None = None, threads: int | None = None) -> np.ndarray:
    """h on the odd 2n-th roots from a, b, c on the n-th roots (== ref.qap.compute_h), uint64[n, 4].

    threads: 1 or 2 (None: two from PARALLEL_MIN_SIZE up, if the machine has two cores).
    """
    n = len(a)
    check_size(n)
    if len(b) != n or len(c) != n:
        raise ValueError(f"compute_h_fast: a, b, c must have one length, got {n}, {len(b)}, {len(c)}")
    d = resolve(domain, n, "compute_h_fast")
    K = kernels_for(d.r)
    x = np.empty((3, n, 4), dtype=np.uint64)
    for v, vec in enumerate((a, b, c)):
        x[v] = reduced_limbs(vec, d.r)
    tw, tw_inv, scale, scale_a = tables(d)
    scales = (scale_a, scale, scale)
    out = np.empty((n, 4), dtype=np.uint64)
    if threads is None:  # automatic: two threads from PARALLEL_MIN_SIZE up; explicit 2: from n = 4
        threads = THREADS if n >= PARALLEL_MIN_SIZE else 1
    if threads < 2 or n < 4:
        for v in range(3):
            K.dif(x[v], tw_inv, 1)
            K.mul_table(x[v], scales[v], 0, n)
            K.dit(x[v], tw, 1)
        K.h_combine(x[0], x[1], x[2], out, 0, n)
        return out

    half, quarter = n // 2, n // 4

    def first_stage(t):
        for v in range(3):
            K.dif_stage(x[v], tw_inv, 1, half, t * quarter, (t + 1) * quarter)

    def halves(t):
        part = slice(t * half, (t + 1) * half)
        for v in range(3):
            K.dif(x[v, part], tw_inv, 2)
            K.mul_table(x[v, part], scales[v][part], 0, half)
            K.dit(x[v, part], tw, 2)

    def last_stage(t):
        lo, hi = t * quarter, (t + 1) * quarter
        for v in range(3):
            K.dit_stage(x[v], tw, 1, half, lo, hi)
        K.h_combine(x[0], x[1], x[2], out, lo, hi)
        K.h_combine(x[0], x[1], x[2], out, lo + half, hi + half)

    for phase in (first_stage, halves, last_stage):
        _run_two(phase)
    return out


def _transform(values, root: int, scale_by: int = 1, modulus: int = R_MOD) -> np.ndarray:
    """Natural order in and out: DIF with the given root, times scale_by, then bit reversal."""
    x = reduced_limbs(values, modulus)
    n = len(x)
    check_size(n)
    K = kernels_for(modulus)
    K.dif(x, mont_powers(root, max(n // 2, 1), modulus=modulus), 1)
    if scale_by != 1:
        K.mul_table(x, mont_powers(1, n, scale_by, modulus), 0, n)
    return np.ascontiguousarray(x[bit_reverse_permutation(n)])


compute_h = compute_h_fast  # the name of ref.qap's function: the same API


def _domain(values, domain: Domain | str | None) -> Domain:
    check_size(len(values))
    return resolve(domain, len(values), "ntt")


def ntt(values, domain: Domain | str | None = None) -> np.ndarray:
    """Evaluations at omega^0..omega^(n-1) of the polynomial with the given coefficients."""
    d = _domain(values, domain)
    return _transform(values, d.omega, modulus=d.r)


def intt(values, domain: Domain | str | None = None) -> np.ndarray:
    """Coefficients of the polynomial with the given evaluations on the n-th roots of unity."""
    d = _domain(values, domain)
    return _transform(values, d.omega_inv, d.n_inv, d.r)


def coset_ntt(values, shift: int, domain: Domain | str | None = None) -> np.ndarray:
    """Evaluations at shift * omega^j: scale coefficient i by shift^i, then NTT."""
    d = _domain(values, domain)
    x = reduced_limbs(values, d.r)
    kernels_for(d.r).mul_table(x, mont_powers(shift, len(x), modulus=d.r), 0, len(x))
    return ntt(x, d)


def coset_intt(values, shift: int, domain: Domain | str | None = None) -> np.ndarray:
    """Inverse of coset_ntt: iNTT, then scale coefficient i by shift^-i."""
    d = _domain(values, domain)
    coeffs = intt(values, d)
    kernels_for(d.r).mul_table(coeffs, mont_powers(pow(shift, -1, d.r), len(coeffs), modulus=d.r), 0, len(coeffs))
    return coeffs


def warm_up(domain: Domain | None = None) -> float:
    """Compile (first use on a machine, ~4 s, kept in numba's on-disk cache) or load every kernel
    of the domain's field (a size-16 domain; None: BLS12-381's).

    Returns the seconds it took; call it at install or at prover start-up so that the first
    proof does not pay for it."""
    import time

    t = time.perf_counter()
    d = domain or Domain.of(16)
    for threads in (1, 2):
        compute_h_fast([1] * 16, [2] * 16, [3] * 16, d, threads=threads)
    x = np.ones((16, 4), dtype=np.uint64)
    intt(ntt(x, d), d)
    coset_intt(coset_ntt(x, 7, d), 7, d)
    return time.perf_counter() - t
