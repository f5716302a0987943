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
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from ..domain import domain_size
from ..field import R_MOD, FrVector, fr_to_limbs
from ..r1cs import ConstraintSystem, CsrMatrix
from ..ref import bellperson_qap
from ..ref.qap import h_query_scalars, lagrange_at
from .keys import WIRE_INDEX_DTYPE, ProvingKey

log = logging.getLogger(__name__)

INSECURE_WARNING = (
    "INSECURE development setup: the toxic waste is derived from seed {seed}; anyone who knows "
    "the seed can forge proofs. Use a ceremony key (snarkjs .zkey) for anything real."
)


def _transpose_matvec(m: CsrMatrix, x: np.ndarray) -> np.ndarray:
    """M^T x for an int vector x over the rows: sum over rows j of M[j, i] x_j, per column i."""
    rows = np.repeat(np.arange(m.n_rows, dtype=np.int64), np.diff(m.indptr))
    return CsrMatrix.from_coo(m.indices, rows, m.data, m.n_cols, m.n_rows).matvec(x)


QAP_CONVENTIONS = ("snarkjs", "bellperson")


def qap_at_tau(cs: ConstraintSystem, tau: int, qap: str = "snarkjs"):
    """u_i(tau), v_i(tau), w_i(tau) for every wire. "snarkjs": on the domain of size
    domain_size(m, p), with the public-input rows appended to A; "bellperson": on the domain of
    size m' >= m with generator 7 (ref/bellperson_qap.py), the rows as they are (a recorded
    Filecoin circuit holds its input rows ``x_i * 0 = 0`` itself)."""
    if cs.C is None:
        raise ValueError(f"{cs.name}: the development setup needs the C matrix")
    m, p = cs.n_constraints, cs.n_public
    if qap == "bellperson":
        d = bellperson_qap.bellperson_domain(m)
        lag = lagrange_at(tau, d.n, d)
    else:
        lag = lagrange_at(tau, domain_size(m, p))
    u = _transpose_matvec(cs.A, lag[:m])
    if qap == "snarkjs":
        u[: p + 1] = (u[: p + 1] + lag[m : m + p + 1]) % R_MOD
    return u, _transpose_matvec(cs.B, lag[:m]), _transpose_matvec(cs.C, lag[:m])


def setup_scalars_cpu(cs: ConstraintSystem, tau: int, alpha: int, beta: int, gamma: int, delta: int,
                      qap: str = "snarkjs") -> dict:
    """The scalars of the key's points, standard-form ``uint64[k, 4]``:
    u, v, w = qap_at_tau;  lc = beta u + alpha v + w;  ic = lc[:p+1] / gamma;  l = lc[p+1:] / delta;
    h = h_query_scalars(tau, n) / delta ("snarkjs": n odd-coset Lagrange points; "bellperson":
    tau^i Z(tau), i < m - 1). The reference, in Python ints: a key is made with the same values
    from fast/setup_scalars.py (CPU) or cuda/setup.py (GPU), each tested against this."""
    u, v, w = qap_at_tau(cs, tau, qap)
    p = cs.n_public
    gamma_inv, delta_inv = pow(gamma, -1, R_MOD), pow(delta, -1, R_MOD)
    lc = (beta * u + alpha * v + w) % R_MOD
    if qap == "bellperson":
        h = bellperson_qap.h_query_scalars(tau, bellperson_qap.bellperson_domain(cs.n_constraints))
    else:
        h = h_query_scalars(tau, domain_size(cs.n_constraints, p))
    out = {"u": u, "v": v, "w": w, "ic": (lc[: p + 1] * gamma_inv) % R_MOD, "l": (lc[p + 1 :] * delta_inv) % R_MOD,
           "h": (h * delta_inv) % R_MOD}
    return {k: fr_to_limbs(x) for k, x in out.items()}



def fixed_base_function(device: str):
    """(group, uint64[k, 4] scalars) -> point array: fast.fixed_base.fixed_base_mul_array (numba,
    every CPU core) or, for "cuda", cuda.fixed_base.fixed_base_mul_gpu; both bit-identical to the
    reference ref.msm.fixed_base_mul_array (py-arkworks, ~10x slower: the tests' oracle)."""
    if device == "cpu":
        from ..fast.fixed_base import fixed_base_mul_array

        return fixed_base_mul_array
    if device == "cuda":
        from ..cuda.fixed_base import fixed_base_mul_gpu

        return fixed_base_mul_gpu
    raise ValueError(f"dev_setup: fixed_base={device!r} is not 'cpu' or 'cuda'")


