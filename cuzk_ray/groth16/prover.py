"""Groth16 prover in the snarkjs convention, with layered entry points (as arkworks):

  prove(pk, cs, witness, r, s, backend)          from constraint matrices + witness
  prove_from_abc(pk, a, b, c, witness, r, s, ...) from a, b, c on the domain
  prove_from_h(pk, h, witness, r, s, ...)        from h + witness (MSMs and assembly only)
  prove_bellperson(pk, cs, witness, r, s, backend) from matrices + witness, bellperson's H (a key
                                                  of that convention; CPU reference H)

Notation: w = witness (w_0 = 1, w_1..w_p public), r and s the blinding scalars.
  pi_a = alpha1 + sum w_i A_i + r delta1          (sums over the wires of a_wires / b_wires for a
                                                   key stored by density: the others' points are 0)
  pi_b = beta2  + sum w_i B2_i + s delta2         (B1 = beta1 + sum w_i B1_i + s delta1)
  pi_c = sum_{i>p} w_i L_i + sum h_j H_j + s pi_a + r B1 - r s delta1

Field vectors (witness, h) may be FrVectors (checked where they were made: readers, synthesis)
or raw limbs / ints; each entry point hands them to ``backend.stage`` once (cuda: uploaded and, if
raw, range-checked there; cpu: as they are), so the backend's kernels see each vector checked once.
"""

from __future__ import annotations

import secrets

from ..backends import check_backend_curve
from ..curve_groups import groups_for
from ..curves import BLS12_381
from ..domain import domain_size
from ..field import R_MOD, FrVector, as_fr_limbs, fr_to_limbs
from ..r1cs import ConstraintSystem
from ..ref import bellperson_qap
from ..timing import StageTimes
from .keys import Proof, ProvingKey

G2_SPLIT_MIN = 1 << 12  # below this the G2 MSM is short enough to run whole
H_SPLIT_MIN = 1 << 16  # below this the H MSM is short enough to run whole (on a split_g2 backend)


def random_blinding(modulus: int = R_MOD) -> tuple[int, int]:
    """Fresh r, s uniform below ``modulus`` (the key's curve's r: ``pk.curve.r``) from the OS's CSPRNG."""
    return secrets.randbelow(modulus), secrets.randbelow(modulus)


def prove(pk: ProvingKey, cs: ConstraintSystem, witness, r: int, s: int, backend,
          times: StageTimes | None = None) -> Proof:
    """Proof for ``witness`` of ``cs``: h by the backend from the witness (cpu: a, b, c evaluated
    on the CPU, stages "abc" and "h"; cuda: sparse mat-vec and H in VRAM, stage "h"), in the key's
    H convention (``pk.qap``: a bellperson key gets bellperson's H, as ``prove_bellperson``)."""
    times = StageTimes() if times is None else times
    if len(witness) != pk.n_wires:
        raise ValueError(f"prover: witness has {len(witness)} values, the key has {pk.n_wires} wires")
    if cs.modulus != pk.curve.r:
        raise ValueError(f"prover: {cs.name} is a circuit over another field than the key's curve ({pk.curve.name})")
    check_backend_qap(pk, backend)
    bellperson = pk.qap == "bellperson"
    h_points = (bellperson_qap.bellperson_domain(cs.n_constraints).n - 1 if bellperson
                else domain_size(cs.n_constraints, cs.n_public))
    if cs.n_wires != pk.n_wires or h_points != pk.domain_size:
        raise ValueError(f"prover: {cs.name} ({cs.n_wires} wires, {cs.n_constraints} constraints: {h_points} "
                         f"{pk.qap} H points) does not match the key ({pk.n_wires} wires, {pk.domain_size} H points)")
    # once: a cuda backend uploads (and checks a raw array below the key's r) here
    witness = backend.stage(witness, modulus=pk.curve.r)
    early = None
    if getattr(backend, "msm_before_h", False):
        # the MSMs over the witness (all but H's) start now, on the backend's threads, while this
        # thread evaluates a, b, c and H: the CPU's cores stay busy through H's serial parts
        early = submit_witness_msms(pk, _scalars(backend, witness, pk.curve.r), backend, times)
    if bellperson:  # only then the keyword: a backend that predates it computes the snarkjs H alone
        h = backend.compute_h_from_witness(cs, witness, times, qap="bellperson")
    else:
        h = backend.compute_h_from_witness(cs, witness, times)
    # the caller's witness (usually limbs already): the MSMs take limbs, no round trip through ints
    return prove_from_h(pk, h, witness, r, s, backend, times, early)


