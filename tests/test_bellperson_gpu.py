"""bellperson's H and the bellperson-convention development setup on the GPU (FILECOIN.md 2.3)
against the CPU reference (ref/bellperson_qap.py, groth16.setup.setup_scalars_cpu), bit for bit.

Run on a GPU machine: ``pytest -m gpu tests/test_bellperson_gpu.py``; skipped elsewhere. Seeds are
printed in assertion messages so a failure can be replayed (CUZK_TEST_SEED).
"""

from __future__ import annotations

import functools
import os
import random

import numpy as np
import pytest
from gpu import require_gpu

cp = require_gpu()

from cuzk_ray.circuits.porep import build_circuit, synthesize  # noqa: E402
from cuzk_ray.cuda import ntt as cuda  # noqa: E402
from cuzk_ray.cuda import spmv as cuda_spmv  # noqa: E402
from cuzk_ray.cuda.setup import setup_scalars  # noqa: E402
from cuzk_ray.domain import Domain  # noqa: E402
from cuzk_ray.field import FR_R, R_MOD, fr_to_limbs, limbs_to_ints, root_of_unity  # noqa: E402
from cuzk_ray.groth16 import setup  # noqa: E402
from cuzk_ray.ref import bellperson_qap  # noqa: E402
from cuzk_ray.ref.ntt import intt  # noqa: E402

pytestmark = pytest.mark.gpu
SEED = int(os.environ.get("CUZK_TEST_SEED", random.randrange(2**32)))
R_INV = pow(FR_R, -1, R_MOD)


@pytest.fixture
def rng():
    return random.Random(SEED)


@pytest.fixture(scope="module")
def backend():
    from cuzk_ray.backends.cuda import CudaBackend

    return CudaBackend()


def rand_fr(rng, n):
    return [rng.randrange(R_MOD) for _ in range(n)]


@functools.cache
def h_oracle(a: tuple, b: tuple, c: tuple) -> list:
    d = Domain.of(len(a), "native")
    return list(bellperson_qap.compute_h(*(np.array(v, dtype=object) for v in (a, b, c)), d))


def device_abc(a, b, c, c_over_r: bool = False):
    c_in = [v * R_INV % R_MOD for v in c] if c_over_r else c
    return cp.asarray(np.stack([fr_to_limbs(v) for v in (a, b, c_in)]))


def h_both_ways(abc, monkeypatch, **kw):
    """compute_h_bellperson_device on copies of abc with FOLD_SCALE True, then False."""
    out = []
    for fold in (True, False):
        monkeypatch.setattr(cuda, "FOLD_SCALE", fold)
        out.append(cuda.compute_h_bellperson_device(abc.copy(), **kw))
    return out


def poly_at(coeffs, x: int) -> int:
    acc = 0
    for c in reversed(list(coeffs)):
        acc = (acc * x + int(c)) % R_MOD
    return acc


# ------------------------------------------------------------------------------- H


@pytest.mark.parametrize("c_over_r", [False, True])
@pytest.mark.parametrize("log_n", range(0, 13))
def test_h_matches_oracle(log_n, c_over_r, rng, monkeypatch):
    """Folded and unfolded, with c as c or as c / R: the m - 1 coefficients of the CPU reference;
    m = 1 gives none."""
    n = 1 << log_n
    a, b, c = rand_fr(rng, n), rand_fr(rng, n), rand_fr(rng, n)
    if log_n >= 2:
        a[0], b[1], c[2] = R_MOD - 1, 0, R_MOD - 1
    folded, unfolded = h_both_ways(device_abc(a, b, c, c_over_r), monkeypatch, c_over_r=c_over_r)
    what = f"bellperson h m={n} c_over_r={c_over_r}, seed {SEED}"
    assert folded.shape == (n - 1, 4), what
    assert list(limbs_to_ints(cp.asnumpy(folded))) == h_oracle(tuple(a), tuple(b), tuple(c)), what
    assert cp.array_equal(folded, unfolded), "folded vs unfolded " + what
    if log_n >= 1:  # negative twin: another c gives another h
        c[-1] = (c[-1] + 1) % R_MOD
        monkeypatch.setattr(cuda, "FOLD_SCALE", True)
        other = cuda.compute_h_bellperson_device(device_abc(a, b, c, c_over_r), c_over_r=c_over_r)
        assert not cp.array_equal(other, folded), "c ignored: " + what


