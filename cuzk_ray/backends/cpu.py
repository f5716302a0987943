"""The ``cpu`` proving backend (CpuBackend, ResidentKey): H with fast.ntt (numba) from 2^14 up,
else the Python-int reference (ref.qap); MSMs with py-arkworks-bls12381 (ref.msm). A BN254 key
(``pk.curve``) takes its points and MSMs from cuzk_ray.curve_groups (numba MSMs,
fast/bn254_msm.py) and its H from fast.ntt over BN254's Fr (from FAST_H_MIN_SIZE up, as BLS12-381).

The Backend protocol (backends/base.py, shared with the cuda backend):
  load_key(pk) -> resident key (bases converted once and kept for every later proof)
  compute_h(a, b, c) -> h as standard-form ``uint64[n, 4]``
  compute_h_from_witness(cs, witness, times, qap) -> h as an FrVector (a, b, c evaluated first; the
      cuda backend does both on the device from resident matrices); qap "bellperson": bellperson's
      H (fast/bellperson_qap.py from 2^14 up, else ref/bellperson_qap.py), m - 1 coefficients
  gather(resident, wires, scalars) -> the scalars of the key's a_wires / b_wires (numpy take)
  msm_g1(resident, query, scalars) / msm_g2(...) -> arkworks point
  stage(w) -> w expanded on the host when it is a CompactWitness, else as it is
  account, vram_peak, warm_up: no-ops here (nothing to upload, no device)
Scalars and field vectors may be FrVectors, int vectors or standard-form limbs (reduced mod r
where the arithmetic needs it, as before: the CPU paths do not range-check).
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext

import numpy as np

from ..curve_groups import groups_for
from ..curves import BLS12_381, curve_of_prime
from ..domain import Domain, domain_size
from ..field import FrVector, as_fr_limbs, fr_to_limbs, fr_vector
from ..groth16.keys import ProvingKey
from ..ref import bellperson_qap
from ..ref import qap as snarkjs_qap
from ..timing import StageTimes
from ..witness import expand_on_host

log = logging.getLogger(__name__)


class ResidentKey:
    """A proving key's points as its curve's point objects (arkworks for BLS12-381; the CPU
    analogue of bases kept in VRAM)."""

    def __init__(self, pk: ProvingKey, g1_queries: bool = True, g2_queries: bool = True):
        self.pk = pk
        self.groups = g = groups_for(pk.curve)
        self.alpha_g1, self.beta_g1, self.delta_g1 = (g.g1_points(x)[0]
                                                      for x in (pk.vk.alpha_g1, pk.beta_g1, pk.delta_g1))
        self.beta_g2, self.delta_g2 = (g.g2_points(x)[0] for x in (pk.vk.beta_g2, pk.vk.delta_g2))
        self.queries = {}
        if g2_queries:  # the GPU backend keeps it in VRAM instead
            self.queries["b_g2_query"] = g.g2_bases(pk.b_g2_query)
        if g1_queries:  # the GPU backend keeps these in VRAM instead
            self.queries.update({q: g.g1_bases(getattr(pk, q))
                                 for q in ("a_query", "b_g1_query", "l_query", "h_query")})


class CpuBackend:
    name = "cpu"
    qaps = ("snarkjs", "bellperson")  # the H conventions compute_h_from_witness computes
    split_g2 = True  # the prover runs the G2 MSM in two halves, on two threads (two cores)
    # the prover starts the witness's MSMs (on the pool) before a, b, c and H (on its own thread):
    # the MSM kernels release the GIL, so H's single-threaded parts no longer leave a core idle
    msm_before_h = True

    # ntt_fast is faster per call at every size (jobs/bench_cpu.py), but its first call in a process
    # costs ~0.35 s (numba import, kernels loaded from numba's cache): below 2^14 the reference
    # finishes sooner than that, so a one-proof process of a small circuit keeps the reference.
    FAST_H_MIN_SIZE = 1 << 14

    WARM_UP_MIN_SIZE = 1 << 12

    def __init__(self, threads: int = 2, fast_h_min_size: int | None = None):
        self.fast_h_min_size = self.FAST_H_MIN_SIZE if fast_h_min_size is None else fast_h_min_size
        # py-arkworks releases the GIL inside multiexp: MSMs in threads use several cores.
        self.pool = ThreadPoolExecutor(max_workers=max(1, threads), thread_name_prefix="cuzk-msm")
        self._keys: dict[int, ResidentKey] = {}

    def warm_up(self, pk: ProvingKey | None = None) -> None:
        """For a long-lived prover: load the fast H kernels now and use them at every size. Skipped
        for small keys (domain < 2^12), where the reference H is cheaper than loading numba."""
        if pk is not None and pk.domain_size < self.WARM_UP_MIN_SIZE:
            return
        try:
            from ..fast.ntt import warm_up
        except ImportError as e:
            log.warning("fast CPU H unavailable (%s); using the reference (slow beyond 2^16)", e)
            self.fast_h_min_size = float("inf")
            return
        warm_up()
        if pk is not None and pk.curve is not BLS12_381:  # BN254: its a, b, c, H and MSM kernels too
            from ..fast import bn254_msm, spmv

            spmv.warm_up(pk.curve.r)
            bn254_msm.warm_up()
            warm_up(Domain.of(16, "snarkjs", pk.curve.name))
        self.fast_h_min_size = 0

    def stage(self, witness, modulus: int | None = None):
        """The witness where the CPU reads it: a CompactWitness expanded on the host (a new
        ``uint64[n, 4]``), anything else as it is (``modulus``, the key's r: nothing is checked here)."""
        return expand_on_host(witness)

    def account(self):
        """No device: yields None."""
        return nullcontext(None)

    @property
    def vram_peak(self) -> None:
        return None

    def load_key(self, pk: ProvingKey) -> ResidentKey:
        key = self._keys.get(id(pk))
        if key is None or key.pk is not pk:
            key = self._keys[id(pk)] = ResidentKey(pk)
        return key

    def compute_h(self, a, b, c, domain: Domain | None = None):
        """h from a, b, c on the domain (None: BLS12-381's snarkjs domain of their length)."""
        if len(a) >= self.fast_h_min_size:
            try:
                from ..fast.ntt import compute_h_fast  # imports numba: only when it pays
            except ImportError as e:  # e.g. a GPU machine with CuPy but no numba: the reference H
                log.warning("fast CPU H unavailable (%s); using the reference (slow beyond 2^16)", e)
                self.fast_h_min_size = float("inf")
            else:
                return compute_h_fast(a, b, c, domain)
        if domain is None:
            h = snarkjs_qap.compute_h(fr_vector(a), fr_vector(b), fr_vector(c))
        else:
            h = snarkjs_qap.compute_h(a, b, c, domain)
        return fr_to_limbs(h)

    def load_cs(self, cs):
        """The constraint system as is (the CPU evaluates it where it lies; the cuda backend uploads it)."""
        return cs

    def unload(self, pk: ProvingKey, cs=None) -> None:
        """Forget the key's resident bases (cs: nothing is held for it here)."""
        key = self._keys.get(id(pk))
        if key is not None and key.pk is pk:
            del self._keys[id(pk)]

    def compute_h_from_witness(self, cs, witness, times=None, qap: str = "snarkjs") -> FrVector:
        """h (an FrVector of standard-form ``uint64[n, 4]``, reduced by construction) from the
        witness: a, b, c on the CPU (stage "abc"), then compute_h (stage "h"). ``qap``: the key's H
        convention (one of ``qaps``): "bellperson" gives bellperson's m - 1 coefficients."""
        times = StageTimes() if times is None else times
        if qap not in self.qaps:
            raise ValueError(f"backend=cpu: no H in the {qap!r} convention (known: {', '.join(self.qaps)})")
        if qap == "bellperson":
            return self._bellperson_h(cs, witness, times)
        with times.stage("abc"):
            a, b, c = self._evaluations(cs, witness)
        with times.stage("h"):
            curve = curve_of_prime(cs.modulus)
            if curve is not BLS12_381:  # BN254: the same H over its Fr (fr_vector is BLS12-381's)
                return FrVector(self.compute_h(a, b, c, Domain.of(len(a), "snarkjs", curve.name)))
            return FrVector(self.compute_h(a, b, c))

    def _evaluations(self, cs, witness):
        """a, b, c of the snarkjs QAP: numba's sparse products in limbs where the fast H runs (the
        circuit's domain from fast_h_min_size), else the reference in Python ints."""
        if domain_size(cs.n_constraints, cs.n_public) >= self.fast_h_min_size:
            try:
                from ..fast.spmv import evaluations  # imports numba: only when it pays
            except ImportError as e:
                log.warning("fast CPU a, b, c unavailable (%s); using the reference", e)
            else:
                return evaluations(cs, as_fr_limbs(witness))
        return snarkjs_qap.evaluations(cs, fr_vector(witness))

    def _bellperson_h(self, cs, witness, times: StageTimes) -> FrVector:
        with times.stage("abc"):
            a, b, c = bellperson_qap.evaluations(cs, fr_vector(witness))
        domain = bellperson_qap.bellperson_domain(cs.n_constraints)
        with times.stage("h"):
            if domain.n >= self.fast_h_min_size:
                from ..fast.bellperson_qap import compute_h as fast_h  # imports numba: only when it pays

                return FrVector(fast_h(a, b, c, domain))
            return FrVector(fr_to_limbs(bellperson_qap.compute_h(a, b, c, domain)))

    def gather(self, key: ResidentKey, wires: str, scalars):
        """scalars[pk.<wires>] (limbs, an FrVector when given one), or scalars when the key is
        dense there; see backends.base.Backend.gather."""
        idx = key.pk.density_index(wires)
        if idx is None:
            return scalars
        if len(scalars) != key.pk.n_wires:
            raise ValueError(f"gather {wires}: {len(scalars)} scalars, the key has {key.pk.n_wires} wires")
        if isinstance(scalars, FrVector):
            return FrVector(np.take(np.asarray(scalars.limbs), idx, axis=0))
        return np.take(as_fr_limbs(scalars), idx, axis=0)

    def msm_g1(self, key: ResidentKey, query: str, scalars, start: int | None = None):
        """sum_i scalars[i] * query[start + i] in G1 (start: a slice of the bases, as msm_g2)."""
        return key.groups.msm_g1(key.queries[query], scalars, start)

    def msm_g2(self, key: ResidentKey, query: str, scalars, start: int | None = None):
        """sum_i scalars[i] * query[start + i] in G2 (a slice of the bases: MSMs split in parts)."""
        return key.groups.msm_g2(key.queries[query], scalars, start)

    def submit(self, fn, *args):
        """Run fn(*args) on the backend's worker threads (for MSMs that overlap)."""
        return self.pool.submit(fn, *args)
