"""Compact partitions end to end on the CPU: synthesis makes them (the filecoin shape straight from
its parts), the Arrow batch carries them, the CPU backend expands them and the proof verifies
(a tampered one does not); the admission estimate of their bytes against what is measured."""

from pathlib import Path

import numpy as np
import pytest

from cuzk_ray.circuits import PorepCircuit, SnarkjsCircuit, synthesize
from cuzk_ray.circuits.porep import (
    FilecoinLayout,
    FilecoinParts,
    compact_filecoin,
    expand_filecoin,
    synthesize_filecoin_parts,
)
from cuzk_ray.engines.admission import partition_host_bytes
from cuzk_ray.engines.worker import PartitionProver, synthesize_witness
from cuzk_ray.field import FrVector, fr_to_limbs
from cuzk_ray.formats.snarkjs import read_wtns
from cuzk_ray.groth16.setup import dev_setup
from cuzk_ray.groth16.verifier import verify
from cuzk_ray.partition import Partition, from_record_batch, to_record_batch
from cuzk_ray.witness import CompactWitness, compact, small_mask

GIB = 1 << 30


@pytest.mark.parametrize("constraints,public", [(1024, 4), (1 << 14, 327)])
def test_filecoin_parts_compact_equals_compact_of_the_expansion(rng, constraints, public):
    lay = FilecoinLayout.make(constraints, public)
    parts = synthesize_filecoin_parts(constraints, public, seed=rng.seed_value, partition=1)
    full = expand_filecoin(lay, parts)
    c = compact_filecoin(lay, parts)
    assert c == compact(full)
    assert np.array_equal(c.expand().limbs, full)  # bit for bit
    assert c.n_full <= lay.n_field_wires
    other = compact_filecoin(lay, synthesize_filecoin_parts(constraints, public, seed=rng.seed_value, partition=2))
    assert other != c  # another partition, another witness


def test_filecoin_tail_and_public_values_of_0_or_1_go_to_the_bitmap(rng):
    """Words, fields, products or public inputs that happen to be 0 or 1 are bits, as compact() has it."""
    lay = FilecoinLayout.make(1024, 4)
    p = synthesize_filecoin_parts(1024, 4, seed=rng.seed_value)
    tail, public = p.tail.copy(), p.public.copy()
    tail[[0, 5, len(tail) - 1]] = fr_to_limbs([0, 1, 1])  # a word, a word, the last product
    public[2] = fr_to_limbs([1])[0]
    parts = FilecoinParts(p.bits, tail, public)
    full = expand_filecoin(lay, parts)
    c = compact_filecoin(lay, parts)
    assert c == compact(full) and np.array_equal(c.expand().limbs, full)
    rows = [0, 5, len(tail) - 1]
    were_full = int((~small_mask(p.tail[rows])).sum() + (~small_mask(p.public[[2]])).sum())  # ~always 4
    assert c.n_full == compact_filecoin(lay, p).n_full - were_full
    assert c.wires(1, 5).tolist() == full[1:5].tolist()  # the public inputs, read without expanding
    assert c != compact_filecoin(lay, p)


def test_synthesis_makes_compact_partitions_of_every_shape(rng):
    seed = rng.seed_value
    for circuit in (PorepCircuit(constraints=1024, public=4, shape="filecoin"), PorepCircuit(constraints=256)):
        spec = circuit.synth_spec(seed, 0, 1)
        w = synthesize_witness(spec)
        assert isinstance(w, CompactWitness)
        circuit.build().check(w.expand().limbs)
        assert w.nbytes < circuit.witness_bytes() / 4
    raw = synthesize_witness(spec, lambda s: np.zeros((3, 4), dtype=np.uint64))  # a replacement synthesis
    assert isinstance(raw, FrVector)  # checked, kept in the full form


