"""Field elements in a circuit, as bellpepper-core's ``gadgets/num.rs``: AllocatedNum and Num.

Values are Fr ints (or None when synthesized without a witness).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...field import R_MOD
from . import boolean
from .boolean import AllocatedBit, Boolean, Is
from .cs import ONE, LinearCombination


def _packing_lc(bits: list[AllocatedBit], variable: int) -> LinearCombination:
    """sum 2^i bit_i - variable: the unpacking constraint's C (its A and B are empty: 0 * 0 = C)."""
    lc = LinearCombination()
    for i, bit in enumerate(bits):
        lc.add(bit.variable, 1 << i)
    return lc.sub(variable)


@dataclass(slots=True)
class AllocatedNum:
    """One variable holding a field element."""

    variable: int
    value: int | None

    @classmethod
    def alloc(cls, cs, value: int | None) -> AllocatedNum:
        """An aux variable ``num``."""
        return cls(cs.alloc(value, "num"), value)

    @classmethod
    def alloc_witness(cls, cs, value: int | None) -> AllocatedNum:
        """An aux ``num`` whose value comes from the proof's data (a FREE value of a witness tape)."""
        num = cls.alloc(cs, value)
        if cs.tape is not None:
            cs.tape.free(num.variable)
        return num

    @classmethod
    def alloc_input(cls, cs, value: int | None) -> AllocatedNum:
        """A public input ``input num``."""
        return cls(cs.alloc_input(value, "input num"), value)

    @classmethod
    def alloc_maybe_input(cls, cs, is_input: bool, value: int | None) -> AllocatedNum:
        return cls.alloc_input(cs, value) if is_input else cls.alloc(cs, value)

    def inputize(self, cs) -> None:
        """A new public input equal to this number: input * ONE = self."""
        inp = cs.alloc_input(self.value, "input variable")
        if cs.tape is not None:
            cs.tape.linear(inp, ((self.variable, 1),))
        cs.enforce("enforce input is correct", LinearCombination().add(inp), LinearCombination().add(ONE),
                   LinearCombination().add(self.variable))

    def to_bits_le(self, cs) -> list[Boolean]:
        """255 allocated bits, least significant first, and one packing constraint (256 constraints).
        The bits may spell self + r (not strictly in the field)."""
        bits = boolean.field_into_allocated_bits_le(cs, self.value)
        if cs.tape is not None:
            cs.tape.num_bits(bits[0].variable, len(bits), self.variable)
        cs.enforce("unpacking constraint", LinearCombination(), LinearCombination(),
                   _packing_lc(bits, self.variable))
        return [Is(b) for b in bits]

    def to_bits_le_strict(self, cs) -> list[Boolean]:
        """Little-endian bits that must spell a value <= r - 1: the bits under runs of ones of r - 1
        are ANDed, and a bit under a zero of r - 1 must be 0 whenever the run before it is all ones."""
        top = R_MOD - 1
        result: list[AllocatedBit] = []  # most significant first
        last_run: AllocatedBit | None = None
        current_run: list[AllocatedBit] = []
        for i, pos in enumerate(range(top.bit_length() - 1, -1, -1)):
            a_bit = None if self.value is None else bool(self.value >> pos & 1)
            if top >> pos & 1:
                with cs.namespace(f"bit {i}"):
                    bit = boolean.alloc_bit(cs, a_bit)
                current_run.append(bit)
                result.append(bit)
                continue
            if current_run:
                if last_run is not None:
                    current_run.append(last_run)
                with cs.namespace(f"run ending at {i}"):
                    last_run = _kary_and(cs, current_run)
                current_run = []
            with cs.namespace(f"bit {i}"):
                result.append(boolean.alloc_bit_conditionally(cs, a_bit, last_run))
        if current_run:
            raise AssertionError("r - 1 ends in a run of ones: r would be even")
        result.reverse()
        cs.enforce("unpacking constraint", LinearCombination(), LinearCombination(),
                   _packing_lc(result, self.variable))
        return [Is(b) for b in result]

    def mul(self, cs, other: AllocatedNum) -> AllocatedNum:
        """self * other = product."""
        v = None if self.value is None or other.value is None else self.value * other.value % R_MOD
        var = cs.alloc(v, "product num")
        if cs.tape is not None:
            cs.tape.mul_add(var, self.variable, 0, other.variable, 0, 0)
        cs.enforce("multiplication constraint", LinearCombination().add(self.variable),
                   LinearCombination().add(other.variable), LinearCombination().add(var))
        return AllocatedNum(var, v)

    def square(self, cs) -> AllocatedNum:
        """self * self = square."""
        v = None if self.value is None else self.value * self.value % R_MOD
        var = cs.alloc(v, "squared num")
        if cs.tape is not None:
            cs.tape.mul_add(var, self.variable, 0, self.variable, 0, 0)
        cs.enforce("squaring constraint", LinearCombination().add(self.variable),
                   LinearCombination().add(self.variable), LinearCombination().add(var))
        return AllocatedNum(var, v)

    def assert_nonzero(self, cs) -> None:
        """self * inverse = ONE; a zero value has no inverse and is refused."""
        if self.value == 0:
            raise ZeroDivisionError("assert_nonzero: the value is zero")
        inv = cs.alloc(None if self.value is None else pow(self.value, -1, R_MOD), "ephemeral inverse")
        cs.enforce("nonzero assertion constraint", LinearCombination().add(self.variable),
                   LinearCombination().add(inv), LinearCombination().add(ONE))

    @staticmethod
    def conditionally_reverse(cs, a: AllocatedNum, b: AllocatedNum, condition: Boolean
                              ) -> tuple[AllocatedNum, AllocatedNum]:
        """(b, a) if condition else (a, b): (a - b) * condition = a - c and (b - a) * condition = b - d."""
        cond = boolean.value_of(condition)
        swap = None if cond is None else (b.value, a.value) if cond else (a.value, b.value)
        with cs.namespace("conditional reversal result 1"):
            c = AllocatedNum.alloc(cs, None if swap is None else swap[0])
            if cs.tape is not None:
                cs.tape.select(c.variable, condition, b.variable, a.variable)
        cs.enforce("first conditional reversal", LinearCombination().add(a.variable).sub(b.variable),
                   boolean.lc_of(condition), LinearCombination().add(a.variable).sub(c.variable))
        with cs.namespace("conditional reversal result 2"):
            d = AllocatedNum.alloc(cs, None if swap is None else swap[1])
            if cs.tape is not None:
                cs.tape.select(d.variable, condition, a.variable, b.variable)
        cs.enforce("second conditional reversal", LinearCombination().add(b.variable).sub(a.variable),
                   boolean.lc_of(condition), LinearCombination().add(b.variable).sub(d.variable))
        return c, d


