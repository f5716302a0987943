"""neptune's Poseidon circuit (circuit/poseidon.py) and its optimized-static constants (poseidon_preprocessing).

Counts are those upstream tests assert (read at argumentcomputer/neptune v11.1.0 = 5947aebf0b and
filecoin-project/rust-fil-proofs 87348a749d, which pins neptune 11): neptune ``src/circuit.rs``
test_poseidon_hash (Standard strength: 311, 377, 505, 761, 1009, 1385 for arities 2, 4, 8, 16, 24, 36, and its formula
3 * (t * R_F + R_P - 1) + t * R_F + R_P - arity), rust-fil-proofs ``storage-proofs-porep/src/stacked/
circuit/hash.rs`` (hash2_circuit 311, hash_single_column of 11: 598). Digests are checked against
the textbook permutation of ``poseidon.py`` (itself checked against neptune's known answers), and the
circuit's S-box inputs against the textbook permutation's S-box inputs round by round.
"""

from __future__ import annotations

import random

import pytest

from cuzk_ray.field import R_MOD
from cuzk_ray.filecoin.circuit.cs import ONE, ConstraintSystem, TestConstraintSystem
from cuzk_ray.filecoin.circuit.num import AllocatedNum
from cuzk_ray.filecoin.circuit.poseidon import hash2_circuit, hash_multi_leaf_circuit, hash_single_column, poseidon_hash
from cuzk_ray.filecoin.poseidon import constants, poseidon_hash_nodes
from cuzk_ray.filecoin.poseidon import poseidon_hash as textbook_hash
from cuzk_ray.filecoin.poseidon_preprocessing import (
    OptimizedConstants,
    apply_matrix,
    factor_to_sparse_matrices,
    hash_optimized_static,
    mat_inv,
    mat_mul,
    optimized_constants,
)

NEPTUNE_COUNTS = {2: 311, 4: 377, 8: 505, 16: 761, 24: 1009, 36: 1385}  # circuit.rs test_poseidon_hash
FILECOIN_COUNTS = {2: 311, 11: 598}  # stacked/circuit/hash.rs


def alloc_preimage(cs, values):
    nums = []
    for i, v in enumerate(values):
        with cs.namespace(f"data {i}"):
            nums.append(AllocatedNum.alloc(cs, v))
    return nums


def hashed(arity: int, seed: int):
    rng = random.Random(seed)
    values = [rng.randrange(R_MOD) for _ in range(arity)]
    cs = TestConstraintSystem()
    out = poseidon_hash(cs, alloc_preimage(cs, values))
    return cs, values, out


# --- the constants ---------------------------------------------------------------------------------


def test_matrix_helpers_follow_neptune_conventions():
    m = [[1, 2], [3, 4]]
    assert apply_matrix(m, [5, 6]) == [1 * 5 + 3 * 6, 2 * 5 + 4 * 6]  # row vector times m
    assert mat_mul(m, [[0, 1], [1, 0]]) == [[2, 1], [4, 3]]
    assert mat_mul(m, mat_inv(m)) == [[1, 0], [0, 1]]
    with pytest.raises(ValueError, match="singular"):
        mat_inv([[1, 2], [2, 4]])


@pytest.mark.parametrize("arity", [1, 2, 4, 8, 11])
def test_optimized_static_hash_equals_the_textbook_permutation(arity):
    rng = random.Random(arity)
    values = [rng.randrange(R_MOD) for _ in range(arity)]
    assert hash_optimized_static(values) == textbook_hash(values)
    assert hash_optimized_static([*values[:-1], (values[-1] + 1) % R_MOD]) != textbook_hash(values)


def test_each_sparse_factor_step_reproduces_its_matrix():
    """neptune's mds.rs invariant: the pre-sparse matrix times the first sparse matrix's dense form
    equals base * M' of the step before; checked end to end on one partial round."""
    c = constants(2)
    base = [list(r) for r in c.mds]
    pre, sparse = factor_to_sparse_matrices(base, 1)
    dense = [[1 if i == j else 0 for j in range(3)] for i in range(3)]
    for j, w in enumerate(sparse[0].w_hat):
        dense[j][0] = w
    for i, v in enumerate(sparse[0].v_rest):
        dense[0][i + 1] = v
    assert mat_mul(pre, dense) == mat_mul(base, base)  # M' M'' = M, so M * M' * M'' = M * M
    assert pre != base


