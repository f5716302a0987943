"""From R1CS to the quotient polynomial h in the snarkjs convention (DESIGN.md section 4): the CPU reference.

Notation: m constraints, p public inputs, n = domain size = smallest power of two > m + p.
The QAP appends p + 1 rows to A: row m + s has coefficient 1 on wire s (s = 0..p), which binds the
public inputs into the proof (B and C are zero there). Evaluations a, b, c of A w, B w, C w on
the n-th roots of unity are padded with zeros to n.

snarkjs does not divide by Z. With w2 a primitive 2n-th root, for X in {a, b, c}:
    coefficients = iNTT_n(X);  coefficient i *= w2^i;  NTT_n  ->  X at the odd 2n-th roots
    h_j = a_j * b_j - c_j
and the key's H points are the odd Lagrange basis of the 2n domain divided by delta, which makes
sum h_j H_j = h(tau) Z(tau) / delta (Z = -2 on the odd roots; the basis absorbs it).
"""

from __future__ import annotations

import numpy as np

from ..domain import Domain, domain_size, resolve
from ..field import R_MOD, fr_batch_inverse, fr_vector
from ..r1cs import ConstraintSystem
from .ntt import coset_ntt, intt, powers

__all__ = ["domain_size", "evaluations", "extend_to_domain", "compute_h", "h_query_scalars", "lagrange_at"]


def evaluations(cs: ConstraintSystem, witness) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """a, b, c on the domain (length n), with the public-input rows appended to a."""
    w = fr_vector(witness)
    a, b, c = cs.evaluate(w)
    return extend_to_domain(a, b, c, w, cs.n_public)


def extend_to_domain(a, b, c, witness, n_public: int):
    """Pad constraint evaluations to the domain and add the public-input rows (a_(m+s) = w_s)."""
    m = len(a)
    n = domain_size(m, n_public)
    out = []
    for x in (a, b, c):
        full = np.zeros(n, dtype=object)
        full[:m] = x
        out.append(full)
    out[0][m : m + n_public + 1] = witness[: n_public + 1]
    return tuple(out)


def compute_h(a, b, c, domain: Domain | str | None = None) -> np.ndarray:
    """h on the odd 2n-th roots (the scalars for the H query), from a, b, c on the n-th roots."""
    d = resolve(domain, len(a), "compute_h")
    odd = [coset_ntt(intt(x, d), d.omega_2n, d) for x in (a, b, c)]
    return (odd[0] * odd[1] - odd[2]) % d.r


def h_query_scalars(tau: int, n: int, domain: Domain | str | None = None) -> np.ndarray:
    """L^(2n)_(2j+1)(tau) for j < n: the odd Lagrange basis of the 2n domain at tau (setup side)."""
    w2 = resolve(domain, n, "h_query_scalars").omega_2n
    odd_roots = powers(pow(w2, 2, R_MOD), n, start=w2)  # w2^(2j+1)
    z2n = (pow(tau, 2 * n, R_MOD) - 1) % R_MOD
    inv = fr_batch_inverse((tau - odd_roots) % R_MOD)
    return (odd_roots * inv % R_MOD) * (z2n * pow(2 * n, -1, R_MOD) % R_MOD) % R_MOD


def lagrange_at(tau: int, n: int, domain: Domain | str | None = None) -> np.ndarray:
    """L^n_j(tau) for j < n on the n-th roots of unity: (tau^n - 1) w^j / (n (tau - w^j))."""
    d = resolve(domain, n, "lagrange_at")
    roots = powers(d.omega, n)
    zn = (pow(tau, n, R_MOD) - 1) % R_MOD
    inv = fr_batch_inverse((tau - roots) % R_MOD)
    return (roots * inv % R_MOD) * (zn * d.n_inv % R_MOD) % R_MOD
