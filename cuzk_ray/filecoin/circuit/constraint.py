"""Small equalities between numbers, as rust-fil-proofs' ``storage-proofs-core/src/gadgets/constraint.rs``:
each is one constraint with ONE in B.
"""

from __future__ import annotations

from ...field import R_MOD
from .cs import ONE, LinearCombination
from .num import AllocatedNum


def _one() -> LinearCombination:
    return LinearCombination().add(ONE)


def equal(cs, name: str, a: AllocatedNum, b: AllocatedNum) -> None:
    """a * ONE = b."""
    cs.enforce(name, LinearCombination().add(a.variable), _one(), LinearCombination().add(b.variable))


def sum_(cs, name: str, a: AllocatedNum, b: AllocatedNum, total: AllocatedNum) -> None:
    """(a + b) * ONE = total (Rust's ``sum``)."""
    cs.enforce(name, LinearCombination().add(a.variable).add(b.variable), _one(),
               LinearCombination().add(total.variable))


def difference(cs, name: str, a: AllocatedNum, b: AllocatedNum, diff: AllocatedNum) -> None:
    """(diff + b) * ONE = a."""
    cs.enforce(name, LinearCombination().add(diff.variable).add(b.variable), _one(),
               LinearCombination().add(a.variable))


def add(cs, a: AllocatedNum, b: AllocatedNum) -> AllocatedNum:
    """A new number a + b (``add_num``) and its ``sum constraint``."""
    v = None if a.value is None or b.value is None else (a.value + b.value) % R_MOD
    with cs.namespace("add_num"):
        res = AllocatedNum.alloc(cs, v)
        if cs.tape is not None:
            cs.tape.linear(res.variable, ((a.variable, 1), (b.variable, 1)))
    sum_(cs, "sum constraint", a, b, res)
    return res


def sub(cs, a: AllocatedNum, b: AllocatedNum) -> AllocatedNum:
    """A new number a - b (``sub_num``) and its ``subtraction constraint``."""
    v = None if a.value is None or b.value is None else (a.value - b.value) % R_MOD
    with cs.namespace("sub_num"):
        res = AllocatedNum.alloc(cs, v)
        if cs.tape is not None:
            cs.tape.linear(res.variable, ((a.variable, 1), (b.variable, -1)))
    difference(cs, "subtraction constraint", a, b, res)
    return res