def tampered(oc: OptimizedConstants, index: int) -> OptimizedConstants:
    k = list(oc.compressed_round_constants)
    k[index] = (k[index] + 1) % R_MOD
    return OptimizedConstants(oc.base, tuple(k), oc.pre_sparse_matrix, oc.sparse_matrices)


def test_a_tampered_compressed_constant_changes_the_digest():
    oc = optimized_constants(2)
    assert hash_optimized_static([1, 2], oc) == textbook_hash([1, 2])
    for index in (0, 3, 3 * 4 + 5, len(oc.compressed_round_constants) - 1):
        assert hash_optimized_static([1, 2], tampered(oc, index)) != textbook_hash([1, 2])


# --- the circuit -----------------------------------------------------------------------------------


@pytest.mark.parametrize("arity", sorted(NEPTUNE_COUNTS.keys() | FILECOIN_COUNTS.keys()))
def test_constraint_counts_equal_upstreams(arity):
    cs, values, out = hashed(arity, seed=arity)
    expected = {**NEPTUNE_COUNTS, **FILECOIN_COUNTS}[arity]
    c = constants(arity)
    t = arity + 1
    formula = 3 * (t * c.full_rounds + c.partial_rounds - 1) + t * c.full_rounds + c.partial_rounds - arity
    assert cs.num_constraints == expected == formula
    assert cs.num_aux == arity + expected  # one new variable per constraint
    assert cs.num_inputs == 1
    assert out.value == textbook_hash(values)
    assert cs.is_satisfied()


@pytest.mark.parametrize("arity", [2, 8, 11])
def test_digest_equals_poseidon_and_tampering_is_caught(arity):
    for seed in range(3):
        cs, values, out = hashed(arity, seed=100 + seed)
        assert out.value == textbook_hash(values)
        assert cs.is_satisfied()
        assert cs.get("hash result/allocate for Elt::Num/num") == out.value
    cs.set("hash result/allocate for Elt::Num/num", out.value + 1)
    assert cs.which_is_unsatisfied() == "hash result/enforce num allocation preserves lc"
    cs, _, _ = hashed(arity, seed=7)
    path = "partial round 3/solitary quintic s-box/l^4/squared num"
    cs.set(path, cs.get(path) + 1)
    assert cs.which_is_unsatisfied() == "partial round 3/solitary quintic s-box/l^4/squaring constraint"


def textbook_sbox_inputs(values: list[int]) -> list[int]:
    """The textbook permutation's S-box inputs after the first round, in the circuit's order."""
    c = constants(len(values))
    s, t, half = [c.domain_tag, *values], c.width, c.full_rounds // 2
    trace = []
    for rnd in range(c.full_rounds + c.partial_rounds):
        s = [(x + k) % R_MOD for x, k in zip(s, c.round_constants[rnd * t : (rnd + 1) * t])]
        full = rnd < half or rnd >= half + c.partial_rounds
        if rnd:
            trace += s if full else s[:1]
        s = [pow(x, 5, R_MOD) for x in s] if full else [pow(s[0], 5, R_MOD), *s[1:]]
        s = [sum(s[i] * c.mds[i][j] for i in range(t)) % R_MOD for j in range(t)]
    return trace


def circuit_sbox_inputs(cs, arity: int) -> list[int]:
    c = constants(arity)
    half, t = c.full_rounds // 2, arity + 1
    rounds = [f"initial full round {i}/quintic s-box {{}}" for i in range(1, half)]
    rounds += [f"partial round {i}/solitary quintic s-box" for i in range(c.partial_rounds)]
    rounds += [f"final full round {i}/quintic s-box {{}}" for i in range(half - 1)]
    rounds += ["terminal full round/quintic s-box {}"]
    paths = [r.format(j) for r in rounds for j in (range(t) if "{}" in r else [None])]
    return [cs.get(f"{p}/S-box input/allocate for Elt::Num/num") for p in paths]


@pytest.mark.parametrize("arity", [2, 11])
def test_sbox_inputs_are_the_textbook_permutations(arity):
    """Compressed constants move round keys across the linear layers but never change what enters
    an S-box: every allocated S-box input equals the textbook permutation's."""
    cs, values, _ = hashed(arity, seed=arity)
    expected = textbook_sbox_inputs(values)
    got = circuit_sbox_inputs(cs, arity)
    assert len(got) == len(expected) == (arity + 1) * 7 + constants(arity).partial_rounds
    assert got == expected
    assert circuit_sbox_inputs(hashed(arity, seed=arity + 1)[0], arity) != expected


