"""Insertion and the PoR circuit (circuit/insertion.py, circuit/por.py, circuit/constraint.py).

Counts are those rust-fil-proofs asserts (read at filecoin-project/rust-fil-proofs 87348a749d):
``storage-proofs-core/src/gadgets/insertion.rs`` (test_insert:
2, 8, 22 and size * (size - 1) constraints for 2, 4, 8, 16 elements; test_select: size - 1) and
``storage-proofs-core/tests/por_circuit.rs`` (Poseidon trees of 64 * base-tree-count leaves, 3
inputs with a public root: base 2 1,887, base 4 1,164, base 8 1,063, 8-2 1,377, 8-8 1,593, 8-4-2 and
8-2-4 1,764, 8-8-2 1,907; private root: 1,886 / 1,163 / 1,062; SHA-256 base 2: 272,295). Roots come from the project's
Poseidon trees (``poseidon.poseidon_hash_nodes``, ``merkle.path_from_levels``) and tree D's ``sha254``.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from cuzk_ray.field import R_MOD
from cuzk_ray.filecoin.circuit import boolean, constraint
from cuzk_ray.filecoin.circuit.boolean import Is
from cuzk_ray.filecoin.circuit.cs import ConstraintSystem, TestConstraintSystem
from cuzk_ray.filecoin.circuit.insertion import insert, select
from cuzk_ray.filecoin.circuit.num import AllocatedNum
from cuzk_ray.filecoin.circuit.por import auth_path, blank_auth_path, challenge_into_auth_path_bits, por_circuit
from cuzk_ray.filecoin.circuit.sha256_hasher import hash2_circuit, hash_multi_leaf_circuit
from cuzk_ray.filecoin.merkle import path_from_levels
from cuzk_ray.filecoin.poseidon import poseidon_hash_nodes
from cuzk_ray.filecoin.sha254 import hash_level, hash_pair

INSERT_COUNTS = {2: 2, 4: 8, 8: 22, 16: 16 * 15}
POR_COUNTS = {(2, 0, 0): 1887, (4, 0, 0): 1164, (8, 0, 0): 1063, (8, 2, 0): 1377, (8, 8, 0): 1593,
              (8, 4, 2): 1764, (8, 2, 4): 1764, (8, 8, 2): 1907}
POR_PRIVATE_COUNTS = {(2, 0, 0): 1886, (4, 0, 0): 1163, (8, 0, 0): 1062}


def alloc_nums(cs, values, prefix):
    out = []
    for i, v in enumerate(values):
        with cs.namespace(f"{prefix} {i}"):
            out.append(AllocatedNum.alloc(cs, v))
    return out


def alloc_index_bits(cs, index, count):
    bits = []
    for i in range(count):
        with cs.namespace(f"index bit {i}"):
            bits.append(Is(boolean.alloc_bit(cs, bool(index >> i & 1))))
    return bits


# --- insertion ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("log_size", [1, 2, 3, 4])
def test_insert_counts_and_positions(log_size):
    size = 1 << log_size
    rng = random.Random(log_size)
    for index in range(size):
        cs = TestConstraintSystem()
        elements = alloc_nums(cs, [rng.randrange(R_MOD) for _ in range(size - 1)], "element")
        with cs.namespace("insert"):
            x = AllocatedNum.alloc(cs, rng.randrange(R_MOD))
        bits = alloc_index_bits(cs, index, log_size)
        before = cs.num_constraints
        assert before == log_size
        out = insert(cs, x, bits, elements)
        assert cs.num_constraints - before == INSERT_COUNTS[size]
        assert cs.is_satisfied()
        values = [n.value for n in out]
        assert values.pop(index) == x.value
        assert values == [e.value for e in elements]


def test_insert_8_tampered_pick_is_named():
    cs = TestConstraintSystem()
    elements = alloc_nums(cs, list(range(10, 17)), "element")
    with cs.namespace("insert"):
        x = AllocatedNum.alloc(cs, 99)
    out = insert(cs, x, alloc_index_bits(cs, 5, 3), elements)
    assert [n.value for n in out] == [10, 11, 12, 13, 14, 99, 15, 16]
    cs.set("p5/pick result/num", 15)
    assert cs.which_is_unsatisfied() == "p5/pick"
    cs.set("p5/pick result/num", 99)
    cs.set("index bit 2/boolean", 0)  # the index claims 1 while the outputs say 5
    assert cs.which_is_unsatisfied() == "p1/pick"  # p0 is b either way; p1 would be x


@pytest.mark.parametrize("log_size", [1, 2, 3, 4])
def test_select(log_size):
    size = 1 << log_size
    for index in (0, size - 1, size // 2):
        cs = TestConstraintSystem()
        elements = alloc_nums(cs, [7 * i + 1 for i in range(size)], "element")
        bits = alloc_index_bits(cs, index, log_size)
        with cs.namespace("select"):
            got = select(cs, elements, bits)
        assert cs.num_constraints - log_size == size - 1
        assert got.value == elements[index].value and cs.is_satisfied()
        with pytest.raises(ValueError, match="cannot index"):
            select(cs, elements[:-1], bits)


def test_constraint_add_sub_equal():
    cs = TestConstraintSystem()
    a, b = alloc_nums(cs, [5, R_MOD - 2], "n")
    with cs.namespace("a+b"):
        s = constraint.add(cs, a, b)
    with cs.namespace("a-b"):
        d = constraint.sub(cs, a, b)
    constraint.equal(cs, "s is 3", s, s)
    assert (s.value, d.value, cs.num_constraints, cs.is_satisfied()) == (3, 7, 3, True)
    cs.set("a-b/sub_num/num", 8)
    assert cs.which_is_unsatisfied() == "a-b/subtraction constraint"


# --- PoR -----------------------------------------------------------------------------------------------


def poseidon_levels(leaves: list[bytes], arities: list[int]) -> list[np.ndarray]:
    levels = [leaves]
    for arity in arities:
        prev = levels[-1]
        levels.append([poseidon_hash_nodes(prev[i : i + arity]) for i in range(0, len(prev), arity)])
    return [np.frombuffer(b"".join(level), dtype=np.uint8).reshape(-1, 32) for level in levels]


def tree_of(shape, seed):
    base, sub, top = shape
    tops = [a for a in (sub, top) if a]
    leaves = 64 * int(np.prod(tops, dtype=int))
    rng = random.Random(seed)
    data = [rng.randrange(R_MOD).to_bytes(32, "little") for _ in range(leaves)]
    base_levels = {2: 6, 4: 3, 8: 2}[base]
    arities = [base] * base_levels + tops
    return leaves, arities, poseidon_levels(data, arities)


def circuit_inputs(levels, arities, shape, challenge):
    path = path_from_levels(levels, arities, challenge)
    fr = [(tuple(int.from_bytes(s, "little") for s in lv.siblings), lv.index) for lv in path.levels]
    return int.from_bytes(path.leaf, "little"), auth_path(fr, *shape), int.from_bytes(path.root, "little")


@pytest.mark.parametrize("shape", sorted(POR_COUNTS))
def test_por_counts_inputs_and_roots(shape):
    leaves, arities, levels = tree_of(shape, seed=sum(shape))
    for challenge in (0, leaves - 1, random.Random(1).randrange(leaves)):
        value, path, root = circuit_inputs(levels, arities, shape, challenge)
        cs = TestConstraintSystem()
        por_circuit(cs, value, path, root, private=False)
        assert cs.num_constraints == POR_COUNTS[shape] and cs.num_inputs == 3
        assert cs.is_satisfied()
        assert cs.verify([challenge, root])  # generate_public_inputs: the challenge, then the root
        assert not cs.verify([challenge ^ 1, root])


@pytest.mark.parametrize("shape", sorted(POR_PRIVATE_COUNTS))
def test_por_private_root(shape):
    leaves, arities, levels = tree_of(shape, seed=7)
    value, path, root = circuit_inputs(levels, arities, shape, leaves // 3)
    cs = TestConstraintSystem()
    por_circuit(cs, value, path, root, private=True)
    assert cs.num_constraints == POR_PRIVATE_COUNTS[shape] and cs.num_inputs == 2
    assert cs.is_satisfied() and cs.verify([leaves // 3])


def test_por_wrong_root_leaf_or_sibling_is_caught():
    shape = (8, 2, 0)
    _, arities, levels = tree_of(shape, seed=3)
    value, path, root = circuit_inputs(levels, arities, shape, 77)
    for bad in ({"root": root + 1}, {"value": value + 1}):
        cs = TestConstraintSystem()
        por_circuit(cs, bad.get("value", value), path, bad.get("root", root), private=False)
        assert cs.which_is_unsatisfied() == "enforce root is correct"
    cs = TestConstraintSystem()
    por_circuit(cs, value, path, root, private=False)
    cs.set("base/merkle tree hash 1/path element 3/num", 5)
    # leaf 77 sits at index 1 on level 1, so its sibling 3 (e) lands in position 4 of the hash's preimage
    assert cs.which_is_unsatisfied() == "base/merkle tree hash 1/p4/pick"


def test_por_shape_without_a_witness_and_path_splitting():
    shape = (8, 8, 2)
    _, arities, levels = tree_of(shape, seed=4)
    value, path, root = circuit_inputs(levels, arities, shape, 5)
    assert (path.base.arity, len(path.base.path), path.sub.arity, len(path.sub.path), path.top.arity) == (8, 2, 8, 1, 2)
    full, blank = ConstraintSystem(), ConstraintSystem()
    por_circuit(full, value, path, root, private=False)
    por_circuit(blank, None, blank_auth_path(2, *shape), None, private=False)
    r1, r2 = full.finish(), blank.finish()
    assert (r1.a, r1.b, r1.c, r1.num_inputs, r1.num_aux) == (r2.a, r2.b, r2.c, r2.num_inputs, r2.num_aux)
    other = ConstraintSystem()
    por_circuit(other, None, blank_auth_path(3, 8), None, private=False)
    assert other.num_constraints != r1.num_constraints - r1.num_inputs
    with pytest.raises(ValueError, match="has 7 siblings, need 1"):
        auth_path([((0,) * 7, 0)] * 3, 8, 2, 0)
    assert challenge_into_auth_path_bits(5, 16) == [True, False, True, False]
    with pytest.raises(ValueError, match="power of two"):
        challenge_into_auth_path_bits(5, 12)


# --- tree D's SHA-256 node hash ------------------------------------------------------------------------


def test_sha256_hash2_is_tree_ds_node_hash():
    rng = random.Random(11)
    a, b = rng.randrange(R_MOD), rng.randrange(R_MOD)
    cs = TestConstraintSystem()
    x, y = alloc_nums(cs, [a, b], "n")
    out = hash2_circuit(cs, x, y)
    assert out.value.to_bytes(32, "little") == hash_pair([a.to_bytes(32, "little"), b.to_bytes(32, "little")])
    assert cs.num_constraints == 2 * 256 + 44_866 + 1  # two constant pad bits fold 8 of SHA's 44,874 away
    assert cs.is_satisfied()
    cs.set("pack_le/input/num", out.value + 1)
    assert cs.which_is_unsatisfied() == "pack_le/packing constraint"


def test_por_sha256_base_2_count_and_root():
    rng = random.Random(12)
    leaves = np.frombuffer(b"".join(rng.randrange(R_MOD).to_bytes(32, "little") for _ in range(64)),
                           dtype=np.uint8).reshape(-1, 32)
    levels = [leaves]
    while len(levels[-1]) > 1:
        levels.append(hash_level(levels[-1]))
    value, path, root = circuit_inputs(levels, [2] * 6, (2, 0, 0), 45)
    cs = TestConstraintSystem()
    por_circuit(cs, value, path, root, private=False, hash_fn=hash_multi_leaf_circuit)
    assert (cs.num_constraints, cs.num_inputs) == (272_295, 3)
    assert cs.is_satisfied() and cs.verify([45, root])
    cs.set("root_value/num", root + 1)
    assert cs.which_is_unsatisfied() == "enforce root is correct"
