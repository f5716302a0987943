"""The pure-Python G2 oracle (g2_ref: Fp2, affine and XYZZ formulas), the host-side helpers of the
G2 MSM (limb layouts) and the fixed-base window table, checked against arkworks (CPU only)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from cuzk_ray.field import FP_LIMBS, FP_R, Q_MOD, R_MOD, fp_to_limbs
from cuzk_ray.ref import g2 as g2_ref

ark = pytest.importorskip("py_arkworks_bls12381")


def coords(p):
    """arkworks G2 point -> g2_ref affine ((x0, x1), (y0, y1)) or None."""
    from cuzk_ray.curve import g2_coords

    c = g2_coords(p)
    return None if c is None else ((c[0], c[1]), (c[2], c[3]))


def scale(p, z):
    """Affine -> XYZZ with ZZ = z^2, ZZZ = z^3 (any non-zero z gives the same point)."""
    zz = g2_ref.sqr(z)
    zzz = g2_ref.mul(zz, z)
    return g2_ref.mul(p[0], zz), g2_ref.mul(p[1], zzz), zz, zzz


def rand_fp2(rng):
    return rng.randrange(1, Q_MOD), rng.randrange(Q_MOD)


def test_generator_matches_curve_module_and_arkworks():
    from cuzk_ray import curve

    assert (*g2_ref.G2_GEN[0], *g2_ref.G2_GEN[1]) == curve.G2_GEN
    assert coords(ark.G2Point()) == g2_ref.G2_GEN
    assert g2_ref.on_curve(g2_ref.G2_GEN)
    x, y = g2_ref.G2_GEN
    assert not g2_ref.on_curve((x, g2_ref.add(y, g2_ref.ONE)))  # negative


def test_fp2_field_laws():
    rng = random.Random(1)
    for _ in range(20):
        a, b = rand_fp2(rng), rand_fp2(rng)
        assert g2_ref.mul(a, g2_ref.inv(a)) == g2_ref.ONE
        assert g2_ref.mul(g2_ref.sub(a, b), g2_ref.add(a, b)) == g2_ref.sub(g2_ref.sqr(a), g2_ref.sqr(b))
        assert g2_ref.add(a, g2_ref.neg(a)) == g2_ref.ZERO
    assert g2_ref.sqr((0, 1)) == (Q_MOD - 1, 0)  # u^2 = -1


def test_affine_mul_and_msm_match_arkworks():
    rng = random.Random(2)
    ks = [1, 2, 3, R_MOD - 1] + [rng.randrange(R_MOD) for _ in range(3)]
    for k in ks:
        assert g2_ref.affine_mul(k, g2_ref.G2_GEN) == coords(ark.G2Point() * ark.Scalar(k)), k
    assert g2_ref.affine_mul(R_MOD, g2_ref.G2_GEN) is None
    assert g2_ref.affine_mul(5, g2_ref.G2_GEN) != g2_ref.affine_mul(6, g2_ref.G2_GEN)


def test_xyzz_formulas_match_affine():
    rng = random.Random(3)
    p, q = (g2_ref.affine_mul(rng.randrange(1, R_MOD), g2_ref.G2_GEN) for _ in range(2))
    P, Q = scale(p, rand_fp2(rng)), scale(q, rand_fp2(rng))
    assert g2_ref.xyzz_to_affine(g2_ref.xyzz_add(P, Q)) == g2_ref.affine_add(p, q)
    assert g2_ref.xyzz_to_affine(g2_ref.xyzz_dbl(P)) == g2_ref.affine_add(p, p)
    assert g2_ref.xyzz_to_affine(g2_ref.xyzz_add(P, scale(p, rand_fp2(rng)))) == g2_ref.affine_add(p, p)
    assert g2_ref.xyzz_add(P, scale(g2_ref.affine_neg(p), rand_fp2(rng)))[2] == g2_ref.ZERO  # P - P
    assert g2_ref.xyzz_add(g2_ref.INF_XYZZ, Q) == Q and g2_ref.xyzz_add(P, g2_ref.INF_XYZZ) == P
    assert g2_ref.xyzz_to_affine(g2_ref.xyzz_from_affine(p)) == p
    assert g2_ref.xyzz_to_affine(g2_ref.INF_XYZZ) is None
    assert g2_ref.xyzz_to_affine(g2_ref.xyzz_add(P, Q)) != g2_ref.affine_add(p, p)  # negative


def test_group_layouts_match_arkworks_bytes():
    """cuda_msm's G2 limb helpers (CPU code) against curve.g2_array, Montgomery rows included."""
    from cuzk_ray.cuda.msm import G1, G2, xyzz_rows_to_ints
    from cuzk_ray.curve import g1_array, g1_coords, g2_array

    rng = random.Random(4)
    pt = ark.G2Point() * ark.Scalar(rng.randrange(1, R_MOD))
    aff = coords(pt)
    assert np.array_equal(G2.affine_to_limbs(aff), g2_array([pt])[0])
    assert not G2.affine_to_limbs(None).any() and G2.affine_to_limbs(None).shape == (2, 2, FP_LIMBS)
    p1 = ark.G1Point() * ark.Scalar(rng.randrange(1, R_MOD))
    assert np.array_equal(G1.affine_to_limbs(g1_coords(p1)), g1_array([p1])[0])
    # a Montgomery XYZZ row [1, 4, 2, 6] decodes to the Fp2 coordinates it holds
    X = scale(aff, rand_fp2(rng))
    flat = [c for e in X for c in e]
    rows = fp_to_limbs([v * FP_R % Q_MOD for v in flat]).reshape(1, 4, 2, FP_LIMBS)
    (got,) = xyzz_rows_to_ints(G2, rows)
    assert got == X and g2_ref.xyzz_to_affine(got) == aff


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_fixed_base_window_table(group):
    from cuzk_ray.cuda.fixed_base import window_table
    from cuzk_ray.curve import g1_array, g2_array

    tab = window_table(group)
    cls, to_array = (ark.G1Point, g1_array) if group == "g1" else (ark.G2Point, g2_array)
    assert tab.shape == (32 * 256, 2, *((FP_LIMBS,) if group == "g1" else (2, FP_LIMBS)))
    for w, d in ((0, 1), (0, 255), (5, 17), (31, 200)):
        want = to_array([cls() * ark.Scalar(d * 256**w % R_MOD)])[0]
        assert np.array_equal(tab[256 * w + d], want), (w, d)
    assert not tab[256 * 3].any()  # d = 0 rows are unused (infinity)
    assert not np.array_equal(tab[256 * 2 + 1], tab[256 * 1 + 1])


def test_xyzz_to_affine_many_is_one_inversion_for_all():
    """The batch conversion (conj / norm, the norms inverted together) equals the per-point one,
    infinity among them; and its negative twin: a point's Z changed, another affine point."""
    rng = random.Random(5)
    pts = [g2_ref.affine_mul(rng.randrange(1, R_MOD), g2_ref.G2_GEN) for _ in range(6)]
    xyzz = [scale(p, rand_fp2(rng)) for p in pts]
    xyzz.insert(2, g2_ref.INF_XYZZ)
    got = g2_ref.xyzz_to_affine_many(xyzz)
    assert got == [g2_ref.xyzz_to_affine(p) for p in xyzz] and got[2] is None and got[0] == pts[0]
    assert g2_ref.xyzz_to_affine_many([]) == []
    X, Y, ZZ, ZZZ = xyzz[0]
    assert g2_ref.xyzz_to_affine_many([(X, Y, g2_ref.add(ZZ, (1, 0)), ZZZ)])[0] != pts[0]
