"""The scalar side of the development setup on the GPU: what groth16.setup.setup_scalars_cpu
computes, bit for bit, in seconds at 2^24 (the Python-int version takes minutes there).

    L_j   = L^n_j(tau) = w^j (tau^n - 1) / (n (tau - w^j))        kernels/setup.cu lagrange_at_tau
    u     = A'^T L  (A' = A with the public-input rows m + s -> wire s)   transposed CSR mat-vec
    v, w  = B^T L, C^T L                                          (spmv.cu spmv_csr on the transposes)
    lc    = beta u + alpha v + w                                  fr_lincomb3
    ic    = lc[:p + 1] / gamma,  l = lc[p + 1:] / delta           fr_scale
    h_j   = L^(2n)_(2j+1)(tau) / delta                            lagrange_at_tau on the odd roots
With qap="bellperson" (ref/bellperson_qap.py): L on the native domain of size m (the constraint
count rounded up to a power of two), A as it is (a recorded Filecoin circuit holds its input rows),
and h_i = tau^i Z(tau) / delta for i < m - 1 (ntt.cu powers_table: 1 mul each, no inverse).
Inverses are per element (Fermat, ~390 Fr mul each): at 2^24 about 13 G mul for L and h together.
Only the constraint matrices go up and the six scalar vectors come down.
"""

from __future__ import annotations

import numpy as np

from ..domain import Domain, domain_size, resolve
from ..field import FR_LIMBS, FR_R, R_MOD, fr_to_limbs
from ..kernels.loader import get_kernel, require_cupy
from ..r1cs import ConstraintSystem
from ..ref.bellperson_qap import bellperson_domain
from .device import launch, log2_size, mont_limbs, two_level
from .spmv import DeviceCsr

MODULE = "setup.cu"
NTT_MODULE = "ntt.cu"  # its powers_table kernel makes bellperson's H query
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
                  domain: Domain | str | None = None, on_device: bool = False, qap: str = "snarkjs") -> dict:
    """{"u", "v", "w", "ic", "l", "h"}: standard-form numpy ``uint64[k, 4]`` (cupy with
    ``on_device``: at 2^27 six 4 GiB vectors that need not cross the bus), equal to
    groth16.setup.setup_scalars_cpu for the key's H convention ``qap`` (see the module docstring
    for the formulas; ``domain`` is the snarkjs one, bellperson's is always native)."""
    cp = require_cupy()
    if cs.C is None:
        raise ValueError(f"{cs.name}: the development setup needs the C matrix")
    if qap not in ("snarkjs", "bellperson"):
        raise ValueError(f"setup: qap={qap!r} is not one of snarkjs, bellperson")
    p, nw = cs.n_public, cs.n_wires
    tau, alpha, beta = tau % R_MOD, alpha % R_MOD, beta % R_MOD
    gamma_inv, delta_inv = pow(gamma, -1, R_MOD), pow(delta, -1, R_MOD)
    if qap == "bellperson":
        d = bellperson_domain(cs.n_constraints)
        lag, extra_rows = _lagrange(tau, d, 1), 0
    else:
        d = resolve(domain, domain_size(cs.n_constraints, p), "setup")
        lag, extra_rows = _lagrange(tau, d, 2), p + 1
    u = _transposed_matvec(cp, cs.A, lag, nw, extra_rows=extra_rows)
    v = _transposed_matvec(cp, cs.B, lag, nw)
    w = _transposed_matvec(cp, cs.C, lag, nw)
    del lag
    lc = cp.empty_like(u)
    _launch("fr_lincomb3", nw, (lc, u, v, w, _consts(cp, mont=[beta, alpha]), np.uint64(nw)))
    ic = cp.empty((p + 1, FR_LIMBS), dtype=cp.uint64)
    l_q = cp.empty((nw - p - 1, FR_LIMBS), dtype=cp.uint64)
    _launch("fr_scale", p + 1, (ic, lc[: p + 1], _consts(cp, mont=[gamma_inv]), np.uint64(p + 1)))
    _launch("fr_scale", nw - p - 1, (l_q, lc[p + 1 :], _consts(cp, mont=[delta_inv]), np.uint64(nw - p - 1)))
    del lc
    h = bellperson_h_query_device(tau, d, delta_inv) if qap == "bellperson" else _odd_coset_h(tau, d, delta_inv)
    out = {"u": u, "v": v, "w": w, "ic": ic, "l": l_q, "h": h}
    return out if on_device else {k: cp.asnumpy(x) for k, x in out.items()}


def _lagrange(tau: int, d: Domain, root_order: int):
    """L^n_j(tau) on d's roots; ZeroDivisionError when tau^(root_order n) = 1 (tau on the domain,
    or for the snarkjs H on the 2n domain, where the basis at tau is undefined: the CPU raises too)."""
    n = d.n
    if pow(tau, root_order * n, R_MOD) == 1:
        raise ZeroDivisionError(f"setup: tau is a {root_order * n}-th root of unity, the Lagrange basis at tau "
                                "is undefined")
    return lagrange_device(tau, n, 1, (pow(tau, n, R_MOD) - 1) * d.n_inv % R_MOD, d)


def _odd_coset_h(tau: int, d: Domain, delta_inv: int):
    """The snarkjs H query's scalars: L^(2n)_(2j+1)(tau) / delta for j < n."""
    n = d.n
    h_factor = (pow(tau, 2 * n, R_MOD) - 1) * pow(2 * n, -1, R_MOD) % R_MOD * delta_inv % R_MOD
    return lagrange_device(tau, n, d.omega_2n, h_factor, d)


def bellperson_h_query_device(tau: int, d: Domain, factor: int = 1):
    """cupy uint64[m - 1, 4] (standard): tau^i Z(tau) * factor for i < m - 1, m = d.n (bellperson's
    H query with factor 1 / delta; ref.bellperson_qap.h_query_scalars times factor).
    ntt.cu powers_table multiplies two Montgomery table entries; with R^-1 folded into the low
    table (entries tau^j f R^-1 in Montgomery form, i.e. tau^j f as stored words), the Montgomery
    product comes out in standard form. 1 mul per element."""
    cp = require_cupy()
    m = d.n
    f = (pow(tau, m, R_MOD) - 1) * factor % R_MOD * pow(FR_R, -1, R_MOD) % R_MOD
    hi, lo, lo_bits = two_level(tau % R_MOD, d.log_n, [f])
    out = cp.empty((m - 1, FR_LIMBS), dtype=cp.uint64)
    launch(get_kernel(NTT_MODULE, "powers_table"), m - 1,
           (out, np.uint64(m - 1), cp.asarray(hi), cp.asarray(lo), np.int32(lo_bits)), THREADS)
    return out
