"""The host half of a GPU MSM (cuda.msm.finish, CPU code): window sums in the kernels' layout
(Montgomery XYZZ rows, highest window last) combined by Horner with width_w doublings between
window w + 1 and window w (uniform and mixed widths), the scalar-1 sum added, against arkworks;
a table MSM's single merged row; nothing = infinity."""

from __future__ import annotations

import random

import numpy as np
import py_arkworks_bls12381 as ark
import pytest

from cuzk_ray.cuda.msm import G1, G2, MsmParts, finish
from cuzk_ray.curve import g1_array, g1_coords, g2_array, g2_coords
from cuzk_ray.field import FP_R, Q_MOD, R_MOD, fp_to_limbs
from cuzk_ray.ref import g2 as g2_ref

GROUPS = {"g1": (G1, ark.G1Point, g1_array), "g2": (G2, ark.G2Point, g2_array)}


def xyzz_row(group: str, k: int, z: int) -> np.ndarray:
    """k * generator as one Montgomery XYZZ row (uint64[1, 4, *elem]) with Z = z (ZZ = z^2,
    ZZZ = z^3): what the kernels leave, not the affine point itself."""
    g, cls, _ = GROUPS[group]
    pt = cls() * ark.Scalar(k)
    if group == "g1":
        x, y = g1_coords(pt)
        flat = [x * z * z % Q_MOD, y * z**3 % Q_MOD, z * z % Q_MOD, z**3 % Q_MOD]
    else:
        c = g2_coords(pt)
        zz = g2_ref.mul((z, 0), (z, 0))
        zzz = g2_ref.mul(zz, (z, 0))
        x, y = g2_ref.mul((c[0], c[1]), zz), g2_ref.mul((c[2], c[3]), zzz)
        flat = [*x, *y, *zz, *zzz]
    return fp_to_limbs([v * FP_R % Q_MOD for v in flat]).reshape(1, 4, *g.elem)


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_horner_over_the_windows_and_the_ones(group):
    g, cls, to_array = GROUPS[group]
    rng = random.Random(11)
    c, ks, one = 5, [rng.randrange(1, R_MOD) for _ in range(4)], rng.randrange(1, R_MOD)
    windows = np.concatenate([xyzz_row(group, k, rng.randrange(2, Q_MOD)) for k in ks])
    want = to_array([cls() * ark.Scalar((sum(k << (c * w) for w, k in enumerate(ks)) + one) % R_MOD)])[0]
    ones = xyzz_row(group, one, rng.randrange(2, Q_MOD))
    widths = (c,) * len(ks)
    assert np.array_equal(finish(MsmParts(g, windows, widths, ones)), want)
    # negative twins: the windows in the other order, or one doubling fewer, are other points
    assert not np.array_equal(finish(MsmParts(g, windows[::-1].copy(), widths, ones)), want)
    assert not np.array_equal(finish(MsmParts(g, windows, (c - 1,) * len(ks), ones)), want)
    with pytest.raises(ValueError, match="4 window rows for 3 widths"):
        finish(MsmParts(g, windows, widths[:3], ones))


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_horner_over_mixed_width_windows(group):
    """Windows of different widths (as WindowPlan.mixed: runs of 21 then 22 bits; here shorter
    runs of 3 and 5 and a 7): window w is shifted by the widths of the windows below it."""
    g, cls, to_array = GROUPS[group]
    rng = random.Random(12)
    widths = (3, 3, 5, 5, 7)
    bits = [sum(widths[:w]) for w in range(len(widths))]
    ks, one = [rng.randrange(1, R_MOD) for _ in widths], rng.randrange(1, R_MOD)
    windows = np.concatenate([xyzz_row(group, k, rng.randrange(2, Q_MOD)) for k in ks])
    want = to_array([cls() * ark.Scalar((sum(k << b for b, k in zip(bits, ks)) + one) % R_MOD)])[0]
    ones = xyzz_row(group, one, rng.randrange(2, Q_MOD))
    assert np.array_equal(finish(MsmParts(g, windows, widths, ones)), want)
    # negative twins: the widths in the wrong order, or all of one width, are other points
    assert not np.array_equal(finish(MsmParts(g, windows, widths[::-1], ones)), want)
    assert not np.array_equal(finish(MsmParts(g, windows, (5,) * len(widths), ones)), want)


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_one_merged_row_and_nothing(group):
    g, cls, to_array = GROUPS[group]
    row = xyzz_row(group, 12345, 7)
    assert np.array_equal(finish(MsmParts(g, row, (), None)), to_array([cls() * ark.Scalar(12345)])[0])
    assert not finish(MsmParts(g, None, (), None)).any()  # no scalars but 0: infinity, all zero
    assert np.array_equal(finish(MsmParts(g, None, (), row)), to_array([cls() * ark.Scalar(12345)])[0])


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_a_sum_that_cancels_is_infinity(group):
    g, _, _ = GROUPS[group]
    got = finish(MsmParts(g, xyzz_row(group, 12345, 3), (), xyzz_row(group, R_MOD - 12345, 5)))
    assert got.shape == (2, *g.elem) and not got.any()
    assert finish(MsmParts(g, xyzz_row(group, 12345, 3), (), xyzz_row(group, R_MOD - 12344, 5))).any()  # negative
