import json

import numpy as np
import pytest

from cuzk_ray.circuits import PorepCircuit, make_circuit
from cuzk_ray.circuits import synthesize as synth_spec
from cuzk_ray.circuits.porep import PorepLayout, build_circuit, public_inputs, synthesize
from cuzk_ray.field import FrVector
from cuzk_ray.formats.native import KeyBundleError, load_bundle, save_bundle
from cuzk_ray.groth16.setup import dev_setup
from cuzk_ray.partition import Partition, from_record_batch, to_record_batch
from cuzk_ray.ref.qap import domain_size
from cuzk_ray.witness import CompactWitness


@pytest.mark.parametrize("constraints,public,share", [(64, 1, 0.0), (1024, 4, 0.05), (4096, 9, 0.3)])
def test_porep_witness_satisfies_and_domain_is_exact(rng, constraints, public, share):
    cs_seed = rng.randrange(100)
    cs = build_circuit(constraints, public, share, circuit_seed=cs_seed)
    assert domain_size(cs.n_constraints, cs.n_public) == constraints
    for part in range(3):
        w = synthesize(constraints, public, share, cs_seed, seed=rng.seed_value, proof=2, partition=part)
        assert w.shape == (cs.n_wires, 4) and w.dtype == np.uint64
        cs.check(w)


def test_porep_partitions_satisfy_and_differ(rng):
    seed = rng.seed_value
    cs = build_circuit(1024, 4, 0.05, circuit_seed=3)
    ws = [synthesize(1024, 4, 0.05, 3, seed=seed, proof=0, partition=k) for k in range(3)]
    for w in ws:
        cs.check(w)
    assert not np.array_equal(ws[0], ws[1])
    assert np.array_equal(ws[0], synthesize(1024, 4, 0.05, 3, seed=seed, proof=0, partition=0))  # deterministic
    # another wiring seed makes another circuit: this witness no longer satisfies it
    with pytest.raises(ValueError, match="not satisfied"):
        build_circuit(1024, 4, 0.05, circuit_seed=4).check(ws[0])


def test_porep_witness_is_mostly_bits():
    w = synthesize(1 << 14, 4, 0.05)
    small = (w[:, 1:] == 0).all(axis=1) & (w[:, 0] <= 1)
    assert small.mean() > 0.85
    assert not small.all()  # some full field elements too
    assert (synthesize(1 << 14, 4, 0.3)[:, 3] != 0).sum() > (w[:, 3] != 0).sum()


def test_porep_config_errors():
    with pytest.raises(ValueError, match="circuit.constraints=16: too small"):
        PorepLayout.make(16)
    with pytest.raises(ValueError, match="circuit.field_share=0.9"):
        PorepLayout.make(1024, 4, 0.9)
    with pytest.raises(ValueError, match="circuit.partitions=0"):
        make_circuit({"kind": "porep", "partitions": 0})
    with pytest.raises(ValueError, match="circuit.kind='nope'"):
        make_circuit({"kind": "nope"})


def test_circuit_spec_round_trip():
    c = PorepCircuit(constraints=256, partitions=2)
    v = synth_spec(c.synth_spec(seed=1, proof=0, partition=1))
    assert isinstance(v, CompactWitness)  # synthesis hands the engine a compact, checked witness
    w = v.expand().limbs
    c.build().check(w)
    assert c.witness_bytes() == w.nbytes
    assert public_inputs(w, 4) == [int(x) for x in public_inputs(w, 4)]


def test_partition_arrow_round_trip_is_zero_copy():
    w = synthesize(256)
    batch = to_record_batch(Partition("proof-007", 3, "porep-x", FrVector(w), {"synthesis_node": "n1"}))
    back = from_record_batch(batch)
    assert (back.proof_id, back.partition, back.circuit_id) == ("proof-007", 3, "porep-x")
    assert back.extra == {"synthesis_node": "n1"}
    assert np.array_equal(back.witness.limbs, w) and np.shares_memory(back.witness.limbs, w)
    assert batch.schema.field("witness").type.byte_width == 32
    sliced = from_record_batch(batch.slice(0, 10).replace_schema_metadata({**batch.schema.metadata, b"n_wires": b"10"}))
    assert np.array_equal(sliced.witness.limbs, w[:10])


@pytest.fixture(scope="module")
def small_key():
    cs = build_circuit(64, 1)
    return dev_setup(cs, 0), cs


def test_bundle_round_trip(tmp_path, small_key):
    pk, cs = small_key
    path = save_bundle(tmp_path / "key", pk, cs)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp dir left
    pk2, cs2 = load_bundle(path)
    for name in pk.QUERIES + ("beta_g1", "delta_g1"):
        assert np.array_equal(getattr(pk, name), getattr(pk2, name))
    assert np.array_equal(pk.vk.ic, pk2.vk.ic)
    assert cs2.n_constraints == cs.n_constraints and np.array_equal(cs2.C.data, cs.C.data)
    assert isinstance(pk2.h_query, np.memmap)
    m = json.loads((path / "manifest.json").read_text())
    assert m["form"] == "standard" and m["meta"]["insecure_dev_setup"] is True
    assert m["arrays"]["h_query"]["shape"] == [64, 2, 6]


def test_bundle_corruption_is_reported(tmp_path, small_key):
    pk, cs = small_key
    path = save_bundle(tmp_path / "key", pk, cs)
    f = path / "l_query.npy"
    raw = bytearray(f.read_bytes())
    raw[-1] ^= 1
    f.write_bytes(bytes(raw))
    with pytest.raises(KeyBundleError, match="l_query.npy: SHA-256 does not match"):
        load_bundle(path)
    (path / "a_query.npy").unlink()
    with pytest.raises(KeyBundleError, match="a_query.npy: missing"):
        load_bundle(path, verify_hashes=False)
    (path / "manifest.json").write_text("{not json")
    with pytest.raises(KeyBundleError, match="manifest.json: not valid JSON"):
        load_bundle(path)
    with pytest.raises(KeyBundleError, match="manifest.json: missing"):
        load_bundle(tmp_path / "nowhere")


def test_bundle_shape_lie_is_reported(tmp_path, small_key):
    pk, cs = small_key
    path = save_bundle(tmp_path / "key", pk, cs)
    m = json.loads((path / "manifest.json").read_text())
    m["arrays"]["h_query"]["shape"] = [128, 2, 6]
    (path / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(KeyBundleError, match="h_query.npy: shape \\[64, 2, 6\\]"):
        load_bundle(path, verify_hashes=False)