def check_backend_qap(pk: ProvingKey, backend) -> None:
    """ValueError (one line) when the backend cannot compute H in the key's convention: a backend
    lists the conventions it computes in ``qaps``; bellperson's H is BLS12-381's (Filecoin's) only."""
    if pk.qap == "bellperson" and pk.curve is not BLS12_381:
        raise ValueError(f"backend={backend.name}: bellperson's H (Filecoin's QAP) is BLS12-381's only; this key "
                         f"is over {pk.curve.name}")
    if pk.qap not in backend.qaps:
        raise ValueError(f"backend={backend.name}: this key needs {pk.qap}'s H, which the {backend.name} "
                         f"backend does not compute ({', '.join(backend.qaps)} only)")


def prove_bellperson(pk: ProvingKey, cs: ConstraintSystem, witness, r: int, s: int, backend,
                     times: StageTimes | None = None) -> Proof:
    """Proof for ``witness`` of ``cs`` with bellperson's H (FILECOIN.md 2.3; ref/bellperson_qap.py),
    for a key of that convention (``dev_setup(..., qap="bellperson")``: m - 1 H points). a, b, c
    and H by the CPU reference (stages "abc" and "h"); the MSMs and the assembly as ``prove``."""
    times = StageTimes() if times is None else times
    domain = bellperson_qap.bellperson_domain(cs.n_constraints)
    if pk.qap != "bellperson" or cs.n_wires != pk.n_wires or pk.domain_size != domain.n - 1:
        raise ValueError(f"prover: {cs.name} ({cs.n_wires} wires, {cs.n_constraints} constraints: bellperson "
                         f"domain {domain.n}, {domain.n - 1} H points) does not match the key ({pk.qap} H, "
                         f"{pk.n_wires} wires, {pk.domain_size} H points)")
    with times.stage("abc"):
        a, b, c = bellperson_qap.evaluations(cs, witness)
    with times.stage("h"):
        h = fr_to_limbs(bellperson_qap.compute_h(a, b, c, domain))
    return prove_from_h(pk, h, witness, r, s, backend, times)


def prove_from_abc(pk: ProvingKey, a, b, c, witness, r: int, s: int, backend, times: StageTimes | None = None) -> Proof:
    times = StageTimes() if times is None else times
    if len(a) != pk.domain_size:
        raise ValueError(f"prover: a, b, c have {len(a)} entries, the key's domain is {pk.domain_size}")
    with times.stage("h"):
        h = backend.compute_h(a, b, c)
    return prove_from_h(pk, h, witness, r, s, backend, times)


def _scalars(backend, x, modulus: int = R_MOD):
    """x where the backend's MSMs read it: staged (a no-op for an FrVector already there; raw
    values checked below ``modulus``, the key's r, on the cuda backend); an FrVector or a device
    array as it is, anything else as standard-form limbs."""
    x = backend.stage(x, modulus=modulus)
    if isinstance(x, FrVector) or hasattr(x, "__cuda_array_interface__"):
        return x  # device arrays stay on the device: every MSM of the cuda backend reads them there
    return as_fr_limbs(x)


def _timed(backend, times: StageTimes, name: str, fn, *args):
    """fn(*args) on the backend's threads, timed as stage ``name``: a future."""
    def run():
        with times.stage(name):
            return fn(*args)
    return backend.submit(run)


