"""Compiled (numba) scalars of the development setup on the CPU: the values of
groth16.setup.setup_scalars_cpu (the Python-int reference), bit for bit, in standard-form limbs.

    lag_j = scale w^j / (tau - w^j)        Lagrange values at tau (Montgomery's batch inversion)
    u, v, w = A'^T lag, B^T lag, C^T lag   fast/spmv.py's row sums over the transposes
    lc = beta u + alpha v + w;  ic = lc[:p+1] / gamma;  l = lc[p+1:] / delta
    h  = snarkjs: the odd Lagrange values of the 2n domain / delta; bellperson: tau^i Z(tau) / delta

Why: the reference computes these on numpy object arrays of Python ints; for the real 2 KiB PoRep
circuit (2.69 M constraints, domain 2^22, a test in CI) that took 37 s of its 117 s key on the
2-core dev box. Cost here: ~5 Montgomery products per domain point for the Lagrange values, one
product and one addition per non-zero for the transposed products, two or three per wire after.
BLS12-381's r only (the CPU development setup's field). The GPU computes the same in cuda/setup.py.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..domain import domain_size, resolve
from ..field import FR_LIMBS, R_MOD, fr_to_limbs, limbs_to_ints
from ..r1cs import ConstraintSystem
from ..ref import bellperson_qap
from .fr_kernels import load_row, mod_add, mod_sub, mont_mul, powers_mont, store_row
from .ntt import mont_value
from .spmv import transposed_matvec_into

_KW = dict(nogil=True, cache=True, boundscheck=False)


@njit(**_KW)
def differences_prefix(roots, tau, prefix):
    """prefix[j] = prod_{i <= j} (tau - roots[i]), all Montgomery; the first zero factor's index
    (tau on the domain), or -1."""
    acc = load_row(tau, 1)  # row 1: Montgomery one
    zero = -1
    for j in range(roots.shape[0]):
        d = mod_sub(*load_row(tau, 0), *load_row(roots, j))
        if zero < 0 and d[0] == 0 and d[1] == 0 and d[2] == 0 and d[3] == 0:
            zero = j
        acc = mont_mul(*acc, *d)
        store_row(prefix, j, acc)
    return zero


@njit(**_KW)
def lagrange_from_prefix(roots, tau, prefix, inv_total, scale, out):
    """out[j] = scale roots[j] / (tau - roots[j]) in standard form (scale standard, the rest
    Montgomery; inv_total = 1 / prefix[-1]): Montgomery's batch inversion, backwards."""
    inv = load_row(inv_total, 0)
    for j in range(roots.shape[0] - 1, -1, -1):
        d = mod_sub(*load_row(tau, 0), *load_row(roots, j))
        inv_d = mont_mul(*inv, *load_row(prefix, j - 1)) if j > 0 else inv
        inv = mont_mul(*inv, *d)
        store_row(out, j, mont_mul(*mont_mul(*inv_d, *load_row(roots, j)), *load_row(scale, 0)))


@njit(**_KW)
def combine_into(u, v, w, beta, alpha, out):
    """out[i] = beta u[i] + alpha v[i] + w[i] (u, v, w, out standard; beta, alpha Montgomery)."""
    for i in range(out.shape[0]):
        s = mod_add(*mont_mul(*load_row(u, i), *load_row(beta, 0)), *mont_mul(*load_row(v, i), *load_row(alpha, 0)))
        store_row(out, i, mod_add(*s, *load_row(w, i)))


@njit(**_KW)
def scale_into(x, s, out):
    """out[i] = x[i] s, a Montgomery product (x standard and s Montgomery: standard out; x
    Montgomery and s the standard one: x out of Montgomery form)."""
    for i in range(out.shape[0]):
        store_row(out, i, mont_mul(*load_row(x, i), *load_row(s, 0)))