@pytest.mark.parametrize("c_over_r", [False, True])
@pytest.mark.parametrize("log_n", range(0, 13))
def test_six_transform_h_matches_oracle_when_c_is_ab(log_n, c_over_r, rng, monkeypatch):
    """SIX_TRANSFORM_H with c = a b (c_is_ab, as h_from_witness passes it without C on the device),
    folded and unfolded: the seven-transform oracle's coefficients, bit for bit; the flag off
    gives the same; another a gives another h."""
    monkeypatch.setattr(cuda, "SIX_TRANSFORM_H", True)
    n = 1 << log_n
    a, b = rand_fr(rng, n), rand_fr(rng, n)
    if log_n >= 2:
        a[0], b[1] = R_MOD - 1, 0
    c = [x * y % R_MOD for x, y in zip(a, b)]
    abc = device_abc(a, b, c, c_over_r)
    folded, unfolded = h_both_ways(abc, monkeypatch, c_over_r=c_over_r, c_is_ab=True)
    what = f"six-transform h m={n} c_over_r={c_over_r}, seed {SEED}"
    assert folded.shape == (max(n - 1, 0), 4), what
    assert list(limbs_to_ints(cp.asnumpy(folded))) == h_oracle(tuple(a), tuple(b), tuple(c)), what
    assert cp.array_equal(folded, unfolded), "folded vs unfolded " + what
    monkeypatch.setattr(cuda, "SIX_TRANSFORM_H", False)
    assert cp.array_equal(cuda.compute_h_bellperson_device(abc.copy(), c_over_r=c_over_r, c_is_ab=True), folded)
    if log_n >= 1:  # negative twin
        a[-1] = (a[-1] + 1) % R_MOD
        c = [x * y % R_MOD for x, y in zip(a, b)]
        monkeypatch.setattr(cuda, "SIX_TRANSFORM_H", True)
        other = cuda.compute_h_bellperson_device(device_abc(a, b, c, c_over_r), c_over_r=c_over_r, c_is_ab=True)
        assert not cp.array_equal(other, folded), "a ignored: " + what


@pytest.mark.parametrize("bits", [1, 2, 3])
@pytest.mark.parametrize("log_n", [2, 3, 5, 7])
def test_h_small_pass_plans(log_n, bits, rng, monkeypatch):
    """Several passes per transform (MAX_PASS_BITS), so the inverse coset NTT runs passes in place
    on the scratch vector before its last one writes the new buffer."""
    monkeypatch.setattr(cuda, "MAX_PASS_BITS", bits)
    n = 1 << log_n
    a, b, c = rand_fr(rng, n), rand_fr(rng, n), rand_fr(rng, n)
    folded, unfolded = h_both_ways(device_abc(a, b, c), monkeypatch)
    want = h_oracle(tuple(a), tuple(b), tuple(c))
    assert list(limbs_to_ints(cp.asnumpy(folded))) == want, f"m={n} bits={bits}, seed {SEED}"
    assert cp.array_equal(folded, unfolded)


def test_host_wrapper_and_conventions(rng):
    """compute_h_bellperson (host in, host out) equals the oracle and does not write its inputs;
    the snarkjs domain and unknown conventions are refused; the snarkjs H is another vector."""
    n = 64
    a, b, c = rand_fr(rng, n), rand_fr(rng, n), rand_fr(rng, n)
    la, lb, lc = (fr_to_limbs(v) for v in (a, b, c))
    got = cuda.compute_h_bellperson(la, lb, lc)
    assert list(limbs_to_ints(got)) == h_oracle(tuple(a), tuple(b), tuple(c))
    assert list(limbs_to_ints(la)) == a
    assert not np.array_equal(cuda.compute_h(la, lb, lc)[: n - 1], got)
    with pytest.raises(ValueError, match="need 'native'"):
        cuda.compute_h_bellperson(la, lb, lc, domain="snarkjs")
    with pytest.raises(ValueError, match="qap='groth' is not one of"):
        cuda.h_device_function("groth")
    assert cuda.h_device_function("bellperson") is cuda.compute_h_bellperson_device