def test_the_domain_tag_and_the_first_round_cost_no_extra_constraint():
    cs, _, _ = hashed(2, seed=1)
    first = [p for p in cs.constraint_paths if p.startswith("first round/")]
    assert len(first) == 3 * 2  # 3 per allocated input, none for the constant tag
    assert not any(p.startswith("first round/quintic s-box 0") for p in first)
    assert sum(p.startswith("initial full round 1/quintic s-box 0/") for p in cs.constraint_paths) == 4
    terminal = [p for p in cs.constraint_paths if p.startswith("terminal full round/")]
    assert len(terminal) == 4 * 3
    assert [p.rsplit("/", 1)[1] for p in terminal if "rk)" in p] == ["mul sum constraint"] * 3  # no post key


def test_round_keys_fold_into_the_constraints_as_constant_terms():
    cs, _, _ = hashed(2, seed=1)
    oc = optimized_constants(2)
    k = oc.compressed_round_constants
    a, b, c = cs.constraint("first round/quintic s-box 1/(l+rk)^2/squared sum constraint")
    assert a.terms == {0: 1, ONE: k[1]} == b.terms  # data 0 + pre key
    a, b, c = cs.constraint("first round/quintic s-box 2/l4 * (l + rk)/mul sum constraint pre-post-add")
    assert a.terms == {1: 1, ONE: k[2]} and c.terms[ONE] == (-k[3 + 2]) % R_MOD
    a, b, c = cs.constraint("partial round 0/solitary quintic s-box/(l4 * l) + rk)/mul sum constraint post-add")
    assert c.terms[ONE] == (-k[(4 + 1) * 3]) % R_MOD  # the first partial key follows the 4 + 1 full rows
    _, _, c = cs.constraint("terminal full round/quintic s-box 1/(l4 * l) + rk)/mul sum constraint")
    assert ONE not in c.terms


def test_wrong_constants_still_satisfy_but_give_a_wrong_digest():
    """The test CS cannot see a wrong constant (the witness follows it); the digest check does."""
    oc = optimized_constants(2)
    cs = TestConstraintSystem()
    out = poseidon_hash(cs, alloc_preimage(cs, [1, 2]), tampered(oc, 10))
    assert cs.is_satisfied() and cs.num_constraints == 311
    assert out.value != textbook_hash([1, 2])


def test_shape_without_a_witness_equals_the_shape_with_one():
    with_w = ConstraintSystem()
    poseidon_hash(with_w, alloc_preimage(with_w, [3, 4, 5, 6, 7, 8, 9, 10]))
    without = ConstraintSystem()
    poseidon_hash(without, alloc_preimage(without, [None] * 8))
    r1, r2 = with_w.finish(), without.finish()
    assert (r1.a, r1.b, r1.c, r1.num_aux) == (r2.a, r2.b, r2.c, r2.num_aux)
    other = ConstraintSystem()
    poseidon_hash(other, alloc_preimage(other, [None] * 8), tampered(optimized_constants(8), 20))
    assert other.finish().c != r1.c


# --- the entry points Filecoin calls ------------------------------------------------------------------


def test_hash2_and_multi_leaf_are_the_tree_hash():
    rng = random.Random(5)
    nodes = [rng.randrange(R_MOD).to_bytes(32, "little") for _ in range(8)]
    cs = TestConstraintSystem()
    nums = alloc_preimage(cs, [int.from_bytes(n, "little") for n in nodes])
    with cs.namespace("hash2"):
        two = hash2_circuit(cs, nums[0], nums[1])
    with cs.namespace("multi"):
        eight = hash_multi_leaf_circuit(cs, nums, height=3)
    assert cs.num_constraints == 311 + 505 and cs.is_satisfied()
    assert two.value.to_bytes(32, "little") == poseidon_hash_nodes(nodes[:2])
    assert eight.value.to_bytes(32, "little") == poseidon_hash_nodes(nodes)
    assert two.value != int.from_bytes(poseidon_hash_nodes(nodes[1::-1]), "little")


def test_hash_single_column_takes_2_or_11():
    cs = TestConstraintSystem()
    nums = alloc_preimage(cs, list(range(11)))
    with cs.namespace("column"):
        assert hash_single_column(cs, nums).value == textbook_hash(list(range(11)))
    assert cs.num_constraints == 598
    with pytest.raises(ValueError, match="unsupported column size 3"):
        hash_single_column(cs, nums[:3])
    with pytest.raises(ValueError, match="2 inputs for constants of arity 8"):
        poseidon_hash(cs, nums[:2], optimized_constants(8))