def _kary_and(cs, bits: list[AllocatedBit]) -> AllocatedBit:
    """AND of the bits, one ``and i`` after another (to_bits_le_strict's helper)."""
    cur = bits[0]
    for i in range(1, len(bits)):
        with cs.namespace(f"and {i}"):
            cur = boolean.bit_and(cs, cur, bits[i])
    return cur


@dataclass(slots=True)
class Num:
    """A linear combination with its value: sums of bits and numbers that cost no constraint."""

    value: int | None
    terms: LinearCombination

    @classmethod
    def zero(cls) -> Num:
        return cls(0, LinearCombination())

    @classmethod
    def from_allocated(cls, num: AllocatedNum) -> Num:
        return cls(num.value, LinearCombination().add(num.variable))

    def lc(self, coeff: int = 1) -> LinearCombination:
        """A fresh combination coeff * self."""
        return LinearCombination().add_lc(self.terms, coeff)

    def add_bool_with_coeff(self, bit: Boolean, coeff: int) -> Num:
        """self + coeff * bit (extends this Num's combination, as Rust's by-value ``self`` does)."""
        bv = boolean.value_of(bit)
        v = None if self.value is None or bv is None else (self.value + coeff * bv) % R_MOD
        return Num(v, boolean.add_to_lc(bit, self.terms, coeff))

    def add(self, other: Num) -> Num:
        """self + other, extending this Num's combination (Rust consumes ``self``); a missing value on
        one side is taken as the other's, as Rust does."""
        if self.value is None or other.value is None:
            v = self.value if other.value is None else other.value
        else:
            v = (self.value + other.value) % R_MOD
        return Num(v, self.terms.add_lc(other.terms))

    def scale(self, scalar: int) -> Num:
        terms = LinearCombination()
        terms.terms = {var: c * scalar % R_MOD for var, c in self.terms.terms.items()}
        return Num(None if self.value is None else self.value * scalar % R_MOD, terms)
