"""MultiEq, as bellperson's ``gadgets/multieq.rs``: many small equalities packed into one constraint.

Each ``enforce_equal(num_bits, lhs, rhs)`` adds ``2^bits_used * lhs`` and ``2^bits_used * rhs`` to
two running sums; before an equality would reach Fr's CAPACITY (254 bits) the sums are emitted as one
constraint ``lhs * ONE = rhs`` named ``multieq k``. Rust also emits the pending sums when the MultiEq
is dropped; here that is ``close()``, which ``with MultiEq(cs) as cs:`` calls on leaving the block.
Where the flushes fall decides the row order, so both points are modelled exactly.

A MultiEq stands in for the constraint system it wraps: allocations, constraints and namespaces go
straight through, so gadgets (and ``UInt32.addmany``) take it as their ``cs``.
"""

from __future__ import annotations

from ...field import R_MOD
from .cs import ONE, LinearCombination

CAPACITY = R_MOD.bit_length() - 1  # Fr::CAPACITY = 254


class MultiEq:
    """Batches equalities for ``cs``; use as a context manager (or call ``close``) to flush the rest."""

    def __init__(self, cs):
        self.cs = cs
        self.tape = cs.tape  # the wrapped CS's witness tape (or None), read by every gadget's allocation
        self.ops = 0
        self.bits_used = 0
        self.lhs = LinearCombination()
        self.rhs = LinearCombination()

    def _accumulate(self) -> None:
        self.cs.enforce(f"multieq {self.ops}", self.lhs, LinearCombination().add(ONE), self.rhs)
        self.lhs = LinearCombination()
        self.rhs = LinearCombination()
        self.bits_used = 0
        self.ops += 1

    def enforce_equal(self, num_bits: int, lhs: LinearCombination, rhs: LinearCombination) -> None:
        """Queue lhs = rhs, both below 2^num_bits; flush first if the batch would reach CAPACITY bits."""
        if CAPACITY <= self.bits_used + num_bits:
            self._accumulate()
        if CAPACITY <= self.bits_used + num_bits:
            raise ValueError(f"an equality of {num_bits} bits does not fit in one constraint ({CAPACITY} bits)")
        coeff = pow(2, self.bits_used, R_MOD)
        self.lhs.add_lc(lhs, coeff)
        self.rhs.add_lc(rhs, coeff)
        self.bits_used += num_bits

    def close(self) -> None:
        """Rust's Drop: emit what is pending (nothing if the batch is empty)."""
        if self.bits_used > 0:
            self._accumulate()

    def __enter__(self) -> MultiEq:
        return self

    def __exit__(self, *exc) -> bool:
        self.close()
        return False

    def alloc(self, value, name: str = "") -> int:
        return self.cs.alloc(value, name)

    def alloc_input(self, value, name: str = "") -> int:
        return self.cs.alloc_input(value, name)

    def enforce(self, name: str, a: LinearCombination, b: LinearCombination, c: LinearCombination) -> None:
        self.cs.enforce(name, a, b, c)

    def namespace(self, name: str):
        return self.cs.namespace(name)
