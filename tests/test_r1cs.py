import pytest

from cuzk_ray.field import R_MOD, int_vector
from cuzk_ray.r1cs import ConstraintSystem, CsrMatrix, UnsatisfiedConstraint


def _dense(m: CsrMatrix):
    d = [[0] * m.n_cols for _ in range(m.n_rows)]
    for j in range(m.n_rows):
        for i, c in m.row(j):
            d[j][i] = (d[j][i] + c) % R_MOD
    return d


def test_from_coo_and_matvec(rng):
    rows, cols, vals = [], [], []
    for _ in range(60):
        rows.append(rng.randrange(10))
        cols.append(rng.randrange(7))
        vals.append(rng.choice([1, R_MOD - 1, rng.randrange(R_MOD)]))
    m = CsrMatrix.from_coo(rows, cols, vals, 10, 7)
    dense = [[0] * 7 for _ in range(10)]
    for r, c, v in zip(rows, cols, vals):
        dense[r][c] = (dense[r][c] + v) % R_MOD
    assert _dense(m) == dense
    w = int_vector([rng.randrange(R_MOD) for _ in range(7)])
    assert list(m.matvec(w)) == [sum(d * int(x) for d, x in zip(row, w)) % R_MOD for row in dense]


def test_from_coo_rejects_out_of_shape():
    with pytest.raises(ValueError, match="outside"):
        CsrMatrix.from_coo([0, 5], [0, 0], [1, 1], 3, 2)


def _square_circuit():
    # x * x = y ; y * 1 = out (public).  wires [1, out, x, y]
    A = CsrMatrix.from_coo([0, 1], [2, 3], [1, 1], 2, 4)
    B = CsrMatrix.from_coo([0, 1], [2, 0], [1, 1], 2, 4)
    C = CsrMatrix.from_coo([0, 1], [3, 1], [1, 1], 2, 4)
    return ConstraintSystem(4, 1, A, B, C, name="square")


def test_check_accepts_and_names_first_failing_constraint():
    cs = _square_circuit()
    cs.check([1, 9, 3, 9])
    with pytest.raises(UnsatisfiedConstraint, match=r"square: constraint 1 of 2 is not satisfied"):
        cs.check([1, 10, 3, 9])
    with pytest.raises(UnsatisfiedConstraint, match=r"constraint 0 of 2"):
        cs.check([1, 9, 4, 9])
    with pytest.raises(UnsatisfiedConstraint, match="witness\\[0\\] must be 1"):
        cs.check([2, 9, 3, 9])
    with pytest.raises(ValueError, match="witness has 3 values, the circuit has 4 wires"):
        cs.check([1, 9, 3])


def test_evaluate_without_c_uses_ab():
    cs = _square_circuit()
    cs2 = ConstraintSystem(4, 1, cs.A, cs.B, None)
    a, b, c = cs2.evaluate([1, 9, 3, 9])
    assert list(c) == [9, 9]
    with pytest.raises(ValueError, match="C is not stored"):
        cs2.check([1, 9, 3, 9])


def test_from_coo_sorts_rows_then_columns_and_keeps_sorted_input_as_is():
    import numpy as np

    from cuzk_ray.r1cs import CsrMatrix

    rows, cols, vals = [2, 0, 2, 0, 1], [1, 3, 0, 0, 2], [5, 6, 7, 8, 9]
    m = CsrMatrix.from_coo(rows, cols, vals, n_rows=4, n_cols=4)
    assert m.indptr.tolist() == [0, 2, 3, 5, 5]
    assert m.indices.tolist() == [0, 3, 2, 0, 1]
    assert m.coefficients().tolist() == [8, 6, 9, 7, 5]
    order = np.lexsort((cols, rows))  # the same matrix given in order
    m2 = CsrMatrix.from_coo(np.array(rows)[order], np.array(cols)[order], np.array(vals)[order], 4, 4)
    assert m2.indices.tolist() == m.indices.tolist() and (m2.data == m.data).all()