def test_snarkjs_witness_is_compacted_when_read():
    path = Path(__file__).parent / "fixtures" / "circom" / "linear" / "witness_1.wtns"
    full = read_wtns(path)
    w = synthesize({"kind": "wtns", "path": str(path), "n_wires": len(full), "partition": 0})
    assert isinstance(w, CompactWitness) and np.array_equal(w.expand().limbs, full.limbs)
    with pytest.raises(ValueError, match="nWitness"):
        synthesize({"kind": "wtns", "path": str(path), "n_wires": len(full) + 1, "partition": 0})
    c = SnarkjsCircuit("unused.zkey", (str(path),), meta={"n_wires": len(full)})
    assert c.partition_batch_bytes() == len(full) * 32 + 2 * ((len(full) + 7) // 8)  # before reading: the bound
    c.meta["batch_bytes"] = w.nbytes  # what load_key records after reading every witness file
    assert c.partition_batch_bytes() == w.nbytes


@pytest.fixture(scope="module", params=[PorepCircuit(constraints=256), PorepCircuit(constraints=1024, public=4,
                                                                                     shape="filecoin")],
                ids=["default", "filecoin"])
def prover(request):
    circuit = request.param
    cs = circuit.build()
    pk = dev_setup(cs, 5)
    return circuit, pk, PartitionProver("cpu", pk, cs, threads=1)


def test_cpu_proof_of_a_compact_partition_verifies_and_a_tampered_one_does_not(prover, rng):
    circuit, pk, worker = prover
    w = synthesize(circuit.synth_spec(rng.seed_value, 0, 0))
    part = from_record_batch(to_record_batch(Partition("proof-000", 0, circuit.circuit_id, w)))
    assert isinstance(part.witness, CompactWitness)  # as the prover actor receives it
    out = worker.prove(part, 11, 13)
    assert out.public == [int.from_bytes(v.tobytes(), "little") for v in w.wires(1, 1 + circuit.public)]
    assert verify(pk.vk, out.public, out.proof)
    assert not verify(pk.vk, [out.public[0] + 1] + out.public[1:], out.proof)
    # tamper with the last full value (a packed word or a product, in C of its row; not public):
    # the proof no longer verifies
    values = w.values.copy()
    values[-1, 0] ^= 1
    bad = CompactWitness(w.n_wires, w.full, w.bits, values)
    out_bad = worker.prove(Partition("proof-000", 0, circuit.circuit_id, bad), 11, 13)
    assert out_bad.public == out.public and not verify(pk.vk, out_bad.public, out_bad.proof)


ESTIMATED = ([PorepCircuit(constraints=1 << k, public=327, shape="filecoin") for k in (16, 18, 20)]
             + [PorepCircuit(constraints=1 << k, field_share=f) for k, f in ((12, 0.05), (16, 0.05), (14, 0.3))])


@pytest.mark.parametrize("circuit", ESTIMATED, ids=lambda c: c.circuit_id)
def test_batch_estimate_is_within_20_percent_of_the_measured_batch(circuit, rng):
    w = synthesize(circuit.synth_spec(rng.seed_value, 0, 0))
    measured = to_record_batch(Partition("p", 0, circuit.circuit_id, w)).nbytes
    est = circuit.partition_batch_bytes()
    assert abs(est - measured) <= 0.2 * measured and abs(est - w.nbytes) <= 0.2 * w.nbytes
    # the synthesis task's heap, then the batch and its pinned staging copy
    assert partition_host_bytes(circuit, backend="cuda") == circuit.synthesis_bytes() + 2 * est
    # the twin: the full witness (what the estimate used to be) is far outside 20 %
    assert circuit.witness_bytes() > 1.2 * measured


def test_a_filecoin_partition_at_2_27_is_under_1_25_gib_on_the_host():
    """From the layout alone (nothing synthesized): the cuda backend's estimate per 2^27 partition,
    its synthesis task's heap (~0.8 GiB), then the compact batch twice (~0.3 GiB)."""
    c = PorepCircuit(constraints=1 << 27, public=327, shape="filecoin")
    assert partition_host_bytes(c, backend="cuda") - c.synthesis_bytes() <= GIB // 2
    assert partition_host_bytes(c, backend="cuda") <= 5 * GIB // 4
    assert c.witness_bytes() > 8 * c.partition_batch_bytes()  # the full form would be 4 GiB


def test_pyarrow_is_imported_only_when_a_batch_is_made():
    """The local engine's modules leave pyarrow unimported (~17 ms of a one-proof command); making
    a record batch imports it (the twin)."""
    import subprocess
    import sys

    code = ("import sys, numpy as np\n"
            "import cuzk_ray.engines.local, cuzk_ray.job, cuzk_ray.partition as p\n"
            "from cuzk_ray.field import FrVector\n"
            "before = 'pyarrow' in sys.modules\n"
            "p.to_record_batch(p.Partition('x', 0, 'c', FrVector(np.zeros((2, 4), dtype=np.uint64))))\n"
            "print(before, 'pyarrow' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parent.parent,
                         capture_output=True, text=True, timeout=120, check=True).stdout.split()
    assert out == ["False", "True"]
