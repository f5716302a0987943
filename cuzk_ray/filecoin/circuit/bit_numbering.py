"""Bit-order helpers of rust-fil-proofs' ``storage-proofs-core/src/util.rs`` that circuits share.

``reverse_bit_numbering`` turns little-endian field bits (``to_bits_le``) into the bit stream of
the value's little-endian bytes, each byte most significant bit first: what SHA-256 hashes when
Filecoin hashes a 32-byte node. Applied to SHA-256's big-endian output it does the converse.
"""

from __future__ import annotations

from . import boolean
from .boolean import FALSE, Boolean, Is


def reverse_bit_numbering(bits: list[Boolean]) -> list[Boolean]:
    """Pad to whole bytes with constant zeros, then reverse the bit order within each byte."""
    padded = list(bits) + [FALSE] * (-len(bits) % 8)
    return [b for i in range(0, len(padded), 8) for b in reversed(padded[i : i + 8])]


def bytes_into_boolean_vec_be(cs, value: bytes | None, size: int) -> list[Boolean]:
    """``size`` allocated bits (``bit i``) of ``value``'s bytes, each byte most significant bit
    first; None allocates ``size`` bits without a witness."""
    if value is not None and len(value) * 8 != size:
        raise ValueError(f"bytes_into_boolean_vec_be: {len(value)} bytes for {size} bits")
    bits = []
    for i in range(size):
        with cs.namespace(f"bit {i}"):
            v = None if value is None else bool(value[i // 8] >> (7 - i % 8) & 1)
            bits.append(Is(boolean.alloc_bit(cs, v)))
    return bits
