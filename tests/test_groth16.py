"""Prove -> verify round trips at several sizes, with a negative twin for each positive."""

import numpy as np
import pytest
from conftest import snarkjs_verify
from py_arkworks_bls12381 import G1Point

from cuzk_ray.backends.cpu import CpuBackend
from cuzk_ray.circuits.porep import build_circuit, public_inputs, synthesize
from cuzk_ray.curve import g1_array, g1_points
from cuzk_ray.field import R_MOD, limbs_to_ints
from cuzk_ray.formats.snarkjs_json import (
    proof_json,
    public_json,
    read_proof,
    read_public,
    read_verification_key,
    verification_key_json,
    write_json_atomic,
)
from cuzk_ray.groth16.keys import Proof
from cuzk_ray.groth16.prover import prove, prove_from_abc, prove_from_h
from cuzk_ray.groth16.setup import dev_setup
from cuzk_ray.groth16.verifier import verify
from cuzk_ray.r1cs import ConstraintSystem, CsrMatrix
from cuzk_ray.ref import qap


@pytest.fixture(scope="module")
def backend():
    return CpuBackend(threads=2)


_KEYS = {}


def porep_key(constraints, public=4):
    if (constraints, public) not in _KEYS:
        cs = build_circuit(constraints, public)
        _KEYS[(constraints, public)] = (cs, dev_setup(cs, seed=constraints))
    return _KEYS[(constraints, public)]


def tampered(proof: Proof) -> Proof:
    a = g1_points(proof.a)[0] + G1Point()  # A + G: still a valid point, wrong proof
    return Proof(a=g1_array([a]), b=proof.b, c=proof.c)


@pytest.mark.parametrize("constraints,public", [(64, 1), (256, 4), (4096, 7)])  # 4096: G2 MSM in halves
def test_round_trip_and_negatives(rng, backend, constraints, public):
    cs, pk = porep_key(constraints, public)
    w = synthesize(constraints, public, seed=rng.seed_value, proof=1, partition=3)
    pub = public_inputs(w, public)
    proof = prove(pk, cs, w, rng.randrange(R_MOD), rng.randrange(R_MOD), backend)
    assert verify(pk.vk, pub, proof)
    assert not verify(pk.vk, pub, tampered(proof))
    wrong = list(pub)
    wrong[-1] = (wrong[-1] + 1) % R_MOD
    assert not verify(pk.vk, wrong, proof)
    swapped = Proof(a=proof.c, b=proof.b, c=proof.a)
    assert not verify(pk.vk, pub, swapped)


def test_layered_entry_points_agree_and_r_s_are_explicit(backend):
    cs, pk = porep_key(256)
    w = synthesize(256, seed=5)
    r, s = 12345, 67890
    p1 = prove(pk, cs, w, r, s, backend)
    a, b, c = qap.evaluations(cs, limbs_to_ints(w))
    p2 = prove_from_abc(pk, a, b, c, w, r, s, backend)
    p3 = prove_from_h(pk, backend.compute_h(a, b, c), w, r, s, backend)
    for x in (p2, p3):
        assert all(np.array_equal(getattr(p1, k), getattr(x, k)) for k in "abc")
    p4 = prove(pk, cs, w, r + 1, s, backend)  # other blinding: other proof, still valid
    assert not np.array_equal(p1.a, p4.a)
    assert verify(pk.vk, public_inputs(w, 4), p4)


def test_unsatisfied_witness_gives_invalid_proof_and_check_names_constraint(backend):
    cs, pk = porep_key(256)
    w = synthesize(256, seed=6).copy()
    w[-1, 0] ^= 5  # a packed word that no longer matches its bits
    with pytest.raises(ValueError, match=r"constraint \d+ of \d+ is not satisfied"):
        cs.check(w)
    assert not verify(pk.vk, public_inputs(w, 4), prove(pk, cs, w, 1, 2, backend))


def test_hand_written_circuit_with_zero_public_wire_values(backend):
    # x * y = z; z * 1 = out (public); out = 0 through x = 0.
    A = CsrMatrix.from_coo([0, 1], [2, 4], [1, 1], 2, 5)
    B = CsrMatrix.from_coo([0, 1], [3, 0], [1, 1], 2, 5)
    C = CsrMatrix.from_coo([0, 1], [4, 1], [1, 1], 2, 5)
    cs = ConstraintSystem(5, 1, A, B, C, name="mul")
    pk = dev_setup(cs, seed=1)
    for w in ([1, 12, 3, 4, 12], [1, 0, 0, 7, 0]):
        cs.check(w)
        proof = prove(pk, cs, w, 3, 4, backend)
        assert verify(pk.vk, [w[1]], proof)
        assert not verify(pk.vk, [w[1] + 1], proof)