@pytest.mark.parametrize("log_n", [10, 18])
def test_h_of_a_satisfied_system_divides(log_n, rng, monkeypatch):
    """Outside the oracle, at a size it is too slow for: a b = c on the domain, so A B - C = H Z
    with H of degree <= m - 2 (the coefficient dropped was 0), checked at a random point from the
    polynomials' coefficients; folded = unfolded. A tampered c breaks the identity."""
    n = 1 << log_n
    d = Domain.of(n, "native")
    x = np.random.default_rng(rng.randrange(2**32)).integers(0, 2**64, size=(2, n, 4), dtype=np.uint64)
    x[..., 3] %= np.uint64(R_MOD >> 192)
    a, b = (limbs_to_ints(v) for v in x)
    c = a * b % R_MOD
    abc = cp.asarray(np.stack([x[0], x[1], fr_to_limbs(c)]))
    folded, unfolded = h_both_ways(abc, monkeypatch)
    assert cp.array_equal(folded, unfolded), f"m=2^{log_n}, seed {SEED}"
    coeffs = cuda.ntt(np.stack([x[0], x[1], fr_to_limbs(c)]), inverse=True, domain="native")  # GPU iNTT: oracle-checked
    pt = rng.randrange(R_MOD)
    A, B, C = (poly_at(limbs_to_ints(v), pt) for v in coeffs)
    z = (pow(pt, n, R_MOD) - 1) % R_MOD
    assert (A * B - C) % R_MOD == poly_at(limbs_to_ints(cp.asnumpy(folded)), pt) * z % R_MOD, f"seed {SEED}"
    if log_n <= 10:  # the CPU iNTT agrees on the coefficients
        assert list(limbs_to_ints(coeffs[2])) == list(intt(np.array(c, dtype=object), d))
    c[5] = (c[5] + 1) % R_MOD
    bad = cuda.compute_h_bellperson_device(cp.asarray(np.stack([x[0], x[1], fr_to_limbs(c)])))
    C = poly_at(limbs_to_ints(cuda.ntt(fr_to_limbs(c), inverse=True, domain="native")), pt)
    assert (A * B - C) % R_MOD != poly_at(limbs_to_ints(cp.asnumpy(bad)), pt) * z % R_MOD


# ------------------------------------------------------------------------------- from the witness

# porep stand-ins: build_circuit(k, p) has k - p - 1 constraints, so (1028, 3) has exactly 1024 = m
CIRCUITS = [(64, 1), (1000, 3), (1028, 3), (4096, 4)]


@pytest.mark.parametrize("constraints,public", CIRCUITS)
def test_h_from_witness_matches_oracle(backend, constraints, public):
    """The fused path (spmv then H, C from a b) with qap="bellperson": bellperson's domain with
    nothing appended to a, H as the CPU reference computes it from cs.evaluate."""
    cs = build_circuit(constraints, public)
    w = synthesize(constraints, public, seed=SEED % 1000)
    d = bellperson_qap.bellperson_domain(cs.n_constraints)
    a, b, c = bellperson_qap.evaluations(cs, limbs_to_ints(w))
    dcs = backend.load_cs(cs)
    abc = cuda_spmv.evaluate_abc(dcs, w, qap="bellperson")
    assert abc.shape == (3, d.n, 4)
    for got, want, name in zip(abc, (a, b, c), "abc"):
        assert list(limbs_to_ints(cp.asnumpy(got))) == list(want), f"{name} at {constraints}, seed {SEED}"
    h = backend.compute_h_from_witness(cs, w, qap="bellperson")
    assert isinstance(h.limbs, cp.ndarray) and h.shape == (d.n - 1, 4)
    want_h = list(bellperson_qap.compute_h(a, b, c, d))
    assert list(limbs_to_ints(cp.asnumpy(h.limbs))) == want_h, f"h at {constraints}, seed {SEED}"
    assert list(limbs_to_ints(backend.compute_h(*(fr_to_limbs(v) for v in (a, b, c)), qap="bellperson"))) == want_h
    with_c = cuda_spmv.DeviceConstraintSystem(cs, c_from_ab=False)  # C on the device: c as C w, not c / R
    assert list(limbs_to_ints(cp.asnumpy(cuda_spmv.h_from_witness(with_c, w, qap="bellperson")))) == want_h
    snarkjs_h = backend.compute_h_from_witness(cs, w)  # the default convention: another vector
    assert not np.array_equal(cp.asnumpy(snarkjs_h.limbs)[: d.n - 1], cp.asnumpy(h.limbs))
    bad = w.copy()
    bad[public + 2, 0] ^= np.uint64(1)  # an aux value: the system is no longer satisfied
    assert not cp.array_equal(backend.compute_h_from_witness(cs, bad, qap="bellperson").limbs, h.limbs)
    with pytest.raises(ValueError, match="qap='groth'"):
        backend.compute_h_from_witness(cs, w, qap="groth")


# ------------------------------------------------------------------------------- setup


