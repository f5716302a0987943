"""Fast CPU H in bellperson's convention, bit for bit equal to ref/bellperson_qap.py's compute_h.

Same notation as the reference (m the domain size, omega its native root from generator 7, g = 7
the coset shift, Z(g) = g^m - 1); the arithmetic is fast/fr_kernels.py's (numba, Montgomery
tables). Step by step, for a, b, c on the m-th roots (standard-form limbs or ints):

    for X in a, b, c:  DIF with omega^-1   -> m * coefficients, bit-reversed order
                       * m^-1 g^i          coefficient i (table in bit-reversed order); a's table
                                           also carries 2^256 (the Montgomery product below) and
                                           Z(g)^-1, c's Z(g)^-1 as well
                       DIT with omega      -> X on the coset g omega^j, natural order
    q_j = (a_j b_j - c_j) / Z(g)           one Montgomery product and a subtraction per j
    DIF with omega^-1, * m^-1 g^-i         -> H's coefficients, bit-reversed; one permutation to
                                              natural order, the last (zero) coefficient dropped

No permutation before the last step: DIF leaves the order DIT wants. The three forward
transforms run on up to two threads (the kernels release the GIL).
"""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..domain import Domain
from ..field import FR_R, R_MOD
from ..ref.bellperson_qap import COSET_GENERATOR
from ..ref.ntt import bit_reverse_permutation, check_size
from . import fr_kernels as K
from .ntt import THREADS, mont_powers, reduced_limbs


@functools.lru_cache(maxsize=4)
def tables(d: Domain):
    """Twiddles omega^j, omega^-j (j < m/2) and the scale tables (bit-reversed) of a, of b, of c
    and of the inverse coset transform for the native domain d: built once per process and domain."""
    m = d.n
    half = max(m // 2, 1)
    tw, tw_inv = mont_powers(d.omega, half), mont_powers(d.omega_inv, half)
    z_inv = pow((pow(COSET_GENERATOR, m, R_MOD) - 1) % R_MOD, -1, R_MOD)
    rev = bit_reverse_permutation(m)
    g, g_inv = COSET_GENERATOR, pow(COSET_GENERATOR, -1, R_MOD)
    scale_a = mont_powers(g, m, d.n_inv * z_inv % R_MOD * FR_R)[rev]
    scale_b = mont_powers(g, m, d.n_inv)[rev]
    scale_c = mont_powers(g, m, d.n_inv * z_inv)[rev]
    scale_out = mont_powers(g_inv, m, d.n_inv)[rev]
    out = (tw, tw_inv, scale_a, scale_b, scale_c, scale_out)
    for t in out:
        t.flags.writeable = False
    return out


def _on_coset(x: np.ndarray, tw, tw_inv, scale) -> None:
    """x (evaluations on the m-th roots) -> its values on the coset g omega^j, times the scale's factor."""
    K.dif(x, tw_inv, 1)
    K.mul_table(x, scale, 0, len(x))
    K.dit(x, tw, 1)


def compute_h(a, b, c, domain: Domain, threads: int | None = None) -> np.ndarray:
    """H's m - 1 coefficients from a, b, c on the native domain (== ref.bellperson_qap.compute_h),
    standard-form ``uint64[m - 1, 4]``. threads: 1 or 2 (None: THREADS)."""
    m = len(a)
    check_size(m)
    domain.check_size(m, "bellperson compute_h")
    if domain.convention != "native":
        raise ValueError(f"bellperson compute_h: the domain's roots are {domain.convention!r}, need 'native' (7)")
    if len(b) != m or len(c) != m:
        raise ValueError(f"bellperson compute_h: a, b, c must have one length, got {m}, {len(b)}, {len(c)}")
    tw, tw_inv, scale_a, scale_b, scale_c, scale_out = tables(domain)
    x = [reduced_limbs(v) for v in (a, b, c)]
    jobs = list(zip(x, (scale_a, scale_b, scale_c)))
    workers = THREADS if threads is None else max(1, min(2, threads))
    if workers > 1 and m >= 4:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="cuzk-h") as pool:
            list(pool.map(lambda job: _on_coset(job[0], tw, tw_inv, job[1]), jobs))
    else:
        for v, scale in jobs:
            _on_coset(v, tw, tw_inv, scale)
    q = np.empty((m, 4), dtype=np.uint64)
    K.h_combine(x[0], x[1], x[2], q, 0, m)
    K.dif(q, tw_inv, 1)
    K.mul_table(q, scale_out, 0, m)
    return np.ascontiguousarray(q[bit_reverse_permutation(m)][:-1])
