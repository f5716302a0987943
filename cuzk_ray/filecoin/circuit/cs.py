"""Constraint systems with bellpepper's semantics: the slow, exact reference every fast path is checked against.

Variables. Inputs and aux variables have separate index spaces, each counted in allocation order
(bellpepper's ``Index::Input(i)`` / ``Index::Aux(j)``); ``alloc_input`` calls may interleave with
constraints. A variable is one int here: aux j is ``j``, input i is ``-1 - i``; ONE is input 0, so
``ONE == -1``. The column of aux j in the matrices is ``num_inputs + j``, known only once synthesis ends.

Linear combinations merge repeated variables (coefficients add, mod r), as bellpepper's ``Indexer``
does. A term that cancels stays in the combination with coefficient 0; it is dropped when a row is
recorded (cuzk's ``recording_cs.rs``), so it neither enters the matrices nor counts for density.

Two modes: ``ConstraintSystem`` records the constraints and the witness (counts now, CSR later);
``TestConstraintSystem`` also keeps bellpepper's path names and checks every constraint, like
bellpepper's ``TestConstraintSystem`` (``is_satisfied``, ``which_is_unsatisfied``, ``get``/``set``).
``finish`` appends the input constraints ``input_i * 0 = 0`` after the circuit's, as bellperson's
generator and prover do (``groth16/generator.rs:208-218``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ...field import R_MOD

ONE = -1  # input 0, allocated by every constraint system before synthesis

Row = tuple[tuple[int, int], ...]  # (variable, non-zero coefficient), inputs first, each side by index


def input_variable(index: int) -> int:
    """The variable of input ``index`` (ONE is input 0)."""
    return -1 - index


def is_input(variable: int) -> bool:
    return variable < 0


def column(variable: int, num_inputs: int) -> int:
    """The matrix column of a variable: inputs first, then aux in allocation order."""
    return -1 - variable if variable < 0 else num_inputs + variable


def _order(term: tuple[int, int]) -> tuple[bool, int]:
    v = term[0]
    return (v >= 0, v if v >= 0 else -1 - v)


class LinearCombination:
    """A sum of coefficient * variable with bellpepper's merging; every method returns ``self``."""

    __slots__ = ("terms",)

    def __init__(self, terms: Iterable[tuple[int, int]] = ()):
        self.terms: dict[int, int] = {}
        for var, coeff in terms:
            self.add(var, coeff)

    def add(self, var: int, coeff: int = 1) -> LinearCombination:
        t = self.terms
        t[var] = (t.get(var, 0) + coeff) % R_MOD
        return self

    def sub(self, var: int, coeff: int = 1) -> LinearCombination:
        return self.add(var, -coeff)

    def add_lc(self, other: LinearCombination, coeff: int = 1) -> LinearCombination:
        """``self + coeff * other``, term by term (bellpepper's ``lc + (coeff, &other)``)."""
        for var, c in other.terms.items():
            self.add(var, c * coeff)
        return self

    def copy(self) -> LinearCombination:
        lc = LinearCombination()
        lc.terms = dict(self.terms)
        return lc

    def row(self) -> Row:
        """The recorded form: terms with a non-zero coefficient, inputs then aux, each by index."""
        return tuple(sorted(((v, c) for v, c in self.terms.items() if c), key=_order))

    def evaluate(self, inputs: list, aux: list) -> int:
        acc = 0
        for var, coeff in self.terms.items():
            acc += coeff * (inputs[-1 - var] if var < 0 else aux[var])
        return acc % R_MOD


class _NoNamespace:
    """The recording CS ignores names: one shared do-nothing context."""

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


_NO_NAMESPACE = _NoNamespace()


@dataclass(frozen=True)
class R1cs:
    """A finished synthesis: rows of A, B, C per constraint (input constraints last) and the witness."""

    num_inputs: int
    num_aux: int
    a: tuple[Row, ...]
    b: tuple[Row, ...]
    c: tuple[Row, ...]
    inputs: tuple  # Fr ints (None where synthesized without a witness); inputs[0] == 1
    aux: tuple

    @property
    def num_constraints(self) -> int:
        return len(self.a)


