"""A constraint system that checks each constraint as it is enforced and keeps none of them.

bellpepper's TestConstraintSystem keeps every constraint to check them at the end: for a 2 KiB
PoRep partition (2.7M constraints) that is ~5 GB of Python objects. Every gadget allocates a
variable before it constrains it, so a constraint can be checked the moment it is enforced; this CS
does that, keeps only the values, and stops synthesis at the first unsatisfied constraint with
its path (bellpepper's names, as ``TestConstraintSystem`` gives them). Synthesis needs a witness.
"""

from __future__ import annotations

from ...field import R_MOD
from .cs import ConstraintSystem, LinearCombination


class UnsatisfiedConstraint(ValueError):
    """The first constraint whose a * b != c; ``path`` names it."""

    def __init__(self, path: str):
        super().__init__(f"constraint {path!r} is not satisfied")
        self.path = path


class _Scope:
    __slots__ = ("cs", "name")

    def __init__(self, cs: CheckingConstraintSystem, name: str):
        self.cs, self.name = cs, name

    def __enter__(self):
        self.cs.prefixes.append(f"{self.cs.prefixes[-1]}{self.name}/")

    def __exit__(self, *exc):
        self.cs.prefixes.pop()
        return False


class CheckingConstraintSystem(ConstraintSystem):
    """Allocates like ``ConstraintSystem`` and checks each constraint on ``enforce`` (none is kept)."""

    def __init__(self):
        super().__init__()
        self.prefixes = [""]
        self.checked = 0

    @property
    def num_constraints(self) -> int:
        return self.checked

    def namespace(self, name: str):
        return _Scope(self, name)

    def enforce(self, name: str, a: LinearCombination, b: LinearCombination, c: LinearCombination) -> None:
        """Raise UnsatisfiedConstraint (with the path) unless a * b == c for the values so far."""
        ins, aux = self.inputs, self.aux
        if a.evaluate(ins, aux) * b.evaluate(ins, aux) % R_MOD != c.evaluate(ins, aux):
            raise UnsatisfiedConstraint(self.prefixes[-1] + name)
        self.checked += 1

    def finish(self):
        raise TypeError("a CheckingConstraintSystem keeps no constraints to finish; record with ConstraintSystem")
