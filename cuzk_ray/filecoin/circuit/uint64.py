"""64-bit words in a circuit, as rust-fil-proofs' ``storage-proofs-core/src/gadgets/uint64.rs``.

Only what the PoRep circuit uses: constants, allocation (64 bits, ``allocated bit i``), bit views,
and ``pack_into_input`` (the challenge as one public input).
"""

from __future__ import annotations

from dataclasses import dataclass

from . import boolean
from .boolean import Boolean, Is
from .multipack import pack_into_inputs


@dataclass(slots=True)
class UInt64:
    """64 Booleans read as an unsigned integer, least significant first."""

    bits: list[Boolean]
    value: int | None

    @classmethod
    def constant(cls, value: int) -> UInt64:
        return cls([boolean.constant(bool(value >> i & 1)) for i in range(64)], value)

    @classmethod
    def alloc(cls, cs, value: int | None) -> UInt64:
        bits = []
        for i in range(64):
            with cs.namespace(f"allocated bit {i}"):
                bits.append(Is(boolean.alloc_bit(cs, None if value is None else bool(value >> i & 1))))
        if cs.tape is not None:
            cs.tape.free_bits(bits[0].bit.variable, len(bits))
        return cls(bits, value)

    @classmethod
    def from_bits_be(cls, bits: list[Boolean]) -> UInt64:
        return cls.from_bits(bits[::-1])

    @classmethod
    def from_bits(cls, bits: list[Boolean]) -> UInt64:
        """From little-endian bits."""
        if len(bits) != 64:
            raise ValueError(f"UInt64 needs 64 bits, has {len(bits)}")
        values = [boolean.value_of(b) for b in bits]
        v = None if None in values else sum(int(x) << i for i, x in enumerate(values))
        return cls(list(bits), v)

    def to_bits_be(self) -> list[Boolean]:
        return self.bits[::-1]

    def to_bits_le(self) -> list[Boolean]:
        return list(self.bits)

    def pack_into_input(self, cs) -> None:
        """The 64 bits as one public input (one constraint)."""
        pack_into_inputs(cs, self.bits)