class ConstraintSystem:
    """Records allocations and constraints in bellpepper's order; the circuit is then read with ``finish``."""

    # a witness tape (circuit/tape.py) that the gadgets tell how each variable's value is computed;
    # None (the usual case) costs each allocation site one attribute check
    tape = None

    def __init__(self):
        self.inputs: list = [1]  # ONE
        self.aux: list = []
        self.constraints: list[tuple[LinearCombination, LinearCombination, LinearCombination]] = []
        self._finished = False

    @property
    def num_inputs(self) -> int:
        return len(self.inputs)

    @property
    def num_aux(self) -> int:
        return len(self.aux)

    @property
    def num_constraints(self) -> int:
        return len(self.constraints)

    def alloc(self, value: int | None, name: str = "") -> int:
        """A new aux variable holding ``value`` (an Fr int, or None when only the shape is wanted)."""
        self.aux.append(value)
        return len(self.aux) - 1

    def alloc_input(self, value: int | None, name: str = "") -> int:
        """A new public input holding ``value``."""
        self.inputs.append(value)
        return -len(self.inputs)

    def enforce(self, name: str, a: LinearCombination, b: LinearCombination, c: LinearCombination) -> None:
        """Add the constraint a * b = c; the combinations are kept as they are (pass fresh ones)."""
        self.constraints.append((a, b, c))

    def namespace(self, name: str):
        """A context for a gadget's names; names change nothing in the R1CS."""
        return _NO_NAMESPACE

    def finish(self) -> R1cs:
        """Append ``input_i * 0 = 0`` for every input (generator.rs) and return the recorded circuit."""
        if self._finished:
            raise RuntimeError("constraint system already finished: the input constraints are in")
        self._finished = True
        rows = [(a.row(), b.row(), c.row()) for a, b, c in self.constraints]
        rows += [(((input_variable(i), 1),), (), ()) for i in range(self.num_inputs)]
        a, b, c = (tuple(r) for r in zip(*rows)) if rows else ((), (), ())
        return R1cs(self.num_inputs, self.num_aux, a, b, c, tuple(self.inputs), tuple(self.aux))


class _Namespace:
    __slots__ = ("cs", "name")

    def __init__(self, cs: TestConstraintSystem, name: str):
        self.cs, self.name = cs, name

    def __enter__(self):
        cs = self.cs
        cs._stack.append(cs._prefix)
        cs._prefix = f"{cs._prefix}{self.name}/"

    def __exit__(self, *exc):
        self.cs._prefix = self.cs._stack.pop()
        return False


class TestConstraintSystem(ConstraintSystem):
    """A recording CS that also names everything by path and checks the witness (bellpepper's test CS)."""

    __test__ = False  # not a pytest class

    def __init__(self):
        super().__init__()
        self._prefix = ""
        self._stack: list[str] = []
        self._aux_paths: dict[str, int] = {}
        self._constraint_paths: list[str] = []
        self._seen: set[str] = set()

    def _claim(self, name: str) -> str:
        path = self._prefix + name
        if path in self._seen:
            raise ValueError(f"path {path!r} already exists in the constraint system")
        self._seen.add(path)
        return path

    def namespace(self, name: str):
        return _Namespace(self, name)

    def alloc(self, value: int | None, name: str = "") -> int:
        var = super().alloc(value, name)
        self._aux_paths[self._claim(name)] = var
        return var

    def alloc_input(self, value: int | None, name: str = "") -> int:
        self._claim(name)
        return super().alloc_input(value, name)

    def enforce(self, name: str, a: LinearCombination, b: LinearCombination, c: LinearCombination) -> None:
        self._constraint_paths.append(self._claim(name))
        super().enforce(name, a, b, c)

    def which_is_unsatisfied(self) -> str | None:
        """The path of the first constraint whose a * b != c, or None when all hold."""
        ins, aux = self.inputs, self.aux
        for path, (a, b, c) in zip(self._constraint_paths, self.constraints):
            if a.evaluate(ins, aux) * b.evaluate(ins, aux) % R_MOD != c.evaluate(ins, aux):
                return path
        return None

    def is_satisfied(self) -> bool:
        return self.which_is_unsatisfied() is None

    @property
    def constraint_paths(self) -> tuple[str, ...]:
        """Every constraint's path, in order."""
        return tuple(self._constraint_paths)

    def constraint(self, path: str) -> tuple[LinearCombination, LinearCombination, LinearCombination]:
        """The (A, B, C) combinations of the constraint enforced at ``path``."""
        return self.constraints[self._constraint_paths.index(path)]

    def get(self, path: str) -> int:
        """The value of the aux variable allocated at ``path`` (e.g. ``"a/boolean"``)."""
        return self.aux[self._aux_paths[path]]

    def set(self, path: str, value: int) -> None:
        self.aux[self._aux_paths[path]] = value % R_MOD

    def verify(self, expected_inputs: list[int]) -> bool:
        """True when the public inputs after ONE are ``expected_inputs``."""
        return list(self.inputs[1:]) == [v % R_MOD for v in expected_inputs]
