"""The device layout of the sparse matrices (cuda/spmv.py), built with numpy and read back
by a Python model of kernels/spmv.cu's spmv_csr: it must give CsrMatrix.matvec. Runs without a GPU
(the GPU tests compare the kernel itself)."""

import random

import numpy as np
import pytest

from cuzk_ray.cuda import spmv
from cuzk_ray.cuda.spmv import csr_layout, long_rows, transpose_layout
from cuzk_ray.field import R_MOD, fr_to_limbs, limbs_to_ints
from cuzk_ray.r1cs import CODE_MINUS_ONE, CODE_ONE, SMALL, CsrMatrix, coefficient_codes


def kernel_model(indptr, entries, table, x, rows, n, copy_rows=0, fast=True, long_row=None):
    """What spmv_csr and spmv_csr_long compute, in Python ints (table in standard form here): a
    row of more than ``long_row`` terms (listed by cuda.spmv.long_rows) as the warp's 32 lanes
    sum it, lane l taking terms l, l + 32, ..., the rest as one thread does."""
    coef = limbs_to_ints(table)

    def term(col, code):
        if fast and code == CODE_ONE:
            return x[col]
        if fast and code == CODE_MINUS_ONE:
            return -x[col]
        return x[col] * coef[code]

    out = [None] * n
    for i in range(n):
        if i < rows:
            terms = entries[indptr[i] : indptr[i + 1]].tolist()
            if long_row is None or len(terms) <= long_row:
                out[i] = sum(term(c, t) for c, t in terms) % R_MOD
        else:
            out[i] = int(x[i - rows]) if i - rows < copy_rows else 0
    for i in long_rows(np.asarray(indptr), rows, long_row, np).tolist():
        lanes = [sum(term(c, t) for c, t in entries[indptr[i] + lane : indptr[i + 1] : 32].tolist()) % R_MOD
                 for lane in range(32)]
        assert out[i] is None  # written by one kernel only
        out[i] = sum(lanes) % R_MOD
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


@pytest.mark.parametrize("long_row", [None, 0, 1, 16])
def test_rows_split_between_a_thread_and_a_warp_give_matvec(long_row, monkeypatch):
    """Rows of 0-929 terms (the 32 GiB A's longest), the long ones summed by lanes: matvec."""
    monkeypatch.setattr(spmv, "LONG_ROWS_CHUNK", 7)  # the listing across chunk edges
    rng = random.Random(929 + (long_row or 0))
    lengths = [0, 1, 3, 16, 17, 31, 32, 33, 64, 65, 929, 2, 1, 0, 40]
    rows, cols, vals = [], [], []
    for i, k in enumerate(lengths):
        rows += [i] * k
        cols += [rng.randrange(50) for _ in range(k)]
        vals += [rng.choice([1, R_MOD - 1, 2**k, rng.randrange(R_MOD)]) for _ in range(k)]
    m = CsrMatrix.from_coo(rows, cols, vals, len(lengths), 50)
    indptr, entries, table = csr_layout(m)
    listed = long_rows(indptr, len(lengths), long_row, np)
    want_listed = [] if long_row is None else [i for i, k in enumerate(lengths) if k > long_row]
    assert listed.dtype == np.uint32 and listed.tolist() == want_listed
    x = np.array([rng.randrange(R_MOD) for _ in range(50)], dtype=object)
    got = kernel_model(indptr, entries, table, x, len(lengths), len(lengths) + 2, long_row=long_row)
    assert got == list(m.matvec(x)) + [0, 0]
