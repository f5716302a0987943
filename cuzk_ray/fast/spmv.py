"""Compiled (numba) sparse matrix-vector products over Fr for the CPU prover: a, b, c = A w, B w,
C w in standard-form limbs, bit for bit ref/qap.py's ``evaluations`` (cuda/spmv.py is the GPU's).

A matrix is r1cs.py's CsrMatrix (a coefficient per entry) or CodedCsr (a code per entry into a
small table); both reach the kernel as (indptr, columns, codes, table), a CsrMatrix with the
identity codes. Everything stays in standard form: a row sums the Montgomery products
coefficient * w * 2^-256 of its entries, then one product by 2^512 mod r (MONT_R2) brings the
sum back: mont_mul(s, 2^512) = s * 2^256. Cost: one product and one addition per non-zero, one
product per row (at 2^16 over BN254, ~4 non-zeros a row: ~5 ms for A, B and a o b, against
~0.14 s in Python ints). One instance per field (``kernels_for``), compiled once, cached on disk.
"""

from __future__ import annotations

import functools

import numpy as np

from ..domain import domain_size
from ..field import FR_LIMBS
from ..r1cs import CodedCsr, ConstraintSystem, CsrMatrix
from . import fr_kernels
from .limb_arith import field_namespace, instantiate, module_name
from .ntt_kernels import kernels_for as ntt_kernels_for


def row_sums(indptr, cols, codes, table, w, out):
    """out[j] = sum over row j's entries e of table[codes[e]] * w[cols[e]] (standard form)."""
    for j in range(out.shape[0]):
        s = (Z, Z, Z, Z)  # noqa: F821  (the instance's globals: field_namespace)
        for e in range(indptr[j], indptr[j + 1]):
            s = mod_add(*s, *mont_mul(*load_row(table, codes[e]), *load_row(w, cols[e])))  # noqa: F821
        store_row(out, j, mont_mul(*s, *MONT_R2))  # noqa: F821


def hadamard(a, b, out):
    """out[j] = a[j] * b[j] (standard form)."""
    for j in range(out.shape[0]):
        store_row(out, j, mont_mul(*mont_mul(*load_row(a, j), *load_row(b, j)), *MONT_R2))  # noqa: F821


KERNELS = ("row_sums", "hadamard")


@functools.lru_cache(maxsize=4)
def kernels_for(modulus: int):
    """row_sums and hadamard over Z/modulus (4 limbs of 64 bits; BLS12-381's or BN254's r)."""
    ns = field_namespace(modulus, FR_LIMBS)
    templates = [fr_kernels.load_row, fr_kernels.store_row, row_sums, hadamard]
    return instantiate(templates, ns, module_name(__name__ + ".fr", modulus), cached=KERNELS)


def _reduced(x: np.ndarray, modulus: int) -> np.ndarray:
    """A reduced C-contiguous uint64[n, 4] copy (the products need inputs below r)."""
    x = np.array(x, dtype=np.uint64, order="C").reshape(-1, FR_LIMBS)
    ntt_kernels_for(modulus).reduce_in_place(x)
    return x


def matvec_into(m: CsrMatrix | CodedCsr, w: np.ndarray, out: np.ndarray, modulus: int) -> None:
    """out[:] = m . w over Z/modulus; w: reduced standard-form limbs of every column."""
    if isinstance(m, CodedCsr):
        cols, codes, table = m.indices, m.codes, m.table
    else:
        cols, codes, table = m.indices, np.arange(m.nnz, dtype=np.int64), m.data
    kernels_for(modulus).row_sums(np.asarray(m.indptr, dtype=np.int64), cols, codes, _reduced(table, modulus),
                                  w, out)


def transposed_matvec_into(m: CsrMatrix | CodedCsr, x: np.ndarray, out: np.ndarray, modulus: int) -> None:
    """out[:] = m^T . x over Z/modulus (out: a row per column of m; x: reduced standard-form limbs,
    one per row of m): the entries regrouped by column (a stable sort: each column's rows in
    order) and summed by row_sums, as the development setup's u, v, w = A^T lag, ... need."""
    cols = np.asarray(m.indices, dtype=np.int64)
    order = np.argsort(cols, kind="stable")
    codes, table = (m.codes[order], m.table) if isinstance(m, CodedCsr) else (order, m.data)
    rows = np.repeat(np.arange(m.n_rows, dtype=np.int64), np.diff(m.indptr))[order]
    indptr = np.zeros(m.n_cols + 1, dtype=np.int64)
    np.cumsum(np.bincount(cols, minlength=m.n_cols), out=indptr[1:])
    kernels_for(modulus).row_sums(indptr, rows, np.ascontiguousarray(codes), _reduced(table, modulus), x, out)


def evaluations(cs: ConstraintSystem, witness: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ref.qap.evaluations in limbs: a, b, c (uint64[n, 4], n the snarkjs domain) = A w, B w, C w
    padded with zeros, a's rows m .. m + n_public the wires 0 .. n_public; c = a o b when the
    system stores no C (a snarkjs zkey). witness: standard-form ``uint64[n_wires, 4]``."""
    w = _reduced(witness, cs.modulus)
    if len(w) != cs.n_wires:
        raise ValueError(f"{cs.name}: witness has {len(w)} values, the circuit has {cs.n_wires} wires")
    m = cs.n_constraints
    n = domain_size(m, cs.n_public)
    a, b, c = (np.zeros((n, FR_LIMBS), dtype=np.uint64) for _ in range(3))
    matvec_into(cs.A, w, a[:m], cs.modulus)
    matvec_into(cs.B, w, b[:m], cs.modulus)
    if cs.C is None:
        kernels_for(cs.modulus).hadamard(a[:m], b[:m], c[:m])
    else:
        matvec_into(cs.C, w, c[:m], cs.modulus)
    a[m : m + cs.n_public + 1] = w[: cs.n_public + 1]
    return a, b, c


def warm_up(modulus: int) -> None:
    """Load (or compile, first use on a machine) the kernels over Z/modulus for a CsrMatrix's
    argument types (a snarkjs zkey's), so that the first proof does not pay for it."""
    k = kernels_for(modulus)
    one = np.zeros((1, FR_LIMBS), dtype=np.uint64)
    k.row_sums(np.zeros(2, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), one, one,
               np.empty_like(one))
    k.hadamard(one, one, np.empty_like(one))
