"""The recording of a Filecoin circuit as the project's constraint system (filecoin/circuit/record.py),
and the bridge to the project's Groth16 stack: a recorded Poseidon PoR proved and verified.

The hand-made circuit allocates an input between aux variables (FILECOIN.md 2.1: an aux column is
only known once the input count is) and has a term that cancels to 0 (dropped: not an entry, not
density). Its columns, rows, non-zeros and densities are worked out by hand below.
"""

from __future__ import annotations

import json
import random
from dataclasses import replace

import numpy as np
import pytest

from cuzk_ray.backends.cpu import CpuBackend
from cuzk_ray.domain import Domain
from cuzk_ray.field import R_MOD
from cuzk_ray.filecoin.circuit.cs import ONE, ConstraintSystem, LinearCombination
from cuzk_ray.filecoin.circuit.por import auth_path, por_circuit
from cuzk_ray.filecoin.circuit.record import (
    CircuitShape,
    cache_path,
    cached_recording,
    load_recording,
    record,
    save_recording,
    witness_only,
    witness_vector,
)
from cuzk_ray.filecoin.poseidon import poseidon_hash_nodes
from cuzk_ray.groth16.prover import prove, prove_bellperson
from cuzk_ray.groth16.setup import dev_setup, wire_density
from cuzk_ray.groth16.verifier import verify
from cuzk_ray.r1cs import UnsatisfiedConstraint
from cuzk_ray.ref.bellperson_qap import bellperson_domain, compute_h, evaluations
from cuzk_ray.ref.ntt import intt


def lc(*terms):
    return LinearCombination(terms)


def tiny(cs, x: int | None = 3) -> None:
    """x * x = y (y public, allocated after x), y * x = z, input z' * ONE = z, (x + z - z) * ONE = x."""
    sq = lambda v: None if v is None else v * v % R_MOD  # noqa: E731
    vx = cs.alloc(x, "x")  # aux 0
    vy = cs.alloc_input(sq(x), "y")  # input 1
    vz = cs.alloc(None if x is None else x**3 % R_MOD, "z")  # aux 1
    cs.enforce("square", lc((vx, 1)), lc((vx, 1)), lc((vy, 1)))
    cs.enforce("cube", lc((vy, 1)), lc((vx, 1)), lc((vz, 1)))
    vz_pub = cs.alloc_input(None if x is None else x**3 % R_MOD, "z pub")  # input 2
    cs.enforce("public z", lc((vz_pub, 1)), lc((ONE, 1)), lc((vz, 1)))
    cs.enforce("cancelled", lc((vx, 1), (vz, 1)).sub(vz), lc((ONE, 1)), lc((vx, 1)))


def tiny_recording(x=3):
    cs = ConstraintSystem()
    tiny(cs, x)
    r1cs = cs.finish()
    return record(r1cs, "tiny"), r1cs


# columns: ONE 0, y 1, z pub 2, then aux x 3, z 4 (y was allocated between x and z)
X, Y, ZP, Z = 3, 1, 2, 4
TINY_ROWS = {  # row -> (A, B, C) as (column, coefficient) lists
    0: ([(X, 1)], [(X, 1)], [(Y, 1)]),
    1: ([(Y, 1)], [(X, 1)], [(Z, 1)]),
    2: ([(ZP, 1)], [(0, 1)], [(Z, 1)]),
    3: ([(X, 1)], [(0, 1)], [(X, 1)]),  # the cancelled z is not an entry
    4: ([(0, 1)], [], []),  # input constraints, one per input, ONE first
    5: ([(Y, 1)], [], []),
    6: ([(ZP, 1)], [], []),
}


def test_tiny_columns_rows_and_witness_order():
    rec, r1cs = tiny_recording()
    cs = rec.cs
    assert (cs.n_wires, cs.n_public, cs.n_constraints) == (5, 2, 7)
    for j, want in TINY_ROWS.items():
        assert (cs.A.row(j), cs.B.row(j), cs.C.row(j)) == want, j
    assert witness_vector(r1cs).tolist() == [1, 9, 27, 3, 27]
    cs.check(witness_vector(r1cs))


def test_tiny_shape_and_densities_by_hand():
    rec, _ = tiny_recording()
    assert rec.shape == CircuitShape(num_inputs=3, num_aux=2, num_constraints=7, nnz_a=7, nnz_b=4, nnz_c=4,
                                     a_aux_density=1, b_input_density=1, b_aux_density=1)
    d = rec.densities
    assert d.a_aux.tolist() == [True, False]  # z is only in A with a cancelled coefficient
    assert d.b_input.tolist() == [True, False, False] and d.b_aux.tolist() == [True, False]
    assert d.a_wires().tolist() == [0, 1, 2, X] and d.b_wires().tolist() == [0, X]
    # the project's key density (setup.wire_density) is bellperson's, given the input rows in A
    a_wires, b_wires = wire_density(rec.cs)
    assert a_wires.tolist() == d.a_wires().tolist() and b_wires.tolist() == d.b_wires().tolist()


