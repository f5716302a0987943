"""Rank-1 constraint systems as CSR matrices over Fr.

A constraint system has ``n_constraints`` rows and ``n_wires`` columns; wire 0 is the constant 1,
wires 1..n_public the public inputs (circom order: outputs, then public inputs), the rest private.
Constraint j holds when (A w)_j * (B w)_j == (C w)_j. ``C`` may be None (snarkjs zkeys do not
store it): then c is taken as a * b, which only a satisfying witness makes a valid proof.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .field import FR_LIMBS, FR_MOD_LIMBS, R_MOD, fr_vector, limbs_to_ints, modulus_limbs


class UnsatisfiedConstraint(ValueError):
    """The witness does not satisfy a constraint; the message names the first one that fails."""


class _SparseRows:
    """What both matrix forms share: rows from ``indptr``, entries' columns from ``indices`` and
    their coefficients from ``coefficients()``."""

    @property
    def n_rows(self) -> int:
        return len(self.indptr) - 1

    def matvec(self, w: np.ndarray, coeffs: np.ndarray | None = None, modulus: int = R_MOD) -> np.ndarray:
        """M . w over Fr (``modulus``: its r, BLS12-381's unless given) for an int vector w; returns
        an int vector of n_rows."""
        coeffs = self.coefficients() if coeffs is None else coeffs
        out = np.zeros(self.n_rows, dtype=object)
        if self.nnz == 0:
            return out
        prods = w[self.indices] * coeffs
        nonempty = np.flatnonzero(np.diff(self.indptr))
        sums = np.add.reduceat(prods, self.indptr[nonempty])
        out[nonempty] = sums % modulus
        return out

    def row(self, j: int) -> list[tuple[int, int]]:
        """(wire, coefficient) pairs of row j; coefficients above r/2 shown as negatives."""
        lo, hi = int(self.indptr[j]), int(self.indptr[j + 1])
        coeffs = [c - R_MOD if c > R_MOD // 2 else c for c in limbs_to_ints(self.data[lo:hi]).tolist()]
        return list(zip(self.indices[lo:hi].tolist(), coeffs))


@dataclass(frozen=True)
class CsrMatrix(_SparseRows):
    """Sparse matrix over Fr. ``data`` holds standard-form coefficients as ``uint64[nnz, 4]``
    (40 bytes per non-zero with the column; ``CodedCsr`` is the 8-byte form for large circuits)."""

    indptr: np.ndarray  # int64[rows + 1]
    indices: np.ndarray  # int64[nnz], column (wire) of each entry
    data: np.ndarray  # uint64[nnz, 4], standard form
    n_cols: int

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


@dataclass(frozen=True)
class CodedCsr(_SparseRows):
    """A sparse matrix over Fr in the layout the GPU kernel reads (kernels/spmv.cu) and the key
    bundle stores: 8 bytes per non-zero instead of CsrMatrix's 40 (at 2^27, PoRep's 722 M
    non-zeros: 5.4 GiB instead of 27 GiB).

      indptr   int64[rows + 1]
      entries  uint32[nnz, 2]   (column, coefficient code)
      table    uint64[k, 4]     standard-form coefficient of each code; table[0] = 1 and
                                table[1] = r - 1 (the kernel adds or subtracts those codes)
    """

    indptr: np.ndarray
    entries: np.ndarray
    table: np.ndarray
    n_cols: int

    @property
    def nnz(self) -> int:
        return int(self.entries.shape[0])

    @property
    def indices(self) -> np.ndarray:
        """Column of each entry (a uint32 view of ``entries``)."""
        return self.entries[:, 0]

    @property
    def codes(self) -> np.ndarray:
        return self.entries[:, 1]

    @property
    def data(self) -> np.ndarray:
        """Coefficients as ``uint64[nnz, 4]`` (materialized: 32 bytes per non-zero; small sizes only)."""
        return self.table[self.codes]

    @property
    def nbytes(self) -> int:
        return int(self.indptr.nbytes + self.entries.nbytes + self.table.nbytes)

    def coefficients(self) -> np.ndarray:
        """Coefficients as an int vector (the table converted once, then indexed)."""
        return limbs_to_ints(self.table)[self.codes]

    @classmethod
    def from_csr(cls, m: CsrMatrix | CodedCsr) -> CodedCsr:
        """m in the coded layout (small coefficients share a code; see coefficient_codes)."""
        if isinstance(m, CodedCsr):
            return m
        if m.nnz >= 2**32 - 2 or m.n_cols >= 2**32:
            raise ValueError(f"CodedCsr: {m.nnz} non-zeros over {m.n_cols} columns; the layout indexes with 32 bits")
        codes, table = coefficient_codes(np.ascontiguousarray(m.data).reshape(-1, FR_LIMBS))
        entries = np.empty((m.nnz, 2), dtype=np.uint32)
        entries[:, 0] = m.indices
        entries[:, 1] = codes
        return cls(np.asarray(m.indptr, dtype=np.int64), entries, table, m.n_cols)

    def to_csr(self) -> CsrMatrix:
        return CsrMatrix(self.indptr, self.indices.astype(np.int64), np.ascontiguousarray(self.data), self.n_cols)


CODE_ONE, CODE_MINUS_ONE = 0, 1
SMALL = 1 << 32  # coefficients of magnitude below this are deduplicated (PoRep packs with 2^0..2^31)
_MOD_LIMBS = [np.uint64(limb) for limb in FR_MOD_LIMBS]


def coefficient_codes(data, xp=np, modulus: int = R_MOD):
    """(codes uint32[nnz], table uint64[k, 4] standard form) for standard-form coefficients
    ``uint64[nnz, 4]`` (numpy or cupy, ``xp``): table[codes[e]] == data[e]; table[0] = 1,
    table[1] = r - 1. Coefficients in (-2^32, 2^32) share one row per distinct value; the rest get
    a row each. ``modulus``: the circuit's r (ConstraintSystem.modulus; BLS12-381's unless given):
    what -1 and the other small negatives are (r - 1 of BLS12-381 is no BN254 value)."""
    rl = _MOD_LIMBS if modulus == R_MOD else [np.uint64(limb) for limb in modulus_limbs(modulus, FR_LIMBS)]
    data = data.reshape(-1, FR_LIMBS)
    nnz = data.shape[0]
    d0 = data[:, 0]
    pos = ((data[:, 1] | data[:, 2] | data[:, 3]) == 0) & (d0 < np.uint64(SMALL))
    neg = ((data[:, 1] == rl[1]) & (data[:, 2] == rl[2]) & (data[:, 3] == rl[3])
           & (d0 < rl[0]) & (d0 >= rl[0] - np.uint64(SMALL)))
    small = pos | neg
    # (array-on-the-left and array-array operations only: the same code runs on numpy and cupy)
    mag = xp.where(pos, d0, xp.asarray(rl[0]) - d0).astype(xp.int64)  # garbage where not small (masked below)
    signed = xp.where(pos, mag, -mag)
    i_small = xp.flatnonzero(small)
    i_gen = xp.flatnonzero(~small)
    sv = signed[i_small]
    if sv.shape[0]:
        uniq, inv = xp.unique(sv, return_inverse=True)
        inv = inv.reshape(-1)
    else:  # no small coefficient (or an empty matrix)
        uniq, inv = sv, xp.zeros(0, dtype=xp.int64)
    codes = xp.empty(nnz, dtype=xp.uint32)
    small_codes = (inv + 2).astype(xp.uint32)
    small_codes[sv == 1] = CODE_ONE
    small_codes[sv == -1] = CODE_MINUS_ONE
    codes[i_small] = small_codes
    base = 2 + int(uniq.shape[0])
    codes[i_gen] = (xp.arange(int(i_gen.shape[0]), dtype=xp.int64) + base).astype(xp.uint32)
    # small value s as limbs: s >= 0 -> [s, 0, 0, 0]; s < 0 -> r + s = [r0 + s, r1, r2, r3] (|s| < r0)
    negative = (uniq < 0).astype(xp.uint64)
    small_rows = xp.empty((int(uniq.shape[0]), FR_LIMBS), dtype=xp.uint64)
    small_rows[:, 0] = uniq.astype(xp.uint64) + negative * rl[0]  # wraps mod 2^64 to r0 + s
    for limb in range(1, FR_LIMBS):
        small_rows[:, limb] = negative * rl[limb]
    pm1 = xp.asarray(np.array([[1, 0, 0, 0], [int(rl[0]) - 1, rl[1], rl[2], rl[3]]], dtype=np.uint64))
    table = xp.concatenate([pm1, small_rows, data[i_gen]])
    return codes, xp.ascontiguousarray(table)


Matrix = CsrMatrix | CodedCsr


@dataclass(frozen=True)
class ConstraintSystem:
    n_wires: int
    n_public: int
    A: Matrix
    B: Matrix
    C: Matrix | None
    name: str = "r1cs"
    modulus: int = R_MOD  # the scalar field r of the circuit's curve (cuzk_ray.curves; BLS12-381's by default)

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
        r = self.modulus
        a, b = self.A.matvec(w, modulus=r), self.B.matvec(w, modulus=r)
        c = (a * b) % r if self.C is None else self.C.matvec(w, modulus=r)
        return a, b, c

    def check(self, witness) -> None:
        """Raise UnsatisfiedConstraint naming the first failing constraint, or return None."""
        if self.C is None:
            raise ValueError(f"{self.name}: C is not stored, satisfaction cannot be checked from the matrices")
        w = self._witness_vector(witness)
        if int(w[0]) != 1:
            raise UnsatisfiedConstraint(f"{self.name}: witness[0] must be 1, found {w[0]}")
        a, b, c = self.evaluate(w)
        bad = np.flatnonzero((a * b - c) % self.modulus != 0)
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
