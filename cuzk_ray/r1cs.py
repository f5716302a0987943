"""Rank-1 constraint systems as CSR matrices over Fr.

A constraint system has ``n_constraints`` rows and ``n_wires`` columns; wire 0 is the constant 1,
wires 1..n_public the public inputs (circom order: outputs, then public inputs), the rest private.
Constraint j holds when (A w)_j * (B w)_j == (C w)_j. ``C`` may be None (snarkjs zkeys do not
store it): then c is taken as a * b, which only a satisfying witness makes a valid proof.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .field import FR_LIMBS, R_MOD, fr_vector, limbs_to_ints


class UnsatisfiedConstraint(ValueError):
    """The witness does not satisfy a constraint; the message names the first one that fails."""


@dataclass(frozen=True)
class CsrMatrix:
    """Sparse matrix over Fr. ``data`` holds standard-form coefficients as ``uint64[nnz, 4]``."""

    indptr: np.ndarray  # int64[rows + 1]
    indices: np.ndarray  # int64[nnz], column (wire) of each entry
    data: np.ndarray  # uint64[nnz, 4], standard form
    n_cols: int

    @property
    def n_rows(self) -> int:
        return len(self.indptr) - 1

    @property
    def nnz(self) -> int:
        return len(self.indices)

    @property
    def nbytes(self) -> int:
        return int(self.indptr.nbytes + self.indices.nbytes + self.data.nbytes)

    @classmethod
    def from_coo(cls, rows, cols, data, n_rows: int, n_cols: int) -> CsrMatrix:
        """Build from (row, col, coefficient) triples; coefficients are ints or ``uint64[nnz,4]``."""
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        if not (isinstance(data, np.ndarray) and data.dtype == np.uint64):
            from .field import fr_to_limbs

            data = fr_to_limbs([int(x) % R_MOD for x in data])
        if len(rows) and (rows.min() < 0 or rows.max() >= n_rows or cols.min() < 0 or cols.max() >= n_cols):
            raise ValueError("CsrMatrix.from_coo: an entry lies outside the matrix shape")
        indptr = np.zeros(n_rows + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=n_rows), out=indptr[1:])
        data = data.reshape(-1, FR_LIMBS)
        # row-major, columns ascending within a row: one int64 key (n_rows * n_cols < 2^63)
        key = rows * np.int64(max(1, n_cols)) + cols
        if np.all(key[1:] >= key[:-1]):  # already in order: no sort (the built-in circuit's case)
            return cls(indptr, cols, np.ascontiguousarray(data), n_cols)
        order = np.argsort(key, kind="stable")
        return cls(indptr, cols[order], np.ascontiguousarray(data[order]), n_cols)

    def coefficients(self) -> np.ndarray:
        """Coefficients as an int vector."""
        return limbs_to_ints(self.data)

    def matvec(self, w: np.ndarray, coeffs: np.ndarray | None = None) -> np.ndarray:
        """M . w over Fr for an int vector w; returns an int vector of n_rows."""
        coeffs = self.coefficients() if coeffs is None else coeffs
        out = np.zeros(self.n_rows, dtype=object)
        if self.nnz == 0:
            return out
        prods = w[self.indices] * coeffs
        nonempty = np.flatnonzero(np.diff(self.indptr))
        sums = np.add.reduceat(prods, self.indptr[nonempty])
        out[nonempty] = sums % R_MOD
        return out

    def row(self, j: int) -> list[tuple[int, int]]:
        """(wire, coefficient) pairs of row j; coefficients above r/2 shown as negatives."""
        lo, hi = self.indptr[j], self.indptr[j + 1]
        coeffs = [c - R_MOD if c > R_MOD // 2 else c for c in limbs_to_ints(self.data[lo:hi]).tolist()]
        return list(zip(self.indices[lo:hi].tolist(), coeffs))


@dataclass(frozen=True)
class ConstraintSystem:
    n_wires: int
    n_public: int
    A: CsrMatrix
    B: CsrMatrix
    C: CsrMatrix | None
    name: str = "r1cs"

    @property
    def nbytes(self) -> int:
        """Bytes of the matrices (what a copy in the object store holds)."""
        return sum(m.nbytes for m in (self.A, self.B, self.C) if m is not None)

    @property
    def n_constraints(self) -> int:
        return self.A.n_rows

    def evaluate(self, witness) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(A w, B w, C w) as int vectors of n_constraints; C w = A w * B w when C is absent."""
        w = self._witness_vector(witness)
        a, b = self.A.matvec(w), self.B.matvec(w)
        c = (a * b) % R_MOD if self.C is None else self.C.matvec(w)
        return a, b, c

    def check(self, witness) -> None:
        """Raise UnsatisfiedConstraint naming the first failing constraint, or return None."""
        if self.C is None:
            raise ValueError(f"{self.name}: C is not stored, satisfaction cannot be checked from the matrices")
        w = self._witness_vector(witness)
        if int(w[0]) != 1:
            raise UnsatisfiedConstraint(f"{self.name}: witness[0] must be 1, found {w[0]}")
        a, b, c = self.evaluate(w)
        bad = np.flatnonzero((a * b - c) % R_MOD != 0)
        if len(bad):
            j = int(bad[0])
            raise UnsatisfiedConstraint(
                f"{self.name}: constraint {j} of {self.n_constraints} is not satisfied "
                f"({len(bad)} failing): A.w={a[j]} B.w={b[j]} C.w={c[j]}; "
                f"A row {self.A.row(j)[:4]}, B row {self.B.row(j)[:4]}, C row {self.C.row(j)[:4]}"
            )

    def _witness_vector(self, witness) -> np.ndarray:
        w = fr_vector(witness)
        if len(w) != self.n_wires:
            raise ValueError(f"{self.name}: witness has {len(w)} values, the circuit has {self.n_wires} wires")
        return w
