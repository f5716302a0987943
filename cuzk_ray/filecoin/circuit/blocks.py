"""Where each challenge of a StackedDRG partition lives among the circuit's variables and rows.

``synthesize_stacked`` is a global prefix (replica_id and its bits, comm_d, comm_r, comm_r_last,
comm_c, the comm_r check) followed by one ``synthesize_challenge`` per challenge, each from an
identical blank proof. So challenge j allocates the same number of inputs and aux and enforces the
same number of constraints as every other: its inputs are ``prefix_inputs + j * block_inputs ...``,
its aux ``prefix_aux + j * block_aux ...`` and its rows ``prefix_constraints + j *
block_constraints ...``. The input constraints (``input_i * 0 = 0``) follow the last challenge.

Indices here are bellpepper's: input i (ONE is input 0) and aux j in their own spaces; the matrix
column of aux j is ``num_inputs + j`` (cs.column). The counts come from blank syntheses of 0 and 1
challenge on a constraint system that keeps nothing (``CountingCS``).
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from ..registry import PoRepConfig
from .cs import ConstraintSystem
from .stacked import TreeShape, blank_stacked_circuit, synthesize_stacked, tree_shape


@dataclass(frozen=True)
class BlockLayout:
    """A partition as a prefix and ``challenges`` equal blocks (counts in bellpepper's index spaces)."""

    prefix_inputs: int  # before challenge_0, ONE included
    prefix_aux: int
    prefix_constraints: int
    block_inputs: int  # one challenge
    block_aux: int
    block_constraints: int
    challenges: int

    @property
    def num_inputs(self) -> int:
        return self.prefix_inputs + self.challenges * self.block_inputs

    @property
    def num_aux(self) -> int:
        return self.prefix_aux + self.challenges * self.block_aux

    @property
    def num_circuit_constraints(self) -> int:
        """The circuit's constraints, without the input constraints bellperson appends."""
        return self.prefix_constraints + self.challenges * self.block_constraints

    @property
    def num_constraints(self) -> int:
        """All rows of the matrices: the circuit's, then one input constraint per input."""
        return self.num_circuit_constraints + self.num_inputs

    def _check(self, j: int) -> None:
        if not 0 <= j < self.challenges:
            raise ValueError(f"challenge {j}: the partition has challenges 0..{self.challenges - 1}")

    def input_range(self, j: int) -> range:
        """The input indices challenge ``j`` allocates (its columns too: inputs come first)."""
        self._check(j)
        start = self.prefix_inputs + j * self.block_inputs
        return range(start, start + self.block_inputs)

    def aux_range(self, j: int) -> range:
        """The aux indices challenge ``j`` allocates (column = ``num_inputs`` + aux index)."""
        self._check(j)
        start = self.prefix_aux + j * self.block_aux
        return range(start, start + self.block_aux)

    def constraint_range(self, j: int) -> range:
        """The rows challenge ``j`` enforces."""
        self._check(j)
        start = self.prefix_constraints + j * self.block_constraints
        return range(start, start + self.block_constraints)

    def with_challenges(self, challenges: int) -> BlockLayout:
        """The same prefix and block, ``challenges`` times."""
        return BlockLayout(self.prefix_inputs, self.prefix_aux, self.prefix_constraints, self.block_inputs,
                           self.block_aux, self.block_constraints, challenges)


class CountingCS(ConstraintSystem):
    """Allocates like the recording CS and counts constraints without keeping them."""

    def __init__(self):
        super().__init__()
        self.constraint_count = 0

    @property
    def num_constraints(self) -> int:
        return self.constraint_count

    def enforce(self, name, a, b, c) -> None:
        self.constraint_count += 1


@contextmanager
def no_gc() -> Iterator[None]:
    """Synthesis makes millions of small objects that are never cyclic garbage: the collector would
    rescan them all again and again (most of the time at 32 GiB), so it is paused meanwhile."""
    was_enabled = gc.isenabled()
    gc.disable()
    gc.freeze()  # what exists before synthesis is not rescanned either
    try:
        yield
    finally:
        gc.unfreeze()
        if was_enabled:
            gc.enable()


def counts_of(shape: TreeShape, layers: int, challenges: int) -> tuple[int, int, int]:
    """(inputs, aux, constraints) of the blank partition with ``challenges`` challenges."""
    cs = CountingCS()
    with no_gc():
        synthesize_stacked(cs, blank_stacked_circuit(shape, layers, challenges))
    return cs.num_inputs, cs.num_aux, cs.num_constraints


def layout_from_counts(prefix: tuple[int, int, int], one: tuple[int, int, int], challenges: int) -> BlockLayout:
    """The layout from the (inputs, aux, constraints) of the 0- and 1-challenge syntheses."""
    block = tuple(b - a for a, b in zip(prefix, one))
    return BlockLayout(*prefix, *block, challenges)


@functools.lru_cache(maxsize=16)
def block_layout(shape: TreeShape, layers: int, challenges: int) -> BlockLayout:
    """The layout of a blank partition with trees of ``shape``, ``layers`` layers and ``challenges``
    challenges, counted from blank syntheses of 0 and 1 challenge (at 32 GiB about a minute)."""
    if challenges < 1:
        raise ValueError(f"challenges: need at least 1, have {challenges}")
    return layout_from_counts(counts_of(shape, layers, 0), counts_of(shape, layers, 1), challenges)


def partition_layout(config: PoRepConfig) -> BlockLayout:
    """The layout of one partition of a registered proof's circuit."""
    return block_layout(tree_shape(config), config.shape.layers, config.challenges_per_partition)