def test_verifier_rejects_bad_inputs(backend):
    cs, pk = porep_key(64, 1)
    w = synthesize(64, 1, seed=2)
    proof = prove(pk, cs, w, 5, 6, backend)
    pub = public_inputs(w, 1)
    with pytest.raises(ValueError, match="2 public inputs given, the key expects 1"):
        verify(pk.vk, pub + [1], proof)
    with pytest.raises(ValueError, match="not a field element"):
        verify(pk.vk, [R_MOD], proof)
    off_curve = proof.a.copy()
    off_curve[0, 1, 0] ^= 1
    assert not verify(pk.vk, pub, Proof(a=off_curve, b=proof.b, c=proof.c))


def test_dev_setup_is_deterministic():
    cs = build_circuit(64, 1)
    k1, k2, k3 = dev_setup(cs, 3), dev_setup(cs, 3), dev_setup(cs, 4)
    assert np.array_equal(k1.h_query, k2.h_query) and np.array_equal(k1.vk.ic, k2.vk.ic)
    assert not np.array_equal(k1.h_query, k3.h_query)


def test_dev_setup_fixed_base_on_the_gpu_path(monkeypatch):
    """fixed_base="cuda" hands standard-form limbs to cuda_fixed_base.fixed_base_mul_gpu (here a
    stand-in on the CPU; the GPU function itself is checked in tests/test_g2_gpu.py)."""
    from cuzk_ray.cuda import device as cuda_device
    from cuzk_ray.cuda import fixed_base as cuda_fixed_base
    from cuzk_ray.ref.msm import fixed_base_mul_array

    calls = []

    def fake(group, limbs):
        assert limbs.dtype == np.uint64 and limbs.shape[1] == 4
        calls.append(group)
        return fixed_base_mul_array(group, limbs)

    monkeypatch.setattr(cuda_fixed_base, "fixed_base_mul_gpu", fake)
    released = []  # a setup that used the GPU gives CuPy's cached blocks back once, at its end
    monkeypatch.setattr(cuda_device, "release_device_memory", lambda: released.append(len(calls)))
    cs = build_circuit(64, 1)
    k_gpu = dev_setup(cs, 3, fixed_base="cuda")
    assert released == [8]
    k_cpu = dev_setup(cs, 3)
    assert released == [8]  # not after a CPU setup
    # one call per query (a, b_g1, b_g2, l, h, ic) and one per group for the single points
    assert calls == ["g1", "g1", "g2", "g1", "g1", "g1", "g1", "g2"]
    for q in ("a_query", "b_g1_query", "b_g2_query", "l_query", "h_query"):
        assert np.array_equal(getattr(k_gpu, q), getattr(k_cpu, q)), q
    with pytest.raises(ValueError, match="not 'cpu' or 'cuda'"):
        dev_setup(cs, 3, fixed_base="tpu")


def test_snarkjs_verifies_our_proofs_and_rejects_tampered(tmp_path, backend, snarkjs):
    cs, pk = porep_key(256)
    w = synthesize(256, seed=9)
    proof = prove(pk, cs, w, 77, 88, backend)
    write_json_atomic(tmp_path / "vk.json", verification_key_json(pk.vk))
    write_json_atomic(tmp_path / "public.json", public_json(public_inputs(w, 4)))
    write_json_atomic(tmp_path / "proof.json", proof_json(proof))
    write_json_atomic(tmp_path / "bad.json", proof_json(tampered(proof)))
    assert snarkjs_verify(snarkjs, tmp_path / "vk.json", tmp_path / "public.json", tmp_path / "proof.json")
    assert not snarkjs_verify(snarkjs, tmp_path / "vk.json", tmp_path / "public.json", tmp_path / "bad.json")
    # Our readers give back what we wrote, and our verifier agrees.
    vk2 = read_verification_key(tmp_path / "vk.json")
    assert verify(vk2, read_public(tmp_path / "public.json"), read_proof(tmp_path / "proof.json"))
    assert not verify(vk2, read_public(tmp_path / "public.json"), read_proof(tmp_path / "bad.json"))
