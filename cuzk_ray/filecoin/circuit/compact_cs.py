"""A recording constraint system that keeps each row in compact arrays as it is enforced.

``cs.ConstraintSystem`` keeps every ``LinearCombination`` until ``finish``: about 2 KB of Python
objects per constraint, so 5 GB at 2 KiB and far past a 24 GiB host at 32 GiB (130 M rows). This
one turns each side of a constraint into flat ``array`` buffers the moment it is enforced and
drops the combination:

* per row, the number of live terms (a coefficient that cancelled to 0 is not an entry, as in
  ``record``);
* per term, its variable as a sort key (input i -> i, aux j -> ``AUX_KEY + j``: inputs first, then
  aux, as a recorded row orders them) and the id of its coefficient in a per-matrix dictionary of
  distinct values (a 32 GiB block has ~40 M terms over a few thousand distinct coefficients).

``rows()`` returns the rows as numpy (``CompactRows``), each row's terms sorted by variable.
Allocation stays the base class's (the gadgets read nothing else of it).
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass

import numpy as np

from .cs import ConstraintSystem, LinearCombination

AUX_KEY = 1 << 40  # sort key of aux 0; inputs sort below it by index


@dataclass(frozen=True)
class CompactRows:
    """One matrix's rows: ``lengths[r]`` terms per row, then per term (row-major, each row's
    terms by variable) its ``keys`` and coefficient id into ``values`` (ints, reduced mod r)."""

    lengths: np.ndarray  # int64[rows]
    keys: np.ndarray  # int64[terms]: input i -> i, aux j -> AUX_KEY + j
    ids: np.ndarray  # int32[terms]: index into values
    values: tuple[int, ...]

    @property
    def offsets(self) -> np.ndarray:
        """int64[rows + 1]: row r's terms are ``[offsets[r], offsets[r + 1])``."""
        out = np.zeros(len(self.lengths) + 1, dtype=np.int64)
        np.cumsum(self.lengths, out=out[1:])
        return out

    def span(self, start: int, stop: int) -> CompactRows:
        """Rows ``start..stop`` (the same coefficient dictionary)."""
        off = self.offsets
        lo, hi = int(off[start]), int(off[stop])
        return CompactRows(self.lengths[start:stop], self.keys[lo:hi], self.ids[lo:hi], self.values)


class _MatrixBuffer:
    """Growing buffers of one matrix (A, B or C)."""

    __slots__ = ("lengths", "keys", "ids", "index")

    def __init__(self):
        self.lengths, self.keys, self.ids = array("q"), array("q"), array("q")
        self.index: dict[int, int] = {}

    def append(self, lc: LinearCombination) -> None:
        index, keys, ids = self.index, self.keys, self.ids
        n = 0
        for var, coeff in lc.terms.items():
            if coeff:
                uid = index.get(coeff)
                if uid is None:
                    uid = index[coeff] = len(index)
                keys.append(var + AUX_KEY if var >= 0 else -1 - var)
                ids.append(uid)
                n += 1
        self.lengths.append(n)

    def rows(self) -> CompactRows:
        lengths = np.frombuffer(self.lengths, dtype=np.int64).copy()
        keys = np.frombuffer(self.keys, dtype=np.int64)
        ids = np.frombuffer(self.ids, dtype=np.int64)
        row_of = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
        order = np.lexsort((keys, row_of))  # by row, then by variable within the row
        values = tuple(sorted(self.index, key=self.index.__getitem__))
        return CompactRows(lengths, keys[order], ids[order].astype(np.int32), values)


class CompactCS(ConstraintSystem):
    """Records like ``cs.ConstraintSystem`` but keeps rows as compact arrays (see the module doc)."""

    def __init__(self):
        super().__init__()
        self._buffers = (_MatrixBuffer(), _MatrixBuffer(), _MatrixBuffer())
        self._count = 0

    @property
    def num_constraints(self) -> int:
        return self._count

    def enforce(self, name: str, a: LinearCombination, b: LinearCombination, c: LinearCombination) -> None:
        self._count += 1
        for buf, lc in zip(self._buffers, (a, b, c)):
            buf.append(lc)

    def rows(self) -> tuple[CompactRows, CompactRows, CompactRows]:
        """The circuit's rows of A, B and C so far (no input constraints: the assembly adds them)."""
        return tuple(buf.rows() for buf in self._buffers)

    def finish(self):
        raise TypeError("CompactCS keeps no LinearCombinations: read rows() instead of finish()")