def lagrange_values(tau: int, omega: int, start: int, n: int, scale: int) -> np.ndarray:
    """scale x_j / (tau - x_j) for the n points x_j = start omega^j, standard-form limbs;
    ZeroDivisionError when tau is one of them (as the reference's batch inverse)."""
    roots = np.empty((max(n, 1), FR_LIMBS), dtype=np.uint64)
    powers_mont(mont_value(omega), mont_value(start), roots)
    roots = roots[:n]
    tau_rows = np.vstack([mont_value(tau), mont_value(1)])
    prefix = np.empty_like(roots)
    zero = differences_prefix(roots, tau_rows, prefix)
    if zero >= 0:
        raise ZeroDivisionError(f"dev setup: tau is the domain point {zero} (tau - x_{zero} = 0)")
    out = np.empty_like(roots)
    if n:
        total = int(limbs_to_ints(prefix[-1:])[0]) * pow(2, -256, R_MOD) % R_MOD  # out of Montgomery form
        lagrange_from_prefix(roots, tau_rows, prefix, mont_value(pow(total, -1, R_MOD)), fr_to_limbs([scale % R_MOD]),
                             out)
    return out


def setup_scalars_fast(cs: ConstraintSystem, tau: int, alpha: int, beta: int, gamma: int, delta: int,
                       qap: str = "snarkjs") -> dict:
    """groth16.setup.setup_scalars_cpu's dict (u, v, w, ic, l, h: standard-form ``uint64[k, 4]``)
    by the kernels above; the same values. ``qap``: "snarkjs" or "bellperson" (the caller checks it)."""
    if cs.C is None:
        raise ValueError(f"{cs.name}: the development setup needs the C matrix")
    if cs.modulus != R_MOD:
        raise ValueError(f"{cs.name}: the CPU development setup is BLS12-381's (r = {R_MOD:#x}), "
                         f"not r = {cs.modulus:#x}")
    m, p = cs.n_constraints, cs.n_public
    d = bellperson_qap.bellperson_domain(m) if qap == "bellperson" else None
    n = d.n if d is not None else domain_size(m, p)
    dom = resolve(d, n, "setup_scalars_fast")
    zn = (pow(tau, n, R_MOD) - 1) % R_MOD
    lag = lagrange_values(tau, dom.omega, 1, n, zn * dom.n_inv)
    u, v, w = (np.empty((cs.n_wires, FR_LIMBS), dtype=np.uint64) for _ in range(3))
    for mat, out in ((cs.A, u), (cs.B, v), (cs.C, w)):
        transposed_matvec_into(mat, lag[:m], out, R_MOD)
    if qap == "snarkjs":  # A' = A with the public-input rows m + s -> wire s (p + 1 values: Python ints)
        u[: p + 1] = fr_to_limbs((limbs_to_ints(u[: p + 1]) + limbs_to_ints(lag[m : m + p + 1])) % R_MOD)
    lc = np.empty_like(u)
    combine_into(u, v, w, mont_value(beta), mont_value(alpha), lc)
    ic, l_ = np.empty_like(lc[: p + 1]), np.empty_like(lc[p + 1 :])
    scale_into(lc[: p + 1], mont_value(pow(gamma, -1, R_MOD)), ic)
    delta_inv = pow(delta, -1, R_MOD)
    scale_into(lc[p + 1 :], mont_value(delta_inv), l_)
    if qap == "bellperson":  # tau^i Z(tau) / delta, i < n - 1
        h_mont = np.empty((max(n - 1, 1), FR_LIMBS), dtype=np.uint64)
        powers_mont(mont_value(tau), mont_value(zn * delta_inv), h_mont)
        h = np.empty_like(h_mont[: n - 1])
        scale_into(h_mont[: n - 1], fr_to_limbs([1]), h)
    else:  # L^(2n)_(2j+1)(tau) / delta: the odd points w2^(2j+1) of the 2n domain
        w2 = dom.omega_2n
        z2n = (pow(tau, 2 * n, R_MOD) - 1) % R_MOD
        h = lagrange_values(tau, w2 * w2 % R_MOD, w2, n, z2n * pow(2 * n, -1, R_MOD) % R_MOD * delta_inv)
    return {"u": u, "v": v, "w": w, "ic": ic, "l": l_, "h": h}
