"""The scalar side of the development setup on the GPU: what groth16.setup.setup_scalars_cpu
computes, bit for bit, in seconds at 2^24 (the Python-int version takes minutes there).

    L_j   = L^n_j(tau) = w^j (tau^n - 1) / (n (tau - w^j))        kernels/setup.cu lagrange_at_tau
    u     = A'^T L  (A' = A with the public-input rows m + s -> wire s)   transposed CSR mat-vec
    v, w  = B^T L, C^T L                                          (spmv.cu spmv_csr on the transposes)
    lc    = beta u + alpha v + w                                  fr_lincomb3
    ic    = lc[:p + 1] / gamma,  l = lc[p + 1:] / delta           fr_scale
    h_j   = L^(2n)_(2j+1)(tau) / delta                            lagrange_at_tau on the odd roots
Inverses are per element (Fermat, ~390 Fr mul each): at 2^24 about 13 G mul for L and h together.
Only the constraint matrices go up and the six scalar vectors come down.
"""

from __future__ import annotations

import numpy as np

from ..domain import Domain, domain_size, resolve
from ..field import FR_LIMBS, R_MOD, fr_to_limbs
from ..kernels.loader import get_kernel, require_cupy
from ..r1cs import ConstraintSystem
from .device import launch, log2_size, mont_limbs, two_level
from .spmv import DeviceCsr

MODULE = "setup.cu"
THREADS = 256


def _launch(name: str, n: int, args) -> None:
    launch(get_kernel(MODULE, name), n, args, THREADS)


def _consts(cp, mont=(), std=()):
    """Device Fr constants: Montgomery-form values then standard-form values."""
    parts = ([mont_limbs(list(mont))] if mont else []) + ([fr_to_limbs(list(std))] if std else [])
    return cp.asarray(np.ascontiguousarray(np.concatenate(parts)))


def lagrange_device(tau: int, n: int, shift: int, factor: int, domain: Domain | str | None = None):
    """cupy uint64[n, 4] (standard): x_j / (tau - x_j) * factor with x_j = shift * w_n^j."""
    cp = require_cupy()
    log_n = log2_size(n, "lagrange")
    hi, lo, lo_bits = two_level(resolve(domain, n, "lagrange").omega, log_n, [shift])
    out = cp.empty((n, FR_LIMBS), dtype=cp.uint64)
    _launch("lagrange_at_tau", n, (out, np.uint64(n), cp.asarray(hi), cp.asarray(lo), np.int32(lo_bits),
                                   _consts(cp, mont=[tau], std=[factor])))
    return out


def _transposed_matvec(cp, m, lag, n_out: int, extra_rows: int = 0):
    t = DeviceCsr.upload(m).transposed(extra_rows)
    out = cp.empty((n_out, FR_LIMBS), dtype=cp.uint64)
    t.matvec_into(out, lag)
    return out


def setup_scalars(cs: ConstraintSystem, tau: int, alpha: int, beta: int, gamma: int, delta: int,
                  domain: Domain | str | None = None, on_device: bool = False) -> dict:
    """{"u", "v", "w", "ic", "l", "h"}: standard-form numpy ``uint64[k, 4]`` (cupy with
    ``on_device``: at 2^27 six 4 GiB vectors that need not cross the bus), equal to
    groth16.setup.setup_scalars_cpu (see the module docstring for the formulas)."""
    cp = require_cupy()
    if cs.C is None:
        raise ValueError(f"{cs.name}: the development setup needs the C matrix")
    m, p, nw = cs.n_constraints, cs.n_public, cs.n_wires
    n = domain_size(m, p)
    d = resolve(domain, n, "setup")
    tau, alpha, beta = tau % R_MOD, alpha % R_MOD, beta % R_MOD
    if pow(tau, 2 * n, R_MOD) == 1:  # tau - x = 0 for a root x: the CPU path raises the same
        raise ZeroDivisionError("setup: tau is a 2n-th root of unity, the Lagrange basis at tau is undefined")
    gamma_inv, delta_inv = pow(gamma, -1, R_MOD), pow(delta, -1, R_MOD)
    lag = lagrange_device(tau, n, 1, (pow(tau, n, R_MOD) - 1) * d.n_inv % R_MOD, d)
    u = _transposed_matvec(cp, cs.A, lag, nw, extra_rows=p + 1)
    v = _transposed_matvec(cp, cs.B, lag, nw)
    w = _transposed_matvec(cp, cs.C, lag, nw)
    del lag
    lc = cp.empty_like(u)
    _launch("fr_lincomb3", nw, (lc, u, v, w, _consts(cp, mont=[beta, alpha]), np.uint64(nw)))
    ic = cp.empty((p + 1, FR_LIMBS), dtype=cp.uint64)
    l_q = cp.empty((nw - p - 1, FR_LIMBS), dtype=cp.uint64)
    _launch("fr_scale", p + 1, (ic, lc[: p + 1], _consts(cp, mont=[gamma_inv]), np.uint64(p + 1)))
    _launch("fr_scale", nw - p - 1, (l_q, lc[p + 1 :], _consts(cp, mont=[delta_inv]), np.uint64(nw - p - 1)))
    w2 = d.omega_2n
    h_factor = (pow(tau, 2 * n, R_MOD) - 1) * pow(2 * n, -1, R_MOD) % R_MOD * delta_inv % R_MOD
    h = lagrange_device(tau, n, w2, h_factor, d)
    out = {"u": u, "v": v, "w": w, "ic": ic, "l": l_q, "h": h}
    return out if on_device else {k: cp.asnumpy(x) for k, x in out.items()}
