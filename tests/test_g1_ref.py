"""The pure-Python G1 oracle used by the GPU MSM tests, checked against arkworks (CPU only)."""

from __future__ import annotations

import random

import pytest

from cuzk_ray.field import Q_MOD, R_MOD
from cuzk_ray.ref import g1 as g1_ref

ark = pytest.importorskip("py_arkworks_bls12381")


def test_generator_matches_curve_module():
    from cuzk_ray import curve

    assert g1_ref.G1_GEN == curve.G1_GEN
    assert curve.g1_coords(ark.G1Point()) == g1_ref.G1_GEN


def test_msm_naive_matches_arkworks():
    from cuzk_ray import curve

    rng = random.Random(5)
    ks = [rng.randrange(R_MOD) for _ in range(6)]
    pts = [g1_ref.affine_mul(k, g1_ref.G1_GEN) for k in ks]
    ark_pts = [ark.G1Point() * ark.Scalar(k) for k in ks]
    assert [curve.g1_coords(p) for p in ark_pts] == pts
    sc = [rng.randrange(R_MOD) for _ in pts]
    want = ark_pts[0] * ark.Scalar(sc[0])
    for p, s in zip(ark_pts[1:], sc[1:]):
        want = want + p * ark.Scalar(s)
    assert curve.g1_coords(want) == g1_ref.msm_naive(sc, pts)
    assert g1_ref.msm_naive([s + 1 for s in sc], pts) != g1_ref.msm_naive(sc, pts)


def test_xyzz_formulas_match_affine():
    rng = random.Random(6)
    p, q = (g1_ref.affine_mul(rng.randrange(1, R_MOD), g1_ref.G1_GEN) for _ in range(2))
    P, Q = g1_ref.xyzz_from_affine(p), g1_ref.xyzz_from_affine(q)
    s = g1_ref.xyzz_add(g1_ref.xyzz_dbl(P), Q)  # non-trivial ZZ, ZZZ
    assert g1_ref.xyzz_to_affine(s) == g1_ref.affine_add(g1_ref.affine_add(p, p), q)
    assert g1_ref.xyzz_to_affine(g1_ref.xyzz_add(s, s)) == g1_ref.xyzz_to_affine(g1_ref.xyzz_dbl(s))
    neg = g1_ref.xyzz_from_affine((q[0], (-q[1]) % Q_MOD))
    assert g1_ref.xyzz_add(Q, neg)[2] == 0  # P + (-P) = infinity
    assert g1_ref.on_curve(g1_ref.xyzz_to_affine(s)) and not g1_ref.on_curve((p[0], p[1] + 1))


def test_fp_inverses_and_xyzz_to_affine_many():
    """One inversion for many (Montgomery's trick) equals one pow each; the batch conversion equals
    the per-point one, infinity among them; negative twin: a changed Z gives another point."""
    rng = random.Random(6)
    vals = [rng.randrange(1, Q_MOD) for _ in range(9)] + [1, Q_MOD - 1]
    assert g1_ref.fp_inverses(vals) == [pow(v, -1, Q_MOD) for v in vals] and g1_ref.fp_inverses([]) == []
    pts = [g1_ref.affine_mul(rng.randrange(1, R_MOD), g1_ref.G1_GEN) for _ in range(5)]
    zs = [rng.randrange(2, Q_MOD) for _ in pts]
    xyzz = [(x * z * z % Q_MOD, y * z**3 % Q_MOD, z * z % Q_MOD, z**3 % Q_MOD) for (x, y), z in zip(pts, zs)]
    xyzz.insert(1, g1_ref.INF_XYZZ)
    got = g1_ref.xyzz_to_affine_many(xyzz)
    assert got == [g1_ref.xyzz_to_affine(p) for p in xyzz] and got[1] is None and got[0] == pts[0]
    X, Y, ZZ, ZZZ = xyzz[0]
    assert g1_ref.xyzz_to_affine_many([(X, Y, ZZ + 1, ZZZ)])[0] != pts[0]