def submit_witness_msms(pk: ProvingKey, w, backend, times: StageTimes) -> dict:
    """Start every MSM whose scalars are the witness's (A, B1, B2, L; not H's) on the backend's
    threads: {stage: future}. ``w``: the staged witness (``_scalars``)."""
    if len(w) != pk.n_wires:
        raise ValueError(f"prover: witness has {len(w)} values, the key has {pk.n_wires} wires")
    check_backend_curve(backend.name, pk.curve.name)
    key = backend.load_key(pk)
    p = pk.n_public

    # A key stored by density has a point per wire of a_wires (a_query) and of b_wires (b_g1 and
    # b_g2): their witness values are gathered once (both B MSMs read the same gathered scalars);
    # on a dense query gather gives w back.
    if pk.dense:
        w_a = w_b = w
    else:
        with times.stage("gather"):
            w_a, w_b = backend.gather(key, "a_wires", w), backend.gather(key, "b_wires", w)
    # The G2 MSM is the longest (~3x a G1 MSM): start it first. On a backend with split_g2 (the
    # CPU) in two halves, so that two threads share it instead of one finishing it alone after the
    # G1 MSMs; a GPU backend runs it whole. The halves cut the gathered scalars, and start says
    # where each half's bases begin in the (density-stored) b_g2_query.
    nb = len(w_b)
    split = backend.split_g2 and nb >= G2_SPLIT_MIN
    half = nb // 2 if split else nb
    jobs = {"msm_b_g2": _timed(backend, times, "msm_b_g2", backend.msm_g2, key, "b_g2_query", w_b[:half], 0)}
    if half < nb:
        jobs["msm_b_g2_hi"] = _timed(backend, times, "msm_b_g2_hi", backend.msm_g2, key, "b_g2_query",
                                     w_b[half:], half)
    jobs.update({
        "msm_a": _timed(backend, times, "msm_a", backend.msm_g1, key, "a_query", w_a),
        "msm_b_g1": _timed(backend, times, "msm_b_g1", backend.msm_g1, key, "b_g1_query", w_b),
        "msm_l": _timed(backend, times, "msm_l", backend.msm_g1, key, "l_query", w[p + 1 :]),
    })
    return jobs


def prove_from_h(pk: ProvingKey, h, witness, r: int, s: int, backend, times: StageTimes | None = None,
                 early: dict | None = None) -> Proof:
    """The MSMs and the assembly from h and the witness; ``early``: submit_witness_msms's futures
    when the witness MSMs were started already (prove does, on a backend with msm_before_h)."""
    times = StageTimes() if times is None else times
    w = _scalars(backend, witness, pk.curve.r)
    h = _scalars(backend, h, pk.curve.r)
    if len(h) != pk.domain_size:
        raise ValueError(f"prover: h has {len(h)} values, the key's domain is {pk.domain_size}")
    jobs = dict(early) if early is not None else submit_witness_msms(pk, w, backend, times)
    key = backend.load_key(pk)
    # H's MSM starts last (h comes after a, b, c and the NTTs), when the witness's MSMs are mostly
    # done: on a split_g2 backend (the CPU) in two halves, so that both threads share it instead
    # of one running it alone (the real 2 KiB PoRep partition: 4.2M random scalars, ~49 s whole).
    nh = len(h)
    half = nh // 2 if backend.split_g2 and nh >= H_SPLIT_MIN else nh
    if half == nh:
        jobs["msm_h"] = _timed(backend, times, "msm_h", backend.msm_g1, key, "h_query", h)
    else:
        jobs["msm_h"] = _timed(backend, times, "msm_h", backend.msm_g1, key, "h_query", h[:half], 0)
        jobs["msm_h_hi"] = _timed(backend, times, "msm_h_hi", backend.msm_g1, key, "h_query", h[half:], half)
    res = {k: f.result() for k, f in jobs.items()}
    with times.stage("assemble"):
        groups = groups_for(pk.curve)
        order = groups.curve.r
        rs, ss = groups.scalar(r % order), groups.scalar(s % order)
        pi_a = key.alpha_g1 + res["msm_a"] + key.delta_g1 * rs
        b_g2 = res["msm_b_g2"] + res["msm_b_g2_hi"] if "msm_b_g2_hi" in res else res["msm_b_g2"]
        pi_b = key.beta_g2 + b_g2 + key.delta_g2 * ss
        b1 = key.beta_g1 + res["msm_b_g1"] + key.delta_g1 * ss
        msm_h = res["msm_h"] + res["msm_h_hi"] if "msm_h_hi" in res else res["msm_h"]
        pi_c = res["msm_l"] + msm_h + pi_a * ss + b1 * rs - key.delta_g1 * groups.scalar(r * s % order)
        return Proof(a=groups.g1_array([pi_a]), b=groups.g2_array([pi_b]), c=groups.g1_array([pi_c]))
