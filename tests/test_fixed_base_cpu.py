"""fast/fixed_base.py (numba fixed-base multiplication, the CPU setup's) against the py-arkworks
reference ref.msm.fixed_base_mul_array, bit for bit: random scalars, 0, 1, r - 1, scalars whose
signed digits carry through every window, sizes around a block and a thread's part."""

import numpy as np
import pytest

from cuzk_ray.fast import fixed_base as fast
from cuzk_ray.field import R_MOD, FrVector, fr_to_limbs
from cuzk_ray.groth16.setup import fixed_base_function
from cuzk_ray.ref.msm import fixed_base_mul_array as reference

GROUPS = ["g1", "g2"]
EDGES = [0, 1, 2, R_MOD - 1, R_MOD - 2, (R_MOD - 1) // 2, 1 << 254, (1 << fast.C) - 1, 1 << (fast.C - 1),
         (1 << (fast.C - 1)) + 1, sum((1 << (fast.C - 1)) << (fast.C * j) for j in range(fast.NW - 1))]


@pytest.mark.parametrize("group", GROUPS)
def test_edge_and_random_scalars_equal_the_reference(rng, group):
    sc = fr_to_limbs(EDGES + [rng.randrange(R_MOD) for _ in range(40)])
    got = fast.fixed_base_mul_array(group, sc)
    assert got.shape == ((len(sc), 2, 6) if group == "g1" else (len(sc), 2, 2, 6)) and got.dtype == np.uint64
    assert np.array_equal(got, reference(group, sc, workers=1))
    assert not got[0].any() and got[1:].reshape(len(sc) - 1, -1).any(axis=1).all()  # only 0 gives infinity


@pytest.mark.parametrize("group,n,workers", [("g1", 0, 2), ("g1", 1, 2), ("g2", 3, 1), ("g1", fast.BLOCK + 1, 2),
                                             ("g1", 2 * fast.BLOCK + 7, 3), ("g2", fast.BLOCK - 1, 2)])
def test_small_and_odd_sizes_on_threads(rng, group, n, workers):
    vals = [rng.randrange(R_MOD) for _ in range(n)]
    got = fast.fixed_base_mul_array(group, FrVector(fr_to_limbs(vals)) if n else fr_to_limbs(vals), workers=workers)
    want = reference(group, fr_to_limbs(vals), workers=1) if n else got[:0]
    assert got.shape[0] == n and np.array_equal(got, want)
    if n > 1:  # the negative twin: a different scalar gives a different point
        vals[n // 2] = (vals[n // 2] + 1) % R_MOD
        other = fast.fixed_base_mul_array(group, fr_to_limbs(vals), workers=workers)
        assert not np.array_equal(other[n // 2], got[n // 2]) and np.array_equal(np.delete(other, n // 2, 0),
                                                                                  np.delete(got, n // 2, 0))


def test_the_table_rows_are_the_generator_multiples():
    table = fast.generator_table("g1")  # Montgomery form: out of it through the field's from_mont
    assert table.shape == (fast.NW * fast.HALF, 12)
    picks = [0, 1, fast.HALF - 1, fast.HALF, fast.NW * fast.HALF - 1]
    want = reference("g1", fr_to_limbs([((k % fast.HALF + 1) << (fast.C * (k // fast.HALF))) % R_MOD for k in picks]),
                     workers=1)
    r_inv = pow(2, -384, fast.Q_MOD)
    got = [[int.from_bytes(table[k, 6 * c : 6 * c + 6].tobytes(), "little") * r_inv % fast.Q_MOD for c in (0, 1)]
           for k in picks]
    assert got == [[int.from_bytes(want[i, c].tobytes(), "little") for c in (0, 1)] for i in range(len(picks))]


def test_unreduced_scalars_and_unknown_groups_are_refused():
    sc = fr_to_limbs([1, R_MOD - 1])
    sc[1, 0] += np.uint64(1)  # r itself
    with pytest.raises(ValueError, match="scalar 1 is not below r"):
        fast.fixed_base_mul_array("g1", sc)
    with pytest.raises(ValueError, match="'g3'"):
        fast.fixed_base_mul_array("g3", sc[:1])


def test_the_cpu_setup_uses_it():
    assert fixed_base_function("cpu") is fast.fixed_base_mul_array
