"""The fast witness (filecoin/circuit/tape.py, replay.py, free_values.py) on a sealed 2 KiB partition.

One synthesis of the partition (2 challenges, values from this project's sealer) records the tape,
the constraints and the reference witness together; the tape is folded to the prefix and one block
(block 1 checked equal to block 0 shifted). The replay from the C1 must give the reference witness
bit for bit, satisfy the captured constraints block by block, and fail them when the C1 is tampered.
The free-value counts are worked out by hand from the 2 KiB trees below.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from test_filecoin_stacked_circuit import PARTITION_2K, public_data, sealed_2k, tampered_label  # noqa: F401

from cuzk_ray.field import fr_to_limbs
from cuzk_ray.filecoin import registry
from cuzk_ray.filecoin.circuit.fast_witness import fast_witness, witness_tape
from cuzk_ray.filecoin.circuit.free_values import free_values
from cuzk_ray.filecoin.circuit.replay import check_block, plan, replay_circuit
from cuzk_ray.filecoin.circuit.stacked import stacked_circuit_from_c1, synthesize_stacked
from cuzk_ray.filecoin.circuit.tape import (
    OP_COLUMNS,
    XOR,
    counts,
    fold,
    load_tape,
    record_tape,
    save_tape,
    tape_path,
)
from cuzk_ray.filecoin.public_inputs import porep_public_inputs
from cuzk_ray.witness import compact

pytestmark = pytest.mark.slow

# 2 KiB: 64 nodes; tree D binary (6 levels), trees C and R_last 8-ary (2 levels of 1 index + 7 siblings)
FREE_PER_CHALLENGE = 1 + 6 * 2 + 14 * (2 + 2 * 8) + 1 + 2 * (2 * 8)  # leaf, D path, 14 columns, challenge, 2 paths
INDEX_BITS = 6 * 1 + 14 * 2 * 3 + 64 + 2 * 2 * 3  # D path, parents' C paths, the challenge, R_last and C paths


@pytest.fixture(scope="module")
def taped(sealed_2k):  # noqa: F811
    _, c1 = sealed_2k
    circuit = stacked_circuit_from_c1(c1, 0)
    tape, cs = record_tape(synthesize_stacked, circuit, len(circuit.proofs), constraints=True)
    reference = compact(fr_to_limbs(cs.inputs + cs.aux))
    return c1, tape, cs, plan(tape), reference


def tampered_c1(c1):
    return dataclasses.replace(c1, vanilla_proofs=((tampered_label(c1), c1.vanilla_proofs[0][1]),))


def test_fast_witness_equals_the_reference_bit_for_bit(taped, sealed_2k):  # noqa: F811
    c1, _, _, pl, reference = taped
    proof, _ = sealed_2k
    w = fast_witness(pl, c1, 0)
    constraints, aux, inputs = PARTITION_2K
    assert (w.n_wires, w.n_full) == (inputs + aux, reference.n_full) and w == reference
    public = [int.from_bytes(v.tobytes(), "little") for v in w.wires(1, inputs)]
    assert public == porep_public_inputs(proof.config, public_data(c1), 0)
    bad = fast_witness(pl, tampered_c1(c1), 0)
    assert bad != reference and bad.n_wires == reference.n_wires


def test_fast_witness_satisfies_the_constraints_and_a_tampered_row_does_not(taped):
    c1, tape, _, pl, _ = taped
    w = fast_witness(pl, c1, 0)
    assert [check_block(pl, w, b) for b in (0, 1)] == [-1, -1]
    bad = fast_witness(pl, tampered_c1(c1), 0)  # DRG parent 2's row at layer 2, challenge 0: block 0 only
    first = check_block(pl, bad, 0)
    assert first >= tape.layout.prefix.constraints and check_block(pl, bad, 1) == -1
    with pytest.raises(ValueError, match="block 2 of a"):
        check_block(pl, w, 2)


def test_tape_counts(taped):
    _, tape, cs, _, _ = taped
    lay = tape.layout
    constraints, aux, inputs = PARTITION_2K
    assert (lay.prefix.aux + 2 * lay.block.aux, lay.prefix.inputs + 2 * lay.block.inputs) == (aux, inputs)
    assert lay.prefix.constraints + 2 * lay.block.constraints == constraints
    assert (lay.prefix.free, lay.block.free, lay.block.inputs) == (5, FREE_PER_CHALLENGE, 18)
    ops = tape.op_counts()  # (ops, variables written) per kind
    assert ops["FREE"][0] + ops["FREE_BITS"][0] == lay.prefix.free + lay.block.free
    assert ops["FREE_BITS"][1] == INDEX_BITS
    assert ops["NUM_BITS"][1] == 255 * ops["NUM_BITS"][0]
    assert sum(v for _, v in ops.values()) == lay.p + lay.b - 1  # every variable but ONE, once
    assert ops["CH"] == ops["MAJ"] and ops["XOR"][0] > 6 * ops["CH"][0]  # SHA-256: 6 xors per bit and round
    broken = dict(tape.arrays, out=tape.arrays["out"].copy())
    broken["out"][np.flatnonzero(tape.arrays["op"] == XOR)[0]] = 0  # an XOR overwrites aux 0
    with pytest.raises(ValueError, match="local variable 0 is written by 2 ops"):
        plan(dataclasses.replace(tape, arrays=broken))
    # block 1 shifted must be block 0: one operand of block 1 changed is found
    raw = cs.tape.ops  # rows of OP_COLUMNS, interleaved
    at = (lay.prefix.ops + lay.block.ops + 100) * len(OP_COLUMNS) + OP_COLUMNS.index("a")
    raw[at] += 1
    try:
        with pytest.raises(ValueError, match="block 1 differs from block 0 at op column a row 100"):
            fold(cs.tape, lay.prefix, counts(cs), 2)
    finally:
        raw[at] -= 1


def test_tape_round_trip_and_refusals(taped, tmp_path):
    c1, tape, _, pl, reference = taped
    config = registry.registered_seal_proof("StackedDrg2KiBV1_1").config
    save_tape(tape_path(tmp_path, "stacked-drg", config.sector_size), tape)
    again = witness_tape(config, tmp_path)  # found in the cache: not recorded again
    assert again.layout == tape.layout and np.array_equal(again.consts, tape.consts)
    assert all(np.array_equal(again.arrays[k], v) for k, v in tape.arrays.items())
    assert replay_circuit(plan(again), *_free(c1)) == reference
    (tmp_path / "x.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match=r"x.npz: not a readable .npz tape"):
        load_tape(tmp_path / "x.npz")
    free, blocks = _free(c1)
    with pytest.raises(ValueError, match=f"{len(free) - 1} free values for 2 challenges, the tape needs {len(free)}"):
        replay_circuit(pl, free[:-1], blocks)


def _free(c1):
    circuit = stacked_circuit_from_c1(c1, 0)
    return free_values(circuit), len(circuit.proofs)
