"""The device layout of the sparse matrices (cuda/spmv.py), built with numpy and read back
by a Python model of kernels/spmv.cu's spmv_csr: it must give CsrMatrix.matvec. Runs without a GPU
(the GPU tests compare the kernel itself)."""

import random

import numpy as np
import pytest

from cuzk_ray.cuda.spmv import csr_layout, transpose_layout
from cuzk_ray.field import R_MOD, fr_to_limbs, limbs_to_ints
from cuzk_ray.r1cs import CODE_MINUS_ONE, CODE_ONE, SMALL, CsrMatrix, coefficient_codes


def kernel_model(indptr, entries, table, x, rows, n, copy_rows=0, fast=True):
    """What spmv_csr computes, in Python ints (table in standard form here)."""
    coef = limbs_to_ints(table)
    out = []
    for i in range(n):
        if i < rows:
            acc = 0
            for col, code in entries[indptr[i] : indptr[i + 1]].tolist():
                if fast and code == CODE_ONE:
                    acc += x[col]
                elif fast and code == CODE_MINUS_ONE:
                    acc -= x[col]
                else:
                    acc += x[col] * coef[code]
            out.append(acc % R_MOD)
        else:
            out.append(int(x[i - rows]) if i - rows < copy_rows else 0)
    return out


def random_matrix(rng, n_rows, n_cols, nnz, kinds=("0", "1", "-1", "small", "big")):
    rows = [rng.randrange(n_rows) for _ in range(nnz)] if n_rows else []
    cols = [rng.randrange(n_cols) for _ in range(nnz)] if n_rows else []
    pick = {"0": lambda: 0, "1": lambda: 1, "-1": lambda: R_MOD - 1,
            "small": lambda: rng.choice([2, 4, 2**31, -5, -(2**31), 2**32 - 1]),
            "big": lambda: rng.randrange(R_MOD),
            "edge": lambda: rng.choice([2**32, -(2**32), 2**32 + 1, R_MOD - 2**33])}
    vals = [pick[rng.choice(kinds)]() % R_MOD for _ in rows]
    return CsrMatrix.from_coo(rows, cols, vals, n_rows, n_cols)


CASES = [(1, 1, 1), (37, 50, 200), (100, 30, 0), (64, 64, 400), (5, 3, 40)]  # last: many duplicate columns


@pytest.mark.parametrize("n_rows,n_cols,nnz", CASES)
@pytest.mark.parametrize("fast", [True, False])
def test_layout_model_equals_matvec(n_rows, n_cols, nnz, fast):
    rng = random.Random(n_rows * 1000 + nnz)
    m = random_matrix(rng, n_rows, n_cols, nnz, ("0", "1", "-1", "small", "big", "edge"))
    x = np.array([rng.randrange(R_MOD) for _ in range(n_cols)], dtype=object)
    indptr, entries, table = csr_layout(m)
    assert entries.dtype == np.uint32 and entries.shape == (m.nnz, 2) and table.dtype == np.uint64
    assert limbs_to_ints(table[:2]).tolist() == [1, R_MOD - 1]
    assert (entries[:, 1] < len(table)).all()
    want = list(m.matvec(x))
    n = n_rows + 8
    got = kernel_model(indptr, entries, table, x, n_rows, n, copy_rows=3 if n_cols >= 3 else 0, fast=fast)
    assert got[:n_rows] == want
    assert got[n_rows:] == ([int(v) for v in x[:3]] + [0] * 5 if n_cols >= 3 else [0] * 8)
    if nnz:  # negative: a wrong code changes the product
        bad = entries.copy()
        bad[:, 1] = (bad[:, 1] + 1) % len(table)
        x1 = np.ones(n_cols, dtype=object)
        assert kernel_model(indptr, bad, table, x1, n_rows, n_rows) != list(m.matvec(x1))


def test_codes_share_small_coefficients():
    vals = [1, R_MOD - 1, 2, 2, 2**31 - 1, R_MOD - 2**31, R_MOD - 3, 2**31, 7 + 2**200, 7 + 2**200, 0,
            2**32, R_MOD - 2**32, 2**32 - 1, R_MOD - 2**32 + 1]
    codes, table = coefficient_codes(fr_to_limbs(vals))
    assert codes[0] == CODE_ONE and codes[1] == CODE_MINUS_ONE and codes[2] == codes[3]
    assert codes[8] != codes[9]  # large values are not deduplicated (one row each)
    assert limbs_to_ints(table[codes]).tolist() == vals
    # [1, -1] + distinct small {-(2^32-1), -2^31, -3, -1, 0, 1, 2, 2^31-1, 2^31, 2^32-1}
    # + one row each for {big, big, 2^32, -2^32}
    assert SMALL == 2**32 and len(table) == 2 + 10 + 4


@pytest.mark.parametrize("n_rows,n_cols,nnz", CASES)
@pytest.mark.parametrize("extra", [0, 3])
def test_transpose_layout(n_rows, n_cols, nnz, extra):
    rng = random.Random(nnz + extra)
    m = random_matrix(rng, n_rows, n_cols, nnz)
    extra = min(extra, n_cols)
    indptr, entries, table = csr_layout(m)
    t_indptr, t_entries = transpose_layout(indptr, entries, n_rows, n_cols, extra)
    y = np.array([rng.randrange(R_MOD) for _ in range(n_rows + extra)], dtype=object)
    got = kernel_model(t_indptr, t_entries, table, y, n_cols, n_cols)
    coeffs = m.coefficients()
    want = [0] * n_cols
    for j in range(n_rows):
        for e in range(m.indptr[j], m.indptr[j + 1]):
            want[m.indices[e]] += coeffs[e] * y[j]
    for s in range(extra):
        want[s] += y[n_rows + s]
    assert got == [v % R_MOD for v in want]
