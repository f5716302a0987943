"""The Filecoin circuit's foundation: bellpepper's constraint system and the Boolean/UInt32/MultiEq/
SHA-256/num/multipack/UInt64 gadgets.

Counts and known answers are those the upstream Rust tests assert, read in filecoin-project/curio's
extern/ copies of bellpepper-core and bellperson (file versions: gadgets/boolean.rs 2da2a901,
gadgets/num.rs and lc.rs cb988837, gadgets/uint32.rs f258e8c7, gadgets/sha256.rs 3f74a5cd,
gadgets/multipack.rs cb988837): SHA-256 compression 25,840 constraints beyond its 512 input bits
(sha256.rs test_full_block), a 512-bit message 44,874 (test_full_hash), a constant block 0
(test_blank_hash), AllocatedNum::to_bits_le 256. SHA-256 outputs are checked against hashlib.
Every satisfied witness has a tampered twin that the test CS rejects, naming the constraint.
"""

from __future__ import annotations

import hashlib
import itertools
import random

import pytest

from cuzk_ray.field import R_MOD
from cuzk_ray.filecoin.circuit import boolean
from cuzk_ray.filecoin.circuit.boolean import FALSE, TRUE, Constant, Is, Not
from cuzk_ray.filecoin.circuit.cs import (
    ONE,
    ConstraintSystem,
    LinearCombination,
    TestConstraintSystem,
    column,
    input_variable,
)
from cuzk_ray.filecoin.circuit.multieq import CAPACITY, MultiEq
from cuzk_ray.filecoin.circuit.multipack import (
    bytes_to_bits,
    bytes_to_bits_le,
    compute_multipacking,
    pack_bits,
    pack_into_inputs,
)
from cuzk_ray.filecoin.circuit.num import AllocatedNum
from cuzk_ray.filecoin.circuit.sha256 import sha256, sha256_block_no_padding, sha256_compression_function, sha256_iv
from cuzk_ray.filecoin.circuit.uint32 import UInt32
from cuzk_ray.filecoin.circuit.uint64 import UInt64


def alloc_bits(cs, values, prefix="input bit"):
    out = []
    for i, v in enumerate(values):
        with cs.namespace(f"{prefix} {i}"):
            out.append(Is(boolean.alloc_bit(cs, v)))
    return out


def message_bits(cs, data: bytes):
    return alloc_bits(cs, bytes_to_bits(data))


