"""filecoin-hashers' ``Sha256Function`` circuits (``filecoin-hashers/src/sha256.rs``): tree D's node hash.

A node is SHA-256 over its children, each child's 255 little-endian bits (``to_bits_le``) padded with
a constant 0 to 256 and reversed within every byte, i.e. the child's 32 little-endian bytes; the
digest's bytes are read back least significant bit first and the first 254 bits packed into one
number, which is SHA-256 with the top two bits of the last byte cleared (``sha254``).
"""

from __future__ import annotations

from .bit_numbering import reverse_bit_numbering
from .boolean import Boolean
from .multieq import CAPACITY
from .multipack import pack_bits
from .num import AllocatedNum
from .sha256 import sha256


def hash_circuit(cs, bits: list[Boolean]) -> AllocatedNum:
    """SHA-256 of ``bits`` (namespace ``hash``), its first 254 little-endian bits packed (``pack_le``)."""
    with cs.namespace("hash"):
        be_bits = sha256(cs, bits)
    le_bits = reverse_bit_numbering(be_bits)[:CAPACITY]
    with cs.namespace("pack_le"):
        return pack_bits(cs, le_bits)


def hash_multi_leaf_circuit(cs, leaves: list[AllocatedNum], height: int = 0) -> AllocatedNum:
    """The node over ``leaves`` (``{i}_num_into_bits``: 256 constraints per leaf, then SHA-256)."""
    bits: list[Boolean] = []
    for i, leaf in enumerate(leaves):
        with cs.namespace(f"{i}_num_into_bits"):
            bits += reverse_bit_numbering(leaf.to_bits_le(cs))
    return hash_circuit(cs, bits)


def hash2_circuit(cs, a: AllocatedNum, b: AllocatedNum) -> AllocatedNum:
    """The node over two numbers (``a_bits``, ``b_bits``)."""
    with cs.namespace("a_bits"):
        a_bits = a.to_bits_le(cs)
    with cs.namespace("b_bits"):
        b_bits = b.to_bits_le(cs)
    return hash_circuit(cs, reverse_bit_numbering(a_bits) + reverse_bit_numbering(b_bits))