@pytest.mark.parametrize("constraints,public", CIRCUITS + [(1 << 14, 5)])
def test_setup_scalars_match_cpu(constraints, public):
    rng = random.Random(SEED + constraints)
    cs = build_circuit(constraints, public)
    toxic = [rng.randrange(1, R_MOD) for _ in range(5)]
    got = setup_scalars(cs, *toxic, qap="bellperson")
    want = setup.setup_scalars_cpu(cs, *toxic, qap="bellperson")
    assert set(got) == set(want)
    assert len(got["h"]) == bellperson_qap.bellperson_domain(cs.n_constraints).n - 1
    for k in want:
        assert got[k].dtype == np.uint64 and np.array_equal(got[k], want[k]), f"{k} at {constraints}, seed {SEED}"
    other = setup_scalars(cs, toxic[0] + 1, *toxic[1:], qap="bellperson")  # negative: another tau
    assert not np.array_equal(other["u"], want["u"]) and not np.array_equal(other["h"], want["h"])
    snarkjs = setup_scalars(cs, *toxic)  # the other convention: other u and h
    assert not np.array_equal(snarkjs["u"], want["u"])


def test_setup_rejects_tau_on_domain_and_unknown_qap():
    cs = build_circuit(68, 3)  # 64 constraints: m = 64
    with pytest.raises(ZeroDivisionError):
        setup_scalars(cs, root_of_unity(64, "native"), 1, 2, 3, 4, qap="bellperson")
    setup_scalars(cs, root_of_unity(128, "native"), 1, 2, 3, 4, qap="bellperson")  # off the domain: fine
    with pytest.raises(ValueError, match="qap='groth'"):
        setup_scalars(cs, 5, 1, 2, 3, 4, qap="groth")


@pytest.fixture(scope="module")
def por(tmp_path_factory):
    """A recorded Filecoin Poseidon PoR (input constraints included) and its bellperson dev key,
    made on the GPU."""
    from test_filecoin_record import por_synthesis

    from cuzk_ray.filecoin.circuit.record import cached_recording

    synth, _ = por_synthesis(1, 5)
    rec = cached_recording(tmp_path_factory.mktemp("rec"), "por-oct", 256, synth)
    return rec, setup.dev_setup(rec.cs, seed=12, qap="bellperson", backend="cuda")


def test_dev_setup_cuda_equals_cpu_key(por):
    """The whole key (scalars on the GPU, points by the GPU fixed-base) equals the CPU setup's,
    densities included."""
    rec, pk = por
    cpu = setup.dev_setup(rec.cs, seed=12, qap="bellperson", backend="cpu", fixed_base="cuda")
    assert pk.qap == "bellperson" and pk.domain_size == 1023
    for name in ("a_query", "b_g1_query", "b_g2_query", "l_query", "h_query", "a_wires", "b_wires"):
        x, y = getattr(pk, name), getattr(cpu, name)
        assert (x is None and y is None) or np.array_equal(x, y), name
    other = setup.dev_setup(rec.cs, seed=13, qap="bellperson", backend="cuda")
    assert not np.array_equal(other.h_query, pk.h_query)


def test_prove_on_gpu_verifies(por, backend):
    """GPU H from the witness + the GPU MSMs under the GPU-made key: a proof that verifies, equal to
    prove_bellperson's (CPU reference H); a tampered public input or witness fails."""
    from test_filecoin_record import por_synthesis

    from cuzk_ray.backends.cpu import CpuBackend
    from cuzk_ray.filecoin.circuit.record import witness_only
    from cuzk_ray.groth16.prover import prove_bellperson, prove_from_h
    from cuzk_ray.groth16.verifier import verify

    rec, pk = por
    synth, public = por_synthesis(4, 1)
    w = fr_to_limbs(witness_only(synth, rec.shape))
    h = backend.compute_h_from_witness(rec.cs, w, qap="bellperson")
    proof = prove_from_h(pk, h, w, 9, 10, backend)
    assert verify(pk.vk, public, proof)
    assert not verify(pk.vk, [public[0], (public[1] + 1) % R_MOD], proof)
    ref = prove_bellperson(pk, rec.cs, limbs_to_ints(w), 9, 10, CpuBackend(threads=2))
    assert all(np.array_equal(getattr(proof, k), getattr(ref, k)) for k in "abc")
    bad = w.copy()
    bad[rec.num_inputs + 20, 0] ^= np.uint64(1)
    h_bad = backend.compute_h_from_witness(rec.cs, bad, qap="bellperson")
    assert not verify(pk.vk, public, prove_from_h(pk, h_bad, bad, 9, 10, backend))