def digest_of(bits) -> bytes:
    values = [boolean.value_of(b) for b in bits]
    return bytes(sum(int(values[8 * k + j]) << (7 - j) for j in range(8)) for k in range(len(values) // 8))


def flip(cs, path):
    cs.set(path, 1 - cs.get(path))


# --- the constraint system ---------------------------------------------------------------------


def test_lc_merges_repeated_variables_and_keeps_cancelled_terms_out_of_rows():
    lc = LinearCombination().add(3).add(3).add(ONE, 5).sub(ONE, 5).add(input_variable(2), 7).add(0, R_MOD - 1)
    assert lc.terms == {3: 2, ONE: 0, input_variable(2): 7, 0: R_MOD - 1}
    assert lc.row() == ((input_variable(2), 7), (0, R_MOD - 1), (3, 2))  # inputs first, ONE dropped
    twin = LinearCombination().add(3).add(ONE, 5).add(input_variable(2), 7).add(0, R_MOD - 1)
    assert twin.row() != lc.row()


def test_index_spaces_input_constraints_and_columns():
    cs = ConstraintSystem()
    a = cs.alloc(5)
    x = cs.alloc_input(5)
    b = cs.alloc(6)
    cs.enforce("", LinearCombination().add(x), LinearCombination().add(ONE), LinearCombination().add(a))
    y = cs.alloc_input(6)
    assert (a, b, x, y) == (0, 1, input_variable(1), input_variable(2))
    r1cs = cs.finish()
    assert (r1cs.num_inputs, r1cs.num_aux, r1cs.num_constraints) == (3, 2, 1 + 3)
    assert r1cs.a[0] == ((x, 1),) and r1cs.b[0] == ((ONE, 1),) and r1cs.c[0] == ((a, 1),)
    # input_i * 0 = 0 for every input, ONE included, after the circuit's constraints
    assert r1cs.a[1:] == (((ONE, 1),), ((x, 1),), ((y, 1),)) and r1cs.b[1:] == r1cs.c[1:] == ((), (), ())
    assert [column(v, 3) for v in (ONE, x, y, a, b)] == [0, 1, 2, 3, 4]
    assert r1cs.inputs == (1, 5, 6) and r1cs.aux == (5, 6)
    with pytest.raises(RuntimeError, match="already finished"):
        cs.finish()


def test_test_cs_names_paths_and_refuses_a_duplicate():
    cs = TestConstraintSystem()
    with cs.namespace("a"):
        boolean.alloc_bit(cs, True)
    assert cs.get("a/boolean") == 1 and cs.is_satisfied()
    with pytest.raises(ValueError, match="a/boolean"), cs.namespace("a"):
        boolean.alloc_bit(cs, True)


# --- Boolean (boolean.rs tests) ----------------------------------------------------------------


def test_allocated_bit():
    cs = TestConstraintSystem()
    boolean.alloc_bit(cs, True)
    assert cs.get("boolean") == 1 and cs.is_satisfied()
    cs.set("boolean", 0)
    assert cs.is_satisfied()
    cs.set("boolean", 2)
    assert cs.which_is_unsatisfied() == "boolean constraint"


@pytest.mark.parametrize(
    "op, name, fn",
    [
        (boolean.bit_xor, "xor result", lambda a, b: a != b),
        (boolean.bit_and, "and result", lambda a, b: a and b),
        (boolean.bit_and_not, "and not result", lambda a, b: a and not b),
        (boolean.bit_nor, "nor result", lambda a, b: not a and not b),
    ],
)
def test_allocated_bit_ops(op, name, fn):
    for av, bv in itertools.product([False, True], repeat=2):
        cs = TestConstraintSystem()
        with cs.namespace("a"):
            a = boolean.alloc_bit(cs, av)
        with cs.namespace("b"):
            b = boolean.alloc_bit(cs, bv)
        c = op(cs, a, b)
        assert c.value == fn(av, bv) and cs.get(name) == int(fn(av, bv))
        assert cs.is_satisfied() and cs.num_constraints == 3
        flip(cs, name)
        assert cs.which_is_unsatisfied() == name.replace("result", "constraint")


def test_enforce_equal():
    for av, bv, an, bn in itertools.product([False, True], repeat=4):
        equal = (av ^ an) == (bv ^ bn)
        for a_const, b_const in itertools.product([False, True], repeat=2):
            cs = TestConstraintSystem()
            with cs.namespace("a"):
                a = Constant(av) if a_const else Is(boolean.alloc_bit(cs, av))
            with cs.namespace("b"):
                b = Constant(bv) if b_const else Is(boolean.alloc_bit(cs, bv))
            a, b = (boolean.negate(a) if an else a), (boolean.negate(b) if bn else b)
            if a_const and b_const and not equal:
                with pytest.raises(ValueError, match="unsatisfiable"):
                    boolean.enforce_equal(cs, a, b)
                continue
            boolean.enforce_equal(cs, a, b)
            assert cs.is_satisfied() == equal


OPERANDS = ["true", "false", "alloc true", "alloc false", "not alloc true", "not alloc false"]


def operand(cs, kind: str, name: str):
    if kind in ("true", "false"):
        return Constant(kind == "true")
    with cs.namespace(name):
        bit = Is(boolean.alloc_bit(cs, kind.endswith("true")))
    return boolean.negate(bit) if kind.startswith("not") else bit


def value(kind: str) -> bool:
    return kind in ("true", "alloc true", "not alloc false")


def result_kind(b) -> str:
    return {Constant: "const", Is: "is", Not: "not"}[type(b)]


# The result's variant for each pair of operand kinds, as boolean.rs test_boolean_xor/test_boolean_and
# assert (rows: first operand, columns: second, in OPERANDS order).
XOR_KINDS = [
    ["const", "const", "not", "not", "is", "is"],
    ["const", "const", "is", "is", "not", "not"],
    ["not", "is", "is", "is", "not", "not"],
    ["not", "is", "is", "is", "not", "not"],
    ["is", "not", "not", "not", "is", "is"],
    ["is", "not", "not", "not", "is", "is"],
]
AND_KINDS = [
    ["const", "const", "is", "is", "not", "not"],
    ["const"] * 6,
    ["is", "const", "is", "is", "is", "is"],
    ["is", "const", "is", "is", "is", "is"],
    ["not", "const", "is", "is", "is", "is"],
    ["not", "const", "is", "is", "is", "is"],
]


@pytest.mark.parametrize("op, kinds, fn", [(boolean.xor, XOR_KINDS, lambda a, b: a != b),
                                           (boolean.and_, AND_KINDS, lambda a, b: a and b)])
def test_boolean_xor_and_fold_constants(op, kinds, fn):
    for (i, x), (j, y) in itertools.product(enumerate(OPERANDS), repeat=2):
        cs = TestConstraintSystem()
        a, b = operand(cs, x, "a"), operand(cs, y, "b")
        before = cs.num_constraints
        c = op(cs, a, b)
        assert cs.is_satisfied() and boolean.value_of(c) == fn(value(x), value(y))
        assert result_kind(c) == kinds[i][j], (x, y)
        both_allocated = "alloc" in x and "alloc" in y
        assert cs.num_constraints - before == int(both_allocated)  # one constraint only when nothing folds


def expected_ch(a, b, c):
    return (a and b) ^ ((not a) and c)


def expected_maj(a, b, c):
    return (a and b) ^ (a and c) ^ (b and c)


@pytest.mark.parametrize("op, name, fn", [(boolean.sha256_ch, "ch", expected_ch),
                                          (boolean.sha256_maj, "maj", expected_maj)])
def test_boolean_sha256_ch_maj(op, name, fn):
    for x, y, z in itertools.product(OPERANDS, repeat=3):
        cs = TestConstraintSystem()
        a, b, c = operand(cs, x, "a"), operand(cs, y, "b"), operand(cs, z, "c")
        before = cs.num_constraints
        r = op(cs, a, b, c)
        assert cs.is_satisfied() and boolean.value_of(r) == fn(value(x), value(y), value(z))
        constants = sum(k in ("true", "false") for k in (x, y, z))
        if constants == 3:
            assert cs.num_constraints == before
        elif constants == 0:
            assert cs.get(name) == int(fn(value(x), value(y), value(z)))
            flip(cs, name)
            assert cs.which_is_unsatisfied() == f"{name} computation"


def test_cancelled_one_is_not_recorded():
    """ch with b = Not(x), c = Not(y): A = (1 - x) - (1 - y) keeps ONE with coefficient 0 in the LC."""
    cs = TestConstraintSystem()
    a, b, c = operand(cs, "alloc true", "a"), operand(cs, "not alloc true", "b"), operand(cs, "not alloc false", "c")
    boolean.sha256_ch(cs, a, b, c)
    lhs = cs.constraints[-1][0]
    assert lhs.terms[ONE] == 0
    assert lhs.row() == ((b.bit.variable, R_MOD - 1), (c.bit.variable, 1))
    assert cs.finish().a[-1 - cs.num_inputs] == lhs.row()


def test_alloc_conditionally():
    for must_be_false, v, ok in [(False, True, True), (True, True, False), (False, False, True), (True, False, True)]:
        cs = TestConstraintSystem()
        b = boolean.alloc_bit(cs, must_be_false)
        with cs.namespace("alloc_conditionally"):
            bit = boolean.alloc_bit_conditionally(cs, v, b)
        assert bit.value == v and cs.is_satisfied() == ok
        if not ok:
            assert cs.which_is_unsatisfied() == "alloc_conditionally/boolean constraint"


def test_u64_and_field_into_bits_known_answers():
    # boolean.rs test_u64_into_boolean_vec_le / test_field_into_allocated_bits_le
    cs = TestConstraintSystem()
    bits = boolean.u64_into_boolean_vec_le(cs, 17234652694787248421)
    assert cs.is_satisfied() and len(bits) == 64
    assert [boolean.value_of(bits[63 - k]) for k in (0, 1, 2, 3, 4, 5, 20, 21, 22)] == [1, 1, 1, 0, 1, 1, 1, 0, 0]
    cs = TestConstraintSystem()
    r = 9147677615426976802526883532204139322118074541891858454835346926874644257775
    fbits = boolean.field_into_allocated_bits_le(cs, r)
    assert cs.is_satisfied() and len(fbits) == 255
    assert [fbits[254 - k].value for k in (0, 1, 2, 3, 4, 5, 20, 23)] == [0, 0, 1, 0, 1, 0, 1, 1]
    assert sum(int(b.value) << i for i, b in enumerate(fbits)) == r
    flip(cs, "bit 7/boolean")
    assert sum(int(cs.aux[b.variable]) << i for i, b in enumerate(fbits)) != r


# --- UInt32 (uint32.rs tests) ------------------------------------------------------------------

RNG_SEED = 0x5962BE5D


def test_uint32_from_bits_round_trips():
    rng = random.Random(RNG_SEED)
    for _ in range(50):
        v = rng.getrandbits(32)
        be = [Constant(bool(v >> (31 - i) & 1)) for i in range(32)]
        u = UInt32.from_bits_be(be)
        assert u.value == v and u.into_bits_be() == be
        assert UInt32.from_bits(u.into_bits()).value == v
    with pytest.raises(ValueError, match="32 bits, has 31"):
        UInt32.from_bits_be(be[:31])


def test_uint32_rotr_shr():
    rng = random.Random(RNG_SEED)
    num = rng.getrandbits(32)
    a = UInt32.constant(num)
    for i in range(40):
        want = ((num >> (i % 32)) | (num << (32 - i % 32))) & 0xFFFFFFFF
        assert a.rotr(i).value == want == UInt32.from_bits(a.rotr(i).bits).value
        assert a.shr(i).value == num >> (i % 32) == UInt32.from_bits(a.shr(i).bits).value


def test_uint32_xor():
    rng = random.Random(RNG_SEED)
    for _ in range(20):
        cs = TestConstraintSystem()
        a, b, c = (rng.getrandbits(32) for _ in range(3))
        with cs.namespace("a_bit"):
            ua = UInt32.alloc(cs, a)
        with cs.namespace("c_bit"):
            uc = UInt32.alloc(cs, c)
        with cs.namespace("first xor"):
            r = ua.xor(cs, UInt32.constant(b))  # constant operand: no constraint, only negations
        assert cs.num_constraints == 64
        with cs.namespace("second xor"):
            r = r.xor(cs, uc)
        assert cs.is_satisfied() and r.value == a ^ b ^ c == UInt32.from_bits(r.bits).value
        assert cs.num_constraints == 64 + 32
        flip(cs, "second xor/xor of bit 0/xor result")
        assert cs.which_is_unsatisfied() == "second xor/xor of bit 0/xor constraint"


def test_uint32_addmany_constants_fold():
    rng = random.Random(RNG_SEED)
    for _ in range(20):
        cs = TestConstraintSystem()
        a, b, c = (rng.getrandbits(32) for _ in range(3))
        with MultiEq(cs) as meq, meq.namespace("addition"):
            r = UInt32.addmany(meq, [UInt32.constant(a), UInt32.constant(b), UInt32.constant(c)])
        assert r.value == (a + b + c) & 0xFFFFFFFF and all(isinstance(x, Constant) for x in r.bits)
        assert cs.num_constraints == 0 and cs.num_aux == 0


def test_uint32_addmany():
    rng = random.Random(RNG_SEED)
    for _ in range(20):
        cs = TestConstraintSystem()
        a, b, c, d = (rng.getrandbits(32) for _ in range(4))
        with cs.namespace("a_bit"):
            ua = UInt32.alloc(cs, a)
        with cs.namespace("d_bit"):
            ud = UInt32.alloc(cs, d)
        with cs.namespace("xor"):
            r = ua.xor(cs, UInt32.constant(b))
        with MultiEq(cs) as meq, meq.namespace("addition"):
            r = UInt32.addmany(meq, [r, UInt32.constant(c), ud])
        want = ((a ^ b) + c + d) & 0xFFFFFFFF
        assert cs.is_satisfied() and r.value == want == UInt32.from_bits(r.bits).value
        # 3 operands: the sum has 34 bits, each allocated with its booleanity; one multieq row on drop
        assert cs.num_constraints == 64 + 34 + 1 and cs.num_aux == 64 + 34
        flip(cs, "addition/result bit 0/boolean")
        assert cs.which_is_unsatisfied() == "multieq 0"


def test_uint32_addmany_needs_a_multieq():
    cs = ConstraintSystem()
    with pytest.raises(TypeError, match="MultiEq"):
        UInt32.addmany(cs, [UInt32.constant(1), UInt32.constant(2)])


@pytest.mark.parametrize("op, fn", [(UInt32.sha256_maj, lambda a, b, c: (a & b) ^ (a & c) ^ (b & c)),
                                    (UInt32.sha256_ch, lambda a, b, c: (a & b) ^ (~a & c))])
def test_uint32_sha256_maj_ch(op, fn):
    rng = random.Random(RNG_SEED)
    for _ in range(10):
        cs = TestConstraintSystem()
        a, b, c = (rng.getrandbits(32) for _ in range(3))
        with cs.namespace("a_bit"):
            ua = UInt32.alloc(cs, a)
        with cs.namespace("c_bit"):
            uc = UInt32.alloc(cs, c)
        r = op(cs, ua, UInt32.constant(b), uc)
        assert cs.is_satisfied() and r.value == fn(a, b, c) & 0xFFFFFFFF == UInt32.from_bits(r.bits).value
        assert cs.num_constraints == 64 + 32  # b constant: one and/and_not/nor per bit
        cs.aux[-1] = 1 - cs.aux[-1]
        assert not cs.is_satisfied()


# --- MultiEq -----------------------------------------------------------------------------------


def test_multieq_flushes_at_capacity_and_on_close():
    """34-bit equalities: 7 fit in 254 bits (238), the 8th starts a new row; close emits the rest."""
    cs = TestConstraintSystem()
    vars_ = [cs.alloc(k + 1, f"x{k}") for k in range(9)]
    meq = MultiEq(cs)
    for k, v in enumerate(vars_):
        meq.enforce_equal(34, LinearCombination().add(v), LinearCombination().add(ONE, k + 1))
        assert cs.num_constraints == (0 if k < 7 else 1)
    meq.close()
    assert cs.num_constraints == 2 and cs.is_satisfied()
    first = cs.constraints[0]
    assert first[0].row() == tuple((v, pow(2, 34 * k, R_MOD)) for k, v in enumerate(vars_[:7]))
    assert first[1].row() == ((ONE, 1),)
    meq.close()  # nothing pending: no row
    assert cs.num_constraints == 2
    cs.aux[vars_[8]] += 1
    assert cs.which_is_unsatisfied() == "multieq 1"
    assert CAPACITY == 254
    with pytest.raises(ValueError, match="254 bits"):
        MultiEq(ConstraintSystem()).enforce_equal(254, LinearCombination(), LinearCombination())


# --- SHA-256 (sha256.rs tests) -----------------------------------------------------------------


def test_sha256_constant_block_costs_nothing():
    cs = TestConstraintSystem()
    out = sha256_block_no_padding(cs, [TRUE] + [FALSE] * 511)  # the padded empty message
    assert cs.num_constraints == 0 and cs.num_aux == 0
    assert digest_of(out) == hashlib.sha256(b"").digest()


def test_sha256_compression_count_and_tampering():
    cs = TestConstraintSystem()
    bits = alloc_bits(cs, [random.Random(1).random() < 0.5 for _ in range(512)])
    with cs.namespace("sha256"):
        out = sha256_compression_function(cs, bits, sha256_iv())
    assert cs.num_constraints - 512 == 25_840
    assert cs.is_satisfied() and len(out) == 8
    r1cs = ConstraintSystem()  # the recording mode makes the same rows
    rbits = alloc_bits(r1cs, [boolean.value_of(b) for b in bits])
    sha256_compression_function(r1cs, rbits, sha256_iv())
    assert [w.value for w in out] == [w.value for w in sha256_compression_function(
        ConstraintSystem(), [Constant(boolean.value_of(b)) for b in bits], sha256_iv())]
    assert [(a.row(), b.row(), c.row()) for a, b, c in r1cs.constraints[:2000]] == [
        (a.row(), b.row(), c.row()) for a, b, c in cs.constraints[:2000]]
    flip(cs, "sha256/compression round 10/ch/ch 3/ch")
    assert cs.which_is_unsatisfied() == "sha256/compression round 10/ch/ch 3/ch computation"


def test_sha256_of_a_512_bit_message():
    rng = random.Random(2)
    data = bytes(rng.getrandbits(8) for _ in range(64))
    cs = TestConstraintSystem()
    bits = message_bits(cs, data)
    with cs.namespace("sha256"):
        out = sha256(cs, bits)
    assert cs.num_constraints - 512 == 44_874
    assert cs.is_satisfied() and digest_of(out) == hashlib.sha256(data).digest()
    flip(cs, "input bit 100/boolean")
    assert not cs.is_satisfied()


@pytest.mark.parametrize("length", [0, 1, 31, 55, 56, 100])
def test_sha256_matches_hashlib(length):
    data = random.Random(length).randbytes(length)
    cs = TestConstraintSystem()
    out = sha256(cs, message_bits(cs, data))
    assert cs.is_satisfied() and digest_of(out) == hashlib.sha256(data).digest()
    assert digest_of(out) != hashlib.sha256(data + b"\0").digest()


def test_sha256_refuses_partial_bytes():
    with pytest.raises(ValueError, match="7 bits"):
        sha256(ConstraintSystem(), [TRUE] * 7)


# --- num (num.rs tests) ------------------------------------------------------------------------


def test_to_bits_le_costs_256_and_binds_the_value():
    rng = random.Random(3)
    for strict in (False, True):
        r = rng.randrange(R_MOD)
        cs = TestConstraintSystem()
        n = AllocatedNum.alloc(cs, r)
        bits = n.to_bits_le_strict(cs) if strict else n.to_bits_le(cs)
        assert cs.is_satisfied() and len(bits) == 255
        assert sum(int(boolean.value_of(b)) << i for i, b in enumerate(bits)) == r
        if not strict:
            assert cs.num_constraints == 256 and cs.constraints[-1][0].row() == cs.constraints[-1][1].row() == ()
        cs.set("num", r + 1)
        assert cs.which_is_unsatisfied() == "unpacking constraint"
        cs.set("num", r)
        flip(cs, "bit 9/boolean")
        assert not cs.is_satisfied()


def test_to_bits_le_strict_refuses_r():
    cs = TestConstraintSystem()
    AllocatedNum.alloc(cs, R_MOD - 1).to_bits_le_strict(cs)
    assert cs.is_satisfied()
    cs.set("bit 254/boolean", 1)  # the bits now spell r itself
    assert cs.which_is_unsatisfied() == "bit 254/boolean constraint"


def test_mul_square_nonzero():
    cs = TestConstraintSystem()
    with cs.namespace("a"):
        a = AllocatedNum.alloc(cs, 12)
    with cs.namespace("b"):
        b = AllocatedNum.alloc(cs, 10)
    assert a.mul(cs, b).value == 120 and a.square(cs).value == 144
    a.assert_nonzero(cs)
    assert cs.is_satisfied() and cs.get("ephemeral inverse") == pow(12, -1, R_MOD)
    cs.set("product num", 121)
    assert cs.which_is_unsatisfied() == "multiplication constraint"
    cs.set("product num", 120)
    cs.set("squared num", 145)
    assert cs.which_is_unsatisfied() == "squaring constraint"
    cs.set("squared num", 144)
    cs.set("ephemeral inverse", 3)
    assert cs.which_is_unsatisfied() == "nonzero assertion constraint"
    with pytest.raises(ZeroDivisionError):
        AllocatedNum(a.variable, 0).assert_nonzero(TestConstraintSystem())


def test_conditionally_reverse():
    for cond in (FALSE, TRUE, "alloc true", "alloc false"):
        cs = TestConstraintSystem()
        with cs.namespace("a"):
            a = AllocatedNum.alloc(cs, 7)
        with cs.namespace("b"):
            b = AllocatedNum.alloc(cs, 9)
        condition = operand(cs, cond, "condition") if isinstance(cond, str) else cond
        c, d = AllocatedNum.conditionally_reverse(cs, a, b, condition)
        swapped = boolean.value_of(condition)
        assert cs.is_satisfied() and (c.value, d.value) == ((9, 7) if swapped else (7, 9))
        cs.set("conditional reversal result 1/num", 8)
        assert cs.which_is_unsatisfied() == "first conditional reversal"


def test_inputize_adds_an_input_and_its_constraint():
    cs = TestConstraintSystem()
    n = AllocatedNum.alloc(cs, 42)
    n.inputize(cs)
    assert cs.num_inputs == 2 and cs.num_constraints == 1 and cs.is_satisfied() and cs.verify([42])
    assert not cs.verify([43])
    cs.set("num", 41)
    assert cs.which_is_unsatisfied() == "enforce input is correct"


# --- multipack and UInt64 ------------------------------------------------------------------------


def test_bytes_to_bits():
    assert bytes_to_bits(b"\x81\x02") == [1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0]
    assert bytes_to_bits_le(b"\x81\x02") == [1, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0]


@pytest.mark.parametrize("num_bits", [0, 1, 253, 254, 255, 600])
def test_pack_into_inputs(num_bits):
    rng = random.Random(num_bits)
    values = [rng.random() < 0.5 for _ in range(num_bits)]
    cs = TestConstraintSystem()
    with cs.namespace("pack"):
        pack_into_inputs(cs, alloc_bits(cs, values, "bit"))
    chunks = -(-num_bits // 254)
    assert cs.num_inputs == 1 + chunks and cs.num_constraints == num_bits + chunks
    expected = compute_multipacking(values)
    assert cs.is_satisfied() and cs.verify(expected)
    if num_bits:
        assert not cs.verify([expected[0] + 1] + expected[1:])
        flip(cs, "pack/bit 0/boolean")
        assert cs.which_is_unsatisfied() == "pack/packing constraint 0"


def test_pack_bits_takes_the_first_254():
    values = [True] * 256
    cs = TestConstraintSystem()
    n = pack_bits(cs, alloc_bits(cs, values, "bit"))
    assert n.value == (1 << 254) - 1 and cs.num_constraints == 256 + 1 and cs.is_satisfied()
    cs.set("input/num", n.value - 1)
    assert cs.which_is_unsatisfied() == "packing constraint"


def test_uint64_challenge_as_one_input():
    challenge = 0xDEADBEEF12345678
    cs = TestConstraintSystem()
    u = UInt64.alloc(cs, challenge)
    u.pack_into_input(cs)
    assert cs.num_constraints == 64 + 1 and cs.verify([challenge]) and cs.is_satisfied()
    assert UInt64.from_bits_be(u.to_bits_be()).value == challenge == UInt64.from_bits(u.to_bits_le()).value
    assert UInt64.constant(5).value == 5 and not cs.verify([challenge + 1])
    flip(cs, "allocated bit 3/boolean")
    assert cs.which_is_unsatisfied() == "packing constraint 0"


def test_shape_without_a_witness_equals_the_shape_with_one():
    """The R1CS does not depend on values: a synthesis with every value None records the same rows."""

    def record(values):
        cs = ConstraintSystem()
        bits = alloc_bits(cs, values)
        out = sha256(cs, bits)  # one block: 256 allocated bits, then constant padding
        cs.finish()
        return cs, out

    blank, blank_out = record([None] * 256)
    rng = random.Random(5)
    full, _ = record([rng.random() < 0.5 for _ in range(256)])
    assert all(v is None for v in blank.aux) and boolean.value_of(blank_out[0]) is None
    assert blank.num_constraints == full.num_constraints and blank.num_aux == full.num_aux
    assert [(a.row(), b.row(), c.row()) for a, b, c in blank.constraints] == [
        (a.row(), b.row(), c.row()) for a, b, c in full.constraints]
    full.constraints[100][2].add(ONE)
    assert blank.constraints[100][2].row() != full.constraints[100][2].row()