@dataclass(frozen=True)
class ToxicWaste:
    """tau, alpha, beta, gamma, delta of a development setup (derived from its seed)."""

    tau: int
    alpha: int
    beta: int
    gamma: int
    delta: int

    @classmethod
    def from_seed(cls, seed: int) -> ToxicWaste:
        rng = random.Random(f"cuzk-ray dev setup {seed}")
        return cls(*(rng.randrange(1, R_MOD) for _ in range(5)))


def wire_density(cs: ConstraintSystem) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(a_wires, b_wires): the wires with a point in a_query (those in A, and the public-input
    wires 0..n_public, whose QAP rows are appended to A) and in b_g1/b_g2_query (those in B), as
    sorted keys.WIRE_INDEX_DTYPE arrays; None where that is every wire (no index, no gather).
    Every other wire's point is at infinity: a key by density skips it."""
    in_a = np.zeros(cs.n_wires, dtype=bool)
    in_a[cs.A.indices] = True
    in_a[: cs.n_public + 1] = True
    in_b = np.zeros(cs.n_wires, dtype=bool)
    in_b[cs.B.indices] = True
    return tuple(None if m.all() else np.flatnonzero(m).astype(WIRE_INDEX_DTYPE) for m in (in_a, in_b))


class MemorySink:
    """Where dev_setup puts the key's arrays in memory (formats.native.BundleWriter is the same
    interface on disk): ``add`` a whole array, or ``stream`` it chunk by chunk."""

    def __init__(self):
        self.arrays: dict[str, np.ndarray] = {}

    def add(self, name: str, arr: np.ndarray) -> None:
        self.arrays[name] = np.ascontiguousarray(arr)

    @contextmanager
    def stream(self, name: str, dtype, shape: tuple):
        out = self.arrays[name] = np.empty(shape, dtype=dtype)
        yield _Filler(out)


class _Filler:
    def __init__(self, out: np.ndarray):
        self.out, self.rows = out, 0

    def write(self, chunk: np.ndarray) -> None:
        self.out[self.rows : self.rows + len(chunk)] = chunk
        self.rows += len(chunk)


POINT_SHAPE = {"g1": (2, 6), "g2": (2, 2, 6)}
STREAM_CHUNK = 1 << 23  # points per GPU fixed-base call: <= 1.5 GiB of G2 points on the host at once


def _gather(xp, values, index, beg: int, end: int):
    """values[index[beg:end]] (all rows when index is None): limbs on the CPU, a trusted FrVector
    on the GPU (reduced by construction: the fixed-base wrapper does not check it again)."""
    rows = xp.ascontiguousarray(values[beg:end] if index is None else values[index[beg:end]])
    return rows if xp is np else FrVector(rows)


def generate_key(sink, cs: ConstraintSystem, seed: int, meta: dict | None = None, backend: str = "cpu",
                 fixed_base: str | None = None, density: bool = True, chunk: int | None = None,
                 qap: str = "snarkjs") -> dict:
    """Compute a development key for cs into ``sink`` (MemorySink or a BundleWriter), query by
    query and, on the GPU, STREAM_CHUNK points at a time: the host holds the scalars (on the GPU:
    nothing; they stay in VRAM) and two chunks of points, never the whole key. With ``density``
    (the default) a_query and b_g1/b_g2_query hold points only for the wires of wire_density (as
    bellperson and Filecoin's parameters store them), plus the arrays a_wires and b_wires.
    ``chunk``: points per fixed-base call (default STREAM_CHUNK on the GPU; on the CPU one call
    per query, on threads over every core). ``qap``: the H convention of the key (one of
    QAP_CONVENTIONS; on the cuda backend both conventions' scalars are computed on the GPU).
    Returns the key's meta (seed, timings, qap). After a setup that used the GPU, CuPy's cached
    blocks are given back (release_device_memory)."""
    from ..backends import resolve_backend_name

    info = _generate_key(sink, cs, seed, meta, backend, fixed_base, density, chunk, qap)
    if "cuda" in (fixed_base, resolve_backend_name(backend)):
        # The scalars (~17 GB at 2^27), their temporaries and the fixed-base tables stay in CuPy's
        # pool otherwise: a driver that made the key would hold them while the prover actors,
        # other processes, load the key and prove on the same GPU.
        from ..cuda.device import release_device_memory

        release_device_memory()
    return info