def test_zero_coefficient_term_is_dropped_but_a_live_one_counts():
    cs = ConstraintSystem()
    x = cs.alloc(2)
    cs.enforce("zero", lc((x, 5)).sub(x, 5), lc((ONE, 1)), lc())
    rec = record(cs.finish())
    assert rec.shape.nnz_a == 1 and rec.shape.a_aux_density == 0  # only the ONE input row
    live = _one_x()
    assert live.shape.nnz_a == 2 and live.shape.a_aux_density == 1


def _one_x():
    cs = ConstraintSystem()
    x = cs.alloc(2)
    cs.enforce("live", lc((x, 5)), lc((ONE, 1)), lc((x, 5)))
    return record(cs.finish())


def test_tampered_witness_fails_the_recorded_r1cs():
    rec, r1cs = tiny_recording()
    w = witness_vector(r1cs)
    w[Z] = (w[Z] + 1) % R_MOD
    with pytest.raises(UnsatisfiedConstraint, match="constraint 1 of 7"):
        rec.cs.check(w)


def test_witness_without_values_is_named():
    cs = ConstraintSystem()
    tiny(cs, None)
    with pytest.raises(ValueError, match="input 1 has no value"):
        witness_vector(cs.finish())


# --- the cache ---------------------------------------------------------------------------------------


def test_cache_round_trip_and_witness_only(tmp_path):
    calls = []

    def synth(cs):
        calls.append(type(cs).__name__)
        tiny(cs, 3)

    first = cached_recording(tmp_path, "tiny", 2048, synth)
    again = cached_recording(tmp_path, "tiny", 2048, synth)
    assert calls == ["ConstraintSystem"]  # the second call read the file
    assert cache_path(tmp_path, "tiny", 2048).is_file() and not list(tmp_path.glob("*.tmp"))
    assert again.shape == first.shape
    for m in ("A", "B", "C"):
        for j in range(first.cs.n_constraints):
            assert getattr(again.cs, m).row(j) == getattr(first.cs, m).row(j)
    for name in ("a_aux", "b_input", "b_aux"):
        assert np.array_equal(getattr(again.densities, name), getattr(first.densities, name))
    w = witness_only(lambda cs: tiny(cs, 5), again.shape)  # a new witness, no constraints kept
    assert w.tolist() == [1, 25, 125, 5, 125]
    again.cs.check(w)


def test_witness_only_rejects_another_circuit_shape():
    rec, _ = tiny_recording()

    def other(cs):
        tiny(cs, 3)
        cs.alloc(1)

    with pytest.raises(ValueError, match="allocated 3 aux, the recording has 2"):
        witness_only(other, rec.shape)


def test_cache_tampered_counts_or_density_are_named(tmp_path):
    rec, _ = tiny_recording()
    path = save_recording(tmp_path / "r.npz", rec)
    z = dict(np.load(path))
    bad_density = dict(z, b_aux=np.packbits([False, True]))
    np.savez(tmp_path / "d.npz", **bad_density)
    with pytest.raises(ValueError, match="'b_aux' does not match"):
        load_recording(tmp_path / "d.npz")
    meta = json.loads(bytes(z["meta"]).decode())
    meta["shape"]["nnz_c"] += 1
    np.savez(tmp_path / "c.npz", **dict(z, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8)))
    with pytest.raises(ValueError, match="shape 'nnz_c' is 5 in the meta, the arrays give 4"):
        load_recording(tmp_path / "c.npz")
    del z["C_table"]
    np.savez(tmp_path / "m.npz", **z)
    with pytest.raises(ValueError, match="'C_table' is missing"):
        load_recording(tmp_path / "m.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not a readable .npz"):
        load_recording(tmp_path / "junk.npz")


# --- end to end: a Poseidon PoR over an 8-leaf oct-tree, proved with the project's prover -------------


def por_synthesis(seed: int, challenge: int):
    """(synthesize, public inputs): the PoR of leaf ``challenge`` of one arity-8 Poseidon node."""
    rng = random.Random(seed)
    leaves = [rng.randrange(R_MOD) for _ in range(8)]
    root = int.from_bytes(poseidon_hash_nodes([v.to_bytes(32, "little") for v in leaves]), "little")
    path = auth_path([(tuple(v for i, v in enumerate(leaves) if i != challenge), challenge)], 8)
    return (lambda cs: por_circuit(cs, leaves[challenge], path, root, private=False)), [challenge, root]


@pytest.fixture(scope="module")
def por_key(tmp_path_factory):
    synth, _ = por_synthesis(1, 5)
    rec = cached_recording(tmp_path_factory.mktemp("rec"), "por-oct", 256, synth)
    return rec, dev_setup(rec.cs, seed=11)


