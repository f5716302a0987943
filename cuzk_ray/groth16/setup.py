"""Development (single-party, seeded, INSECURE) Groth16 setup in the snarkjs convention.

Toxic waste tau, alpha, beta, gamma, delta comes from a seeded RNG, so anyone who knows the seed
can forge proofs. It exists for tests, benchmarks and the built-in circuits; real deployments use
a ceremony (e.g. a snarkjs .zkey). Notation follows Groth16: u_i, v_i, w_i are the QAP polynomials
of wire i evaluated at tau.
"""

from __future__ import annotations

import logging
import random
import time

import numpy as np

from ..domain import domain_size
from ..field import R_MOD, fr_to_limbs
from ..r1cs import ConstraintSystem, CsrMatrix
from ..ref.msm import fixed_base_mul_array
from ..ref.qap import h_query_scalars, lagrange_at
from .keys import ProvingKey, VerifyingKey

log = logging.getLogger(__name__)

INSECURE_WARNING = (
    "INSECURE development setup: the toxic waste is derived from seed {seed}; anyone who knows "
    "the seed can forge proofs. Use a ceremony key (snarkjs .zkey) for anything real."
)


def _transpose_matvec(m: CsrMatrix, x: np.ndarray) -> np.ndarray:
    """M^T x for an int vector x over the rows: sum over rows j of M[j, i] x_j, per column i."""
    rows = np.repeat(np.arange(m.n_rows, dtype=np.int64), np.diff(m.indptr))
    return CsrMatrix.from_coo(m.indices, rows, m.data, m.n_cols, m.n_rows).matvec(x)


def qap_at_tau(cs: ConstraintSystem, tau: int):
    """u_i(tau), v_i(tau), w_i(tau) for every wire, with the public-input rows appended to A."""
    if cs.C is None:
        raise ValueError(f"{cs.name}: the development setup needs the C matrix")
    m, p = cs.n_constraints, cs.n_public
    lag = lagrange_at(tau, domain_size(m, p))
    u = _transpose_matvec(cs.A, lag[:m])
    u[: p + 1] = (u[: p + 1] + lag[m : m + p + 1]) % R_MOD
    return u, _transpose_matvec(cs.B, lag[:m]), _transpose_matvec(cs.C, lag[:m])


def setup_scalars_cpu(cs: ConstraintSystem, tau: int, alpha: int, beta: int, gamma: int, delta: int) -> dict:
    """The scalars of the key's points, standard-form ``uint64[k, 4]``:
    u, v, w = qap_at_tau;  lc = beta u + alpha v + w;  ic = lc[:p+1] / gamma;  l = lc[p+1:] / delta;
    h = h_query_scalars(tau, n) / delta.  (cuda/setup.py computes the same on the GPU.)"""
    u, v, w = qap_at_tau(cs, tau)
    p = cs.n_public
    gamma_inv, delta_inv = pow(gamma, -1, R_MOD), pow(delta, -1, R_MOD)
    lc = (beta * u + alpha * v + w) % R_MOD
    n = domain_size(cs.n_constraints, p)
    out = {"u": u, "v": v, "w": w, "ic": (lc[: p + 1] * gamma_inv) % R_MOD, "l": (lc[p + 1 :] * delta_inv) % R_MOD,
           "h": (h_query_scalars(tau, n) * delta_inv) % R_MOD}
    return {k: fr_to_limbs(x) for k, x in out.items()}


def scalars_function(backend: str = "cpu"):
    """setup_scalars_cpu, or the GPU version for backend "cuda" ("auto": cuda when usable)."""
    from ..backends import resolve_backend_name

    if resolve_backend_name(backend) == "cuda":
        from ..cuda.setup import setup_scalars

        return setup_scalars
    return setup_scalars_cpu


def fixed_base_function(device: str):
    """(group, uint64[k, 4] scalars) -> point array: fixed_base_mul_array (every CPU core) or,
    for "cuda", cuda.fixed_base.fixed_base_mul_gpu (bit-identical)."""
    if device == "cpu":
        return fixed_base_mul_array
    if device == "cuda":
        from ..cuda.fixed_base import fixed_base_mul_gpu

        return fixed_base_mul_gpu
    raise ValueError(f"dev_setup: fixed_base={device!r} is not 'cpu' or 'cuda'")


def dev_setup(cs: ConstraintSystem, seed: int, meta: dict | None = None, backend: str = "cpu",
              fixed_base: str | None = None) -> ProvingKey:
    """A proving key for cs from toxic waste derived from seed (deterministic, insecure).
    ``backend`` picks where the scalars are computed (cpu, cuda, auto: same key either way);
    ``fixed_base`` where the point multiplications run ("cpu": every core, "cuda": the GPU; by
    default the resolved backend)."""
    from ..backends import resolve_backend_name

    log.warning(INSECURE_WARNING.format(seed=seed))
    mul = fixed_base_function(fixed_base or resolve_backend_name(backend))
    rng = random.Random(f"cuzk-ray dev setup {seed}")
    tau, alpha, beta, gamma, delta = (rng.randrange(1, R_MOD) for _ in range(5))
    t0 = time.perf_counter()
    sc = scalars_function(backend)(cs, tau, alpha, beta, gamma, delta)
    p, m_w, n = cs.n_public, cs.n_wires, len(sc["h"])
    g1_scalars = np.concatenate([sc["u"], sc["v"], sc["ic"], sc["l"], sc["h"], fr_to_limbs([alpha, beta, delta])])
    pts = mul("g1", g1_scalars)
    cuts = np.cumsum([m_w, m_w, p + 1, m_w - p - 1, n])
    a_q, b1_q, ic, l_q, h_q, singles = np.split(pts, cuts)
    g2_pts = mul("g2", np.concatenate([sc["v"], fr_to_limbs([beta, gamma, delta])]))
    b2_q, g2_singles = g2_pts[:m_w], g2_pts[m_w:]
    vk = VerifyingKey(alpha_g1=singles[0:1], beta_g2=g2_singles[0:1], gamma_g2=g2_singles[1:2],
                      delta_g2=g2_singles[2:3], ic=ic)
    info = {"insecure_dev_setup": True, "seed": seed, "n_constraints": cs.n_constraints,
            "setup_seconds": round(time.perf_counter() - t0, 3)}
    info.update(meta or {})
    pk = ProvingKey(vk=vk, beta_g1=singles[1:2], delta_g1=singles[2:3], a_query=a_q, b_g1_query=b1_q,
                    b_g2_query=b2_q, l_query=l_q, h_query=h_q, meta=info)
    pk.validate()
    return pk.by_density()  # stored as bellperson does: no points at infinity in a, b_g1, b_g2