def _generate_key(sink, cs: ConstraintSystem, seed: int, meta: dict | None, backend: str,
                  fixed_base: str | None, density: bool, chunk: int | None, qap: str) -> dict:
    """generate_key's work; generate_key frees the device memory this leaves cached in CuPy's pool."""
    from ..backends import resolve_backend_name

    if qap not in QAP_CONVENTIONS:
        raise ValueError(f"dev_setup: qap={qap!r} is not one of {', '.join(QAP_CONVENTIONS)}")
    log.warning(INSECURE_WARNING.format(seed=seed))
    device = fixed_base or resolve_backend_name(backend)
    mul = fixed_base_function(device)
    t = ToxicWaste.from_seed(seed)
    t0 = time.perf_counter()
    if resolve_backend_name(backend) == "cuda":  # the scalars stay in VRAM; chunks are gathered there
        from ..cuda.setup import setup_scalars
        from ..kernels.loader import require_cupy

        xp = require_cupy()
        sc = setup_scalars(cs, t.tau, t.alpha, t.beta, t.gamma, t.delta, on_device=True, qap=qap)
    else:  # the same values as setup_scalars_cpu, compiled (37 s -> ~5 s for the real 2 KiB PoRep circuit)
        from ..fast.setup_scalars import setup_scalars_fast

        xp = np
        sc = setup_scalars_fast(cs, t.tau, t.alpha, t.beta, t.gamma, t.delta, qap)
    t_scalars = time.perf_counter() - t0
    a_wires, b_wires = wire_density(cs) if density else (None, None)
    a_idx, b_idx = (None if x is None else xp.asarray(x) for x in (a_wires, b_wires))
    queries = [("a_query", "g1", sc["u"], a_idx), ("b_g1_query", "g1", sc["v"], b_idx),
               ("b_g2_query", "g2", sc["v"], b_idx), ("l_query", "g1", sc["l"], None),
               ("h_query", "g1", sc["h"], None), ("ic", "g1", sc["ic"], None)]
    chunk = chunk or (STREAM_CHUNK if device == "cuda" else None)
    for name, group, values, index in queries:
        n = len(values) if index is None else len(index)
        with sink.stream(name, np.uint64, (n, *POINT_SHAPE[group])) as out:
            step = chunk or max(1, n)
            for beg in range(0, n, step):
                out.write(mul(group, _gather(xp, values, index, beg, min(n, beg + step))))
    g1 = mul("g1", fr_to_limbs([t.alpha, t.beta, t.delta]))
    g2 = mul("g2", fr_to_limbs([t.beta, t.gamma, t.delta]))
    for name, arr in (("alpha_g1", g1[0:1]), ("beta_g1", g1[1:2]), ("delta_g1", g1[2:3]),
                      ("beta_g2", g2[0:1]), ("gamma_g2", g2[1:2]), ("delta_g2", g2[2:3])):
        sink.add(name, arr)
    for name, wires in (("a_wires", a_wires), ("b_wires", b_wires)):
        if wires is not None:
            sink.add(name, wires)
    info = {"insecure_dev_setup": True, "seed": seed, "qap": qap, "n_constraints": cs.n_constraints,
            "setup_seconds": round(time.perf_counter() - t0, 3), "setup_scalars_seconds": round(t_scalars, 3)}
    info.update(meta or {})
    return info


def dev_setup(cs: ConstraintSystem, seed: int, meta: dict | None = None, backend: str = "cpu",
              fixed_base: str | None = None, density: bool = True, chunk: int | None = None,
              qap: str = "snarkjs") -> ProvingKey:
    """A proving key for cs from toxic waste derived from seed (deterministic, insecure), in
    memory, for the H convention ``qap`` (see generate_key). ``backend`` picks where the scalars
    are computed (cpu, cuda, auto: same key either way); ``fixed_base`` where the point
    multiplications run ("cpu": every core, "cuda": the GPU; by default the resolved backend).
    Large keys: dev_setup_bundle (streamed to disk)."""
    sink = MemorySink()
    info = generate_key(sink, cs, seed, meta, backend, fixed_base, density, chunk, qap)
    pk = ProvingKey.from_arrays(sink.arrays, info)
    pk.validate()
    return pk


def dev_setup_bundle(path, cs: ConstraintSystem, seed: int, meta: dict | None = None, backend: str = "cpu",
                     fixed_base: str | None = None, density: bool = True, chunk: int | None = None,
                     qap: str = "snarkjs"):
    """dev_setup written straight into a native key bundle at ``path`` (with cs's matrices: hard
    links when they are mapped from a recording's files, see BundleWriter.add) as it is computed:
    host memory stays bounded (see generate_key) whatever the key's size. Returns the bundle's
    path; formats.native.load_bundle maps it back."""
    from ..formats.native import BundleWriter, bundle_manifest, matrix_arrays

    with BundleWriter(path) as w:
        for name, arr in matrix_arrays(cs).items():
            w.add(name, arr)
        info = generate_key(w, cs, seed, meta, backend, fixed_base, density, chunk, qap)
        p = cs.n_public
        h_points = (bellperson_qap.bellperson_domain(cs.n_constraints).n - 1 if qap == "bellperson"
                    else domain_size(cs.n_constraints, p))  # the key's domain_size: len(h_query)
        return w.commit(bundle_manifest(info, cs.n_wires, p, h_points, cs))
