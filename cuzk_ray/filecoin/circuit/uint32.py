"""32-bit words in a circuit, as bellperson's ``gadgets/uint32.rs`` (the SHA-256 gadget's word type).

Bits are kept least significant first. Rotations and shifts only re-index bits (free); ``xor``,
``sha256_maj`` and ``sha256_ch`` work bit by bit through ``boolean`` (constants folded there);
``addmany`` allocates the sum's bits (carries included) and hands the equality to a ``MultiEq``.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import boolean
from .boolean import Boolean, Constant, Is
from .cs import LinearCombination
from .multieq import MultiEq

MASK = 0xFFFFFFFF


def _bits_value(bits_le: list[Boolean]) -> int | None:
    value = 0
    for i, b in enumerate(bits_le):
        v = boolean.value_of(b)
        if v is None:
            return None
        value |= int(v) << i
    return value


@dataclass(slots=True)
class UInt32:
    """32 Booleans read as an unsigned integer; ``value`` is None when synthesized without a witness."""

    bits: list[Boolean]  # least significant first
    value: int | None

    @classmethod
    def constant(cls, value: int) -> UInt32:
        return cls([boolean.constant(bool(value >> i & 1)) for i in range(32)], value)

    @classmethod
    def alloc(cls, cs, value: int | None) -> UInt32:
        """32 allocated bits, least significant first, in namespaces ``allocated bit i``."""
        bits = []
        for i in range(32):
            with cs.namespace(f"allocated bit {i}"):
                bits.append(Is(boolean.alloc_bit(cs, None if value is None else bool(value >> i & 1))))
        if cs.tape is not None:
            cs.tape.free_bits(bits[0].bit.variable, len(bits))
        return cls(bits, value)

    @classmethod
    def from_bits_be(cls, bits: list[Boolean]) -> UInt32:
        if len(bits) != 32:
            raise ValueError(f"UInt32.from_bits_be needs 32 bits, has {len(bits)}")
        le = bits[::-1]
        return cls(le, _bits_value(le))

    @classmethod
    def from_bits(cls, bits: list[Boolean]) -> UInt32:
        """From little-endian bits."""
        if len(bits) != 32:
            raise ValueError(f"UInt32.from_bits needs 32 bits, has {len(bits)}")
        return cls(list(bits), _bits_value(bits))

    def into_bits_be(self) -> list[Boolean]:
        return self.bits[::-1]

    def into_bits(self) -> list[Boolean]:
        """Little-endian bits."""
        return list(self.bits)

    def rotr(self, by: int) -> UInt32:
        by %= 32
        v = None if self.value is None else ((self.value >> by) | (self.value << (32 - by))) & MASK
        return UInt32(self.bits[by:] + self.bits[:by], v)

    def shr(self, by: int) -> UInt32:
        by %= 32
        v = None if self.value is None else self.value >> by
        return UInt32(self.bits[by:] + [boolean.FALSE] * by, v)

    def xor(self, cs, other: UInt32) -> UInt32:
        """Bitwise xor, bit i in namespace ``xor of bit i``."""
        bits = []
        for i, (a, b) in enumerate(zip(self.bits, other.bits)):
            with cs.namespace(f"xor of bit {i}"):
                bits.append(boolean.xor(cs, a, b))
        v = None if self.value is None or other.value is None else self.value ^ other.value
        return UInt32(bits, v)

    @staticmethod
    def _triop(cs, a: UInt32, b: UInt32, c: UInt32, fn, label: str, bit_fn) -> UInt32:
        v = None if None in (a.value, b.value, c.value) else fn(a.value, b.value, c.value) & MASK
        bits = []
        for i in range(32):
            with cs.namespace(f"{label} {i}"):
                bits.append(bit_fn(cs, a.bits[i], b.bits[i], c.bits[i]))
        return UInt32(bits, v)

    @staticmethod
    def sha256_maj(cs, a: UInt32, b: UInt32, c: UInt32) -> UInt32:
        """(a and b) xor (a and c) xor (b and c), bit by bit."""
        return UInt32._triop(cs, a, b, c, lambda x, y, z: (x & y) ^ (x & z) ^ (y & z), "maj", boolean.sha256_maj)

    @staticmethod
    def sha256_ch(cs, a: UInt32, b: UInt32, c: UInt32) -> UInt32:
        """(a and b) xor ((not a) and c), bit by bit."""
        return UInt32._triop(cs, a, b, c, lambda x, y, z: (x & y) ^ (~x & z), "ch", boolean.sha256_ch)

    @staticmethod
    def addmany(cs: MultiEq, operands: list[UInt32]) -> UInt32:
        """The sum mod 2^32 of 2..10 words: all bits of the full sum are allocated (the carries too),
        the equality sum(operands) = sum(result bits) goes to the MultiEq; all-constant sums fold."""
        if not isinstance(cs, MultiEq):
            raise TypeError("UInt32.addmany needs a MultiEq as its constraint system")
        if not 2 <= len(operands) <= 10:
            raise ValueError(f"UInt32.addmany takes 2 to 10 operands, has {len(operands)}")
        max_value = len(operands) * MASK
        total: int | None = 0
        lc = LinearCombination()
        all_constants = True
        for op in operands:
            total = None if total is None or op.value is None else total + op.value
            coeff = 1
            for bit in op.bits:
                boolean.add_to_lc(bit, lc, coeff)
                all_constants = all_constants and isinstance(bit, Constant)
                coeff <<= 1
        if all_constants and total is not None:
            return UInt32.constant(total & MASK)
        result_bits = []
        result_lc = LinearCombination()
        i = 0
        while max_value:
            with cs.namespace(f"result bit {i}"):
                b = boolean.alloc_bit(cs, None if total is None else bool(total >> i & 1))
            result_lc.add(b.variable, 1 << i)
            result_bits.append(Is(b))
            max_value >>= 1
            i += 1
        if cs.tape is not None:
            cs.tape.sum_bits(result_bits[0].bit.variable, i, lc)
        cs.enforce_equal(i, lc, result_lc)
        return UInt32(result_bits[:32], None if total is None else total & MASK)

