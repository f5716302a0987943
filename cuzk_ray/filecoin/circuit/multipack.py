"""Bits packed into field elements, as bellperson's ``gadgets/multipack.rs``.

Chunks of CAPACITY (254) little-endian bits become one Fr each: as public inputs
(``pack_into_inputs``, one input and one constraint per chunk) or as one aux number (``pack_bits``,
rust-fil-proofs' ``gadgets/multipack.rs``, only the first 254 bits). ``compute_multipacking`` is the
same packing outside the circuit: the public inputs a verifier passes.
"""

from __future__ import annotations

from ...field import R_MOD
from .boolean import Boolean
from .cs import ONE, LinearCombination
from .multieq import CAPACITY
from .num import AllocatedNum, Num


def _pack(bits: list[Boolean]) -> Num:
    num = Num.zero()
    for i, bit in enumerate(bits):
        num = num.add_bool_with_coeff(bit, 1 << i)
    return num


def pack_into_inputs(cs, bits: list[Boolean]) -> None:
    """One public input per CAPACITY bits (``input i``), each with num * ONE = input."""
    for i in range(0, len(bits), CAPACITY):
        num = _pack(bits[i : i + CAPACITY])
        k = i // CAPACITY
        inp = cs.alloc_input(num.value, f"input {k}")
        if cs.tape is not None:
            cs.tape.pack(inp, bits[i : i + CAPACITY])
        cs.enforce(f"packing constraint {k}", num.lc(), LinearCombination().add(ONE), LinearCombination().add(inp))


def pack_bits(cs, bits: list[Boolean]) -> AllocatedNum:
    """The first CAPACITY bits as one aux number: num * ONE = input (one constraint)."""
    num = _pack(bits[:CAPACITY])
    with cs.namespace("input"):
        packed = AllocatedNum.alloc(cs, num.value)
        if cs.tape is not None:
            cs.tape.pack(packed.variable, bits[:CAPACITY])
    cs.enforce("packing constraint", num.lc(), LinearCombination().add(ONE), LinearCombination().add(packed.variable))
    return packed


def bytes_to_bits(data: bytes) -> list[bool]:
    """Each byte most significant bit first."""
    return [bool(v >> i & 1) for v in data for i in range(7, -1, -1)]


def bytes_to_bits_le(data: bytes) -> list[bool]:
    """Each byte least significant bit first."""
    return [bool(v >> i & 1) for v in data for i in range(8)]


def compute_multipacking(bits: list[bool]) -> list[int]:
    """The Fr values ``pack_into_inputs`` makes of these bits: chunks of CAPACITY, little-endian."""
    return [sum(1 << j for j, b in enumerate(bits[i : i + CAPACITY]) if b) % R_MOD
            for i in range(0, len(bits), CAPACITY)]