def test_por_recording_proves_and_verifies(por_key):
    rec, pk = por_key
    synth, public = por_synthesis(2, 3)  # another tree and challenge: the same circuit
    w = witness_only(synth, rec.shape)
    rec.cs.check(w)
    assert w[1:3].tolist() == public
    proof = prove(pk, rec.cs, w, 7, 8, CpuBackend(threads=2))
    assert verify(pk.vk, public, proof)
    assert not verify(pk.vk, [public[0] ^ 1, public[1]], proof)
    assert not verify(pk.vk, [public[0], (public[1] + 1) % R_MOD], proof)


def test_por_tampered_witness_does_not_verify(por_key):
    rec, pk = por_key
    synth, public = por_synthesis(3, 6)
    w = witness_only(synth, rec.shape)
    w[rec.num_inputs + 10] = (w[rec.num_inputs + 10] + 1) % R_MOD  # an aux value
    with pytest.raises(UnsatisfiedConstraint):
        rec.cs.check(w)
    assert not verify(pk.vk, public, prove(pk, rec.cs, w, 7, 8, CpuBackend(threads=2)))


# --- bellperson's H (FILECOIN.md 2.3): ref/bellperson_qap.py, dev_setup(qap="bellperson"), prove_bellperson --


def poly_at(coeffs, x: int) -> int:
    acc = 0
    for c in reversed(list(coeffs)):
        acc = (acc * x + int(c)) % R_MOD
    return acc


def test_bellperson_h_divides_and_drops_a_zero_coefficient():
    rec, r1cs = tiny_recording()
    d = bellperson_domain(rec.cs.n_constraints)
    assert (d.n, d.convention) == (8, "native") and bellperson_domain(8).n == 8 and bellperson_domain(9).n == 16
    w = witness_vector(r1cs)
    a, b, c = evaluations(rec.cs, w)
    h = compute_h(a, b, c, d)
    assert len(h) == d.n - 1
    x = random.Random(5).randrange(R_MOD)
    A, B, C = (poly_at(intt(v, d), x) for v in (a, b, c))
    # A B - C = H Z with H of degree <= m - 2: only true if the dropped coefficient was 0
    assert (A * B - C) % R_MOD == poly_at(h, x) * (pow(x, d.n, R_MOD) - 1) % R_MOD
    w[Z] = (w[Z] + 1) % R_MOD  # a tampered witness: A B - C is no multiple of Z
    a, b, c = evaluations(rec.cs, w)
    A, B, C = (poly_at(intt(v, d), x) for v in (a, b, c))
    assert (A * B - C) % R_MOD != poly_at(compute_h(a, b, c, d), x) * (pow(x, d.n, R_MOD) - 1) % R_MOD
    with pytest.raises(ValueError, match="need 'native'"):
        compute_h(a, b, c, Domain.of(8, "snarkjs"))


@pytest.fixture(scope="module")
def por_bellperson_key(por_key):
    rec, _ = por_key
    return dev_setup(rec.cs, seed=12, qap="bellperson")


def test_por_bellperson_h_proves_and_verifies(por_key, por_bellperson_key):
    rec, _ = por_key
    pk = por_bellperson_key
    assert pk.qap == "bellperson" and pk.domain_size == 1023  # 536 constraints: m = 1024, m - 1 H points
    synth, public = por_synthesis(4, 1)
    w = witness_only(synth, rec.shape)
    proof = prove_bellperson(pk, rec.cs, w, 9, 10, CpuBackend(threads=2))
    assert verify(pk.vk, public, proof)
    assert not verify(pk.vk, [public[0], (public[1] + 1) % R_MOD], proof)


def test_por_bellperson_tampered_witness_and_wrong_key_fail(por_key, por_bellperson_key):
    rec, snarkjs_pk = por_key
    pk = por_bellperson_key
    synth, public = por_synthesis(5, 7)
    w = witness_only(synth, rec.shape)
    bad = w.copy()
    bad[rec.num_inputs + 20] = (bad[rec.num_inputs + 20] + 1) % R_MOD
    assert not verify(pk.vk, public, prove_bellperson(pk, rec.cs, bad, 9, 10, CpuBackend(threads=2)))
    with pytest.raises(ValueError, match="does not match the key"):  # a snarkjs key with bellperson's H
        prove_bellperson(snarkjs_pk, rec.cs, w, 9, 10, CpuBackend(threads=2))
    # the other way round is no error: prove() computes a bellperson key's H (tests/test_bellperson_h_cpu.py)


def test_bellperson_key_needs_m_minus_one_h_points(por_bellperson_key):
    pk = por_bellperson_key
    padded = replace(pk, h_query=np.concatenate([pk.h_query, pk.h_query[:1]]))
    with pytest.raises(ValueError, match="1024 points, expected a power of two minus one"):
        padded.validate()
    with pytest.raises(ValueError, match="qap='groth' is not one of"):
        dev_setup(tiny_recording()[0].cs, seed=1, qap="groth")
