"""Insert a number into a list at a position given by bits, as rust-fil-proofs'
``storage-proofs-core/src/gadgets/insertion.rs`` (a Merkle path level puts the current node back
among its siblings this way).

Every output position is one ``pick`` (or a short chain of them): ``insert_2`` costs 2 constraints,
``insert_4`` 8 (hand-optimized; the general form would cost 12), ``insert_8`` 22 (2 for ``b0 nor b1``
and ``b0 and b1``, then 20 picks; the general form would cost 56); other sizes use the general
``select`` per position, size * (size - 1) constraints.
"""

from __future__ import annotations

from . import boolean
from .boolean import Boolean, Is
from .cs import LinearCombination
from .num import AllocatedNum


def pick(cs, condition: Boolean, a: AllocatedNum, b: AllocatedNum) -> AllocatedNum:
    """``a`` if condition else ``b``: a new number c with (b - a) * condition = b - c."""
    cond = boolean.value_of(condition)
    value = None if cond is None else (a.value if cond else b.value)
    with cs.namespace("pick result"):
        c = AllocatedNum.alloc(cs, value)
        if cs.tape is not None:
            cs.tape.select(c.variable, condition, a.variable, b.variable)
    cs.enforce("pick", LinearCombination().add(b.variable).sub(a.variable), boolean.lc_of(condition),
               LinearCombination().add(b.variable).sub(c.variable))
    return c


def _pick_named(cs, name: str, condition: Boolean, a: AllocatedNum, b: AllocatedNum) -> AllocatedNum:
    """The Rust ``witness!`` macro: a pick in a namespace named after its result."""
    with cs.namespace(name):
        return pick(cs, condition, a, b)


def select(cs, choices: list[AllocatedNum], path_bits: list[Boolean]) -> AllocatedNum:
    """``choices[n]`` with n read from ``path_bits`` (least significant first): a binary tree of
    picks, most significant bit first (len(choices) - 1 constraints)."""
    if 1 << len(path_bits) != len(choices):
        raise ValueError(f"select: {len(path_bits)} bits cannot index {len(choices)} choices")
    state, half = list(choices), len(choices) // 2
    for i, bit in enumerate(reversed(path_bits)):
        state = [_pick_named(cs, f"pick {i}, {j}", bit, state[half + j], state[j]) for j in range(half)]
        half //= 2
    return state[0]


def insert(cs, element: AllocatedNum, bits: list[Boolean], elements: list[AllocatedNum]) -> list[AllocatedNum]:
    """``elements`` with ``element`` inserted at position n (``bits``, least significant first);
    len(elements) + 1 must be 2^len(bits)."""
    size = len(elements) + 1
    if 1 << len(bits) != size:
        raise ValueError(f"insert: {len(bits)} bits cannot place an element among {len(elements)}")
    special = {2: insert_2, 4: insert_4, 8: insert_8}.get(size)
    if special is not None:
        return special(cs, element, bits, elements)
    results = [[*elements[:index], element, *elements[index:]] for index in range(size)]
    out = []
    for pos in range(size):
        with cs.namespace(f"choice at {pos}"):
            out.append(select(cs, [results[index][pos] for index in range(size)], bits))
    return out


def insert_2(cs, element: AllocatedNum, bits: list[Boolean], elements: list[AllocatedNum]) -> list[AllocatedNum]:
    """Two picks: [x, e0] for bit 0, [e0, x] for bit 1."""
    (b0,), (e0,) = bits, elements
    return [_pick_named(cs, "binary insert 0", b0, e0, element),
            _pick_named(cs, "binary insert 1", b0, element, e0)]


def insert_4(cs, element: AllocatedNum, bits: list[Boolean], elements: list[AllocatedNum]) -> list[AllocatedNum]:
    """Eight picks; ``p2_x1`` is output position 2 when b0 is unknown and b1 is 1."""
    (b0, b1), (a, (b, c, d)) = bits, (element, elements)
    p0_x0 = _pick_named(cs, "p0_x0", b0, b, a)
    p0 = _pick_named(cs, "p0", b1, b, p0_x0)
    p1_x0 = _pick_named(cs, "p1_x0", b0, a, b)
    p1 = _pick_named(cs, "p1", b1, c, p1_x0)
    p2_x1 = _pick_named(cs, "p2_x1", b0, d, a)
    p2 = _pick_named(cs, "p2", b1, p2_x1, c)
    p3_x1 = _pick_named(cs, "p3_x1", b0, a, d)
    p3 = _pick_named(cs, "p3", b1, p3_x1, d)
    return [p0, p1, p2, p3]


def insert_8(cs, element: AllocatedNum, bits: list[Boolean], elements: list[AllocatedNum]) -> list[AllocatedNum]:
    """``b0 nor b1`` and ``b0 and b1`` (the bits must be allocated and not negated), then 20 picks."""
    b0, b1, b2 = bits
    if not (isinstance(b0, Is) and isinstance(b1, Is)):
        raise TypeError("insert_8: bits must be allocated and unnegated")
    a, (b, c, d, e, f, g, h) = element, elements
    with cs.namespace("b0 nor b1"):
        nor = Is(boolean.bit_nor(cs, b0.bit, b1.bit))
    with cs.namespace("b0 and b1"):
        both = Is(boolean.bit_and(cs, b0.bit, b1.bit))
    p = _pick_named
    p0 = p(cs, "p0", b2, b, p(cs, "p0_xx0", nor, a, b))
    p1_xx0 = p(cs, "p1_xx0", b1, c, p(cs, "p1_x00", b0, a, b))
    p1 = p(cs, "p1", b2, c, p1_xx0)
    p2_xx0 = p(cs, "p2_xx0", b1, p(cs, "p2_x10", b0, d, a), c)
    p2 = p(cs, "p2", b2, d, p2_xx0)
    p3 = p(cs, "p3", b2, e, p(cs, "p3_xx0", both, a, d))
    p4 = p(cs, "p4", b2, p(cs, "p4_xx1", nor, a, f), e)
    p5_xx1 = p(cs, "p5_xx1", b1, g, p(cs, "p5_x01", b0, a, f))
    p5 = p(cs, "p5", b2, p5_xx1, f)
    p6_xx1 = p(cs, "p6_xx1", b1, p(cs, "p6_x11", b0, h, a), g)
    p6 = p(cs, "p6", b2, p6_xx1, g)
    p7 = p(cs, "p7", b2, p(cs, "p7_xx1", both, a, h), h)
    return [p0, p1, p2, p3, p4, p5, p6, p7]
