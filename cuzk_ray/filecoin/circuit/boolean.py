"""Bits in a circuit, as bellpepper-core's ``gadgets/boolean.rs``: AllocatedBit and Boolean (Constant/Is/Not).

Every function allocates and constrains in the Rust order, and folds constants in exactly the cases
the Rust folds them: whether a constraint exists at all depends on it. Values are ``bool`` or None
(synthesis without a witness); an allocated bit holds the Fr value 0 or 1.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...field import R_MOD
from .cs import ONE, LinearCombination

NUM_BITS = R_MOD.bit_length()  # Fr::NUM_BITS = 255


def _fr(value: bool | None) -> int | None:
    return None if value is None else int(value)


def _both(f, a: bool | None, b: bool | None) -> bool | None:
    return None if a is None or b is None else f(a, b)


@dataclass(slots=True)
class AllocatedBit:
    """An aux variable constrained to 0 or 1."""

    variable: int
    value: bool | None


def alloc_bit(cs, value: bool | None) -> AllocatedBit:
    """Allocate a bit and enforce (1 - a) * a = 0 (the caller tells a witness tape where the value comes from)."""
    var = cs.alloc(_fr(value), "boolean")
    cs.enforce("boolean constraint", LinearCombination().add(ONE).sub(var), LinearCombination().add(var),
               LinearCombination())
    return AllocatedBit(var, value)


def alloc_bit_conditionally(cs, value: bool | None, must_be_false: AllocatedBit) -> AllocatedBit:
    """Allocate a bit that must be 0 when ``must_be_false`` is 1: (1 - must_be_false - a) * a = 0."""
    var = cs.alloc(_fr(value), "boolean")
    cs.enforce("boolean constraint", LinearCombination().add(ONE).sub(must_be_false.variable).sub(var),
               LinearCombination().add(var), LinearCombination())
    return AllocatedBit(var, value)


def bit_xor(cs, a: AllocatedBit, b: AllocatedBit) -> AllocatedBit:
    """c = a xor b, enforced as (a + a) * b = a + b - c."""
    value = _both(lambda x, y: x != y, a.value, b.value)
    c = cs.alloc(_fr(value), "xor result")
    if cs.tape is not None:
        cs.tape.bit_op("xor", c, a, b)
    cs.enforce("xor constraint", LinearCombination().add(a.variable).add(a.variable),
               LinearCombination().add(b.variable),
               LinearCombination().add(a.variable).add(b.variable).sub(c))
    return AllocatedBit(c, value)


def bit_and(cs, a: AllocatedBit, b: AllocatedBit) -> AllocatedBit:
    """c = a and b, enforced as a * b = c."""
    value = _both(lambda x, y: x and y, a.value, b.value)
    c = cs.alloc(_fr(value), "and result")
    if cs.tape is not None:
        cs.tape.bit_op("and", c, a, b)
    cs.enforce("and constraint", LinearCombination().add(a.variable), LinearCombination().add(b.variable),
               LinearCombination().add(c))
    return AllocatedBit(c, value)


def bit_and_not(cs, a: AllocatedBit, b: AllocatedBit) -> AllocatedBit:
    """c = a and not b, enforced as a * (1 - b) = c."""
    value = _both(lambda x, y: x and not y, a.value, b.value)
    c = cs.alloc(_fr(value), "and not result")
    if cs.tape is not None:
        cs.tape.bit_op("and_not", c, a, b)
    cs.enforce("and not constraint", LinearCombination().add(a.variable),
               LinearCombination().add(ONE).sub(b.variable), LinearCombination().add(c))
    return AllocatedBit(c, value)


def bit_nor(cs, a: AllocatedBit, b: AllocatedBit) -> AllocatedBit:
    """c = (not a) and (not b), enforced as (1 - a) * (1 - b) = c."""
    value = _both(lambda x, y: not x and not y, a.value, b.value)
    c = cs.alloc(_fr(value), "nor result")
    if cs.tape is not None:
        cs.tape.bit_op("nor", c, a, b)
    cs.enforce("nor constraint", LinearCombination().add(ONE).sub(a.variable),
               LinearCombination().add(ONE).sub(b.variable), LinearCombination().add(c))
    return AllocatedBit(c, value)


@dataclass(slots=True)
class Constant:
    """A known bit: no variable, folded away by every operation."""

    value: bool


@dataclass(slots=True)
class Is:
    """An allocated bit as it is."""

    bit: AllocatedBit


@dataclass(slots=True)
class Not:
    """An allocated bit read negated (1 - bit): negation costs nothing."""

    bit: AllocatedBit


Boolean = Constant | Is | Not

TRUE = Constant(True)
FALSE = Constant(False)


def constant(value: bool) -> Constant:
    return TRUE if value else FALSE


def value_of(b: Boolean) -> bool | None:
    if isinstance(b, Constant):
        return b.value
    v = b.bit.value
    if isinstance(b, Is) or v is None:
        return v
    return not v


def negate(b: Boolean) -> Boolean:
    """Boolean::not."""
    match b:
        case Constant(value=v):
            return constant(not v)
        case Is(bit=bit):
            return Not(bit)
        case Not(bit=bit):
            return Is(bit)
    raise TypeError(f"not a Boolean: {b!r}")


def add_to_lc(b: Boolean, lc: LinearCombination, coeff: int = 1) -> LinearCombination:
    """lc + coeff * b: ``coeff * ONE`` for true, nothing for false, ``coeff * (ONE - bit)`` for Not."""
    match b:
        case Constant(value=v):
            return lc.add(ONE, coeff) if v else lc
        case Is(bit=bit):
            return lc.add(bit.variable, coeff)
        case Not(bit=bit):
            return lc.add(ONE, coeff).sub(bit.variable, coeff)
    raise TypeError(f"not a Boolean: {b!r}")


def sub_from_lc(b: Boolean, lc: LinearCombination, coeff: int = 1) -> LinearCombination:
    """lc - coeff * b, term by term in the Rust order."""
    match b:
        case Constant(value=v):
            return lc.sub(ONE, coeff) if v else lc
        case Is(bit=bit):
            return lc.sub(bit.variable, coeff)
        case Not(bit=bit):
            return lc.sub(ONE, coeff).add(bit.variable, coeff)
    raise TypeError(f"not a Boolean: {b!r}")


def lc_of(b: Boolean, coeff: int = 1) -> LinearCombination:
    """Boolean::lc: the combination coeff * b."""
    return add_to_lc(b, LinearCombination(), coeff)


def enforce_equal(cs, a: Boolean, b: Boolean) -> None:
    """0 * 0 = a - b (constants folded); two different constants cannot be satisfied."""
    match (a, b):
        case (Constant(value=x), Constant(value=y)):
            if x != y:
                raise ValueError("enforce_equal of two different constants is unsatisfiable")
        case (Constant(value=True), x) | (x, Constant(value=True)):
            cs.enforce("enforce equal to one", LinearCombination(), LinearCombination(),
                       sub_from_lc(x, LinearCombination().add(ONE)))
        case (Constant(value=False), x) | (x, Constant(value=False)):
            cs.enforce("enforce equal to zero", LinearCombination(), LinearCombination(),
                       add_to_lc(x, LinearCombination()))
        case _:
            cs.enforce("enforce equal", LinearCombination(), LinearCombination(),
                       sub_from_lc(b, add_to_lc(a, LinearCombination())))


def xor(cs, a: Boolean, b: Boolean) -> Boolean:
    """Boolean::xor: constants fold; one Not is pulled out; otherwise one allocated xor."""
    match (a, b):
        case (Constant(value=False), x) | (x, Constant(value=False)):
            return x
        case (Constant(value=True), x) | (x, Constant(value=True)):
            return negate(x)
        case (Is(), Not()) | (Not(), Is()):
            is_, not_ = (a, b) if isinstance(a, Is) else (b, a)
            return negate(xor(cs, is_, negate(not_)))
    return Is(bit_xor(cs, a.bit, b.bit))


def and_(cs, a: Boolean, b: Boolean) -> Boolean:
    """Boolean::and: constants fold; Is/Not pairs pick and, and_not or nor."""
    match (a, b):
        case (Constant(value=False), _) | (_, Constant(value=False)):
            return FALSE
        case (Constant(value=True), x) | (x, Constant(value=True)):
            return x
        case (Is(bit=x), Not(bit=y)) | (Not(bit=y), Is(bit=x)):
            return Is(bit_and_not(cs, x, y))
        case (Not(bit=x), Not(bit=y)):
            return Is(bit_nor(cs, x, y))
    return Is(bit_and(cs, a.bit, b.bit))


def _all_values(f, a: Boolean, b: Boolean, c: Boolean) -> bool | None:
    va, vb, vc = value_of(a), value_of(b), value_of(c)
    return None if va is None or vb is None or vc is None else f(va, vb, vc)


def _ch(a: bool, b: bool, c: bool) -> bool:
    return (a and b) != ((not a) and c)


def _maj(a: bool, b: bool, c: bool) -> bool:
    return bool((a and b) ^ (a and c) ^ (b and c))


def sha256_ch(cs, a: Boolean, b: Boolean, c: Boolean) -> Boolean:
    """(a and b) xor ((not a) and c), with the Rust constant cases in the Rust order."""
    value = _all_values(_ch, a, b, c)
    match (a, b, c):
        case (Constant(), Constant(), Constant()):
            return constant(value)
        case (Constant(value=False), _, _):
            return c
        case (_, Constant(value=False), _):
            return and_(cs, negate(a), c)
        case (_, _, Constant(value=False)):
            return and_(cs, a, b)
        case (_, _, Constant(value=True)):
            return negate(and_(cs, a, negate(b)))
        case (_, Constant(value=True), _):
            return negate(and_(cs, negate(a), negate(c)))
    # a may still be Constant(true): then ch = b xor c, and the general constraint below holds
    ch = cs.alloc(_fr(value), "ch")
    if cs.tape is not None:
        cs.tape.bit_op("ch", ch, a, b, c)
    # a * (b - c) = ch - c
    cs.enforce("ch computation", sub_from_lc(c, add_to_lc(b, LinearCombination())),
               add_to_lc(a, LinearCombination()), sub_from_lc(c, LinearCombination().add(ch)))
    return Is(AllocatedBit(ch, value))


def sha256_maj(cs, a: Boolean, b: Boolean, c: Boolean) -> Boolean:
    """(a and b) xor (a and c) xor (b and c): bc = b and c, then (2bc - b - c) * a = bc - maj."""
    value = _all_values(_maj, a, b, c)
    match (a, b, c):
        case (Constant(), Constant(), Constant()):
            return constant(value)
        case (Constant(value=False), _, _):
            return and_(cs, b, c)
        case (_, Constant(value=False), _):
            return and_(cs, a, c)
        case (_, _, Constant(value=False)):
            return and_(cs, a, b)
        case (_, _, Constant(value=True)):
            return negate(and_(cs, negate(a), negate(b)))
        case (_, Constant(value=True), _):
            return negate(and_(cs, negate(a), negate(c)))
        case (Constant(value=True), _, _):
            return negate(and_(cs, negate(b), negate(c)))
    maj = cs.alloc(_fr(value), "maj")
    if cs.tape is not None:
        cs.tape.bit_op("maj", maj, a, b, c)
    with cs.namespace("b and c"):
        bc = and_(cs, b, c)
    lhs = sub_from_lc(c, sub_from_lc(b, add_to_lc(bc, LinearCombination(), 2)))
    cs.enforce("maj computation", lhs, add_to_lc(a, LinearCombination()),
               add_to_lc(bc, LinearCombination()).sub(maj))
    return Is(AllocatedBit(maj, value))


def u64_into_boolean_vec_le(cs, value: int | None) -> list[Boolean]:
    """64 allocated bits of a u64, least significant first, in namespaces ``bit i``."""
    bits = []
    for i in range(64):
        with cs.namespace(f"bit {i}"):
            bits.append(Is(alloc_bit(cs, None if value is None else bool(value >> i & 1))))
    return bits


def field_into_allocated_bits_le(cs, value: int | None) -> list[AllocatedBit]:
    """The NUM_BITS (255) bits of an Fr value, allocated least significant first in ``bit i``."""
    bits = []
    for i in range(NUM_BITS):
        with cs.namespace(f"bit {i}"):
            bits.append(alloc_bit(cs, None if value is None else bool(value >> i & 1)))
    return bits


def field_into_boolean_vec_le(cs, value: int | None) -> list[Boolean]:
    return [Is(b) for b in field_into_allocated_bits_le(cs, value)]
