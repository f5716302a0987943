"""bellperson's QAP and H (FILECOIN.md 2.3): the CPU reference of the convention Filecoin's keys use.

Notation: m = the smallest power of two >= num_constraints (the input constraints ``x_i * 0 = 0``
are rows of the recording, so nothing is appended here); omega a primitive m-th root from the
"native" generator 7 (blstrs's ROOT_OF_UNITY squared down, bellperson ``domain.rs``); g = 7 the coset
shift (``MULTIPLICATIVE_GENERATOR``); Z(X) = X^m - 1.

H (bellperson ``prover/native.rs``, supraseal ``groth16_ntt_h.cu``), for a, b, c = A w, B w, C w
padded with zeros to m:

    1. iFFT a, b, c                          -> coefficients of A(X), B(X), C(X) (degree < m)
    2. coset FFT by g                        -> their values at g omega^j
    3. (a b - c) / Z(g), Z(g) = g^m - 1      -> H(X) = (A B - C) / Z at g omega^j (Z is constant
                                                on the coset: (g omega^j)^m = g^m)
    4. icoset FFT                            -> H's m coefficients
    5. drop the last one                     -> m - 1 coefficients (H has degree <= m - 2 when the
                                                witness satisfies the constraints)

The key's H query is then tau^i Z(tau) / delta for i < m - 1 (``generator.rs``), so that
sum_i h_i H_i = H(tau) Z(tau) / delta. Unlike the snarkjs convention (ref/qap.py) there is no 2n
domain, no odd coset and no public-input rows appended to A.
"""

from __future__ import annotations

import numpy as np

from ..domain import Domain
from ..field import R_MOD, fr_vector
from ..r1cs import ConstraintSystem
from .ntt import coset_intt, coset_ntt, intt, powers

COSET_GENERATOR = 7  # blstrs's MULTIPLICATIVE_GENERATOR: the coset shift of step 2


def bellperson_domain(num_constraints: int) -> Domain:
    """The domain of size m = the smallest power of two >= num_constraints, omega from generator 7."""
    m = 1 << max(0, (num_constraints - 1).bit_length())
    return Domain.of(m, "native")


def evaluations(cs: ConstraintSystem, witness) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """a, b, c = A w, B w, C w padded with zeros to the domain (nothing appended)."""
    a, b, c = cs.evaluate(fr_vector(witness))
    m = bellperson_domain(cs.n_constraints).n
    out = []
    for x in (a, b, c):
        full = np.zeros(m, dtype=object)
        full[: len(x)] = x
        out.append(full)
    return tuple(out)


def compute_h(a, b, c, domain: Domain) -> np.ndarray:
    """H's m - 1 monomial coefficients from a, b, c on the domain (steps 1-5 of the module docstring)."""
    domain.check_size(len(a), "bellperson compute_h")
    if domain.convention != "native":
        raise ValueError(f"bellperson compute_h: the domain's roots are {domain.convention!r}, need 'native' (7)")
    on_coset = [coset_ntt(intt(np.asarray(x, dtype=object), domain), COSET_GENERATOR, domain) for x in (a, b, c)]
    z_inv = pow((pow(COSET_GENERATOR, domain.n, R_MOD) - 1) % R_MOD, -1, R_MOD)
    quotient = (on_coset[0] * on_coset[1] - on_coset[2]) % R_MOD * z_inv % R_MOD
    return coset_intt(quotient, COSET_GENERATOR, domain)[:-1]


def compute_h_from_product(a, b, c, domain: Domain) -> np.ndarray:
    """compute_h for c = a b on the domain, in six transforms instead of seven (the CPU reference
    of cuda.ntt's SIX_TRANSFORM_H): a(X) b(X) = P_lo + X^n P_hi with H = P_hi (a b - c = P_hi Z on
    the domain, where P_lo + P_hi = c); on the odd coset w_2n w^j, X^n = -1, so a_c b_c are the
    values of P_lo - P_hi there, and P_hi = (iNTT(c) - icoset_w2n(a_c b_c)) / 2. For another c it
    is not compute_h: c is never read beyond its coefficients."""
    domain.check_size(len(a), "bellperson compute_h_from_product")
    g = domain.omega_2n
    a_c, b_c = (coset_ntt(intt(np.asarray(x, dtype=object), domain), g, domain) for x in (a, b))
    low_minus_high = coset_intt(a_c * b_c % R_MOD, g, domain)
    low_plus_high = intt(np.asarray(c, dtype=object), domain)
    return ((low_plus_high - low_minus_high) * pow(2, -1, R_MOD) % R_MOD)[:-1]


def h_query_scalars(tau: int, domain: Domain) -> np.ndarray:
    """tau^i Z(tau) for i < m - 1: the H query's scalars before the division by delta."""
    z = (pow(tau, domain.n, R_MOD) - 1) % R_MOD
    return powers(tau, domain.n - 1, start=z)
