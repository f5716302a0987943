import numpy as np
import pytest
from py_arkworks_bls12381 import G1Point, G2Point, Scalar

from cuzk_ray.curve import G2_GEN, g1_array, g1_point_checked, g1_points, g2_array, g2_coords, g2_points
from cuzk_ray.curve import scalars as to_scalars
from cuzk_ray.field import R_MOD, fr_to_limbs
from cuzk_ray.ref.msm import fixed_base_mul, msm_g1, msm_g2, naive_msm


def _rand_points(rng, cls, n):
    return [cls() * Scalar(rng.randrange(1, R_MOD)) for _ in range(n)]


def test_g2_generator_matches_arkworks():
    assert g2_coords(G2Point()) == G2_GEN


@pytest.mark.parametrize("cls,to_arr,from_arr", [(G1Point, g1_array, g1_points), (G2Point, g2_array, g2_points)])
def test_point_array_round_trip(rng, cls, to_arr, from_arr):
    pts = _rand_points(rng, cls, 20) + [cls.identity()]
    arr = to_arr(pts)
    assert arr.dtype == np.uint64 and arr.shape[0] == 21
    assert not arr[-1].any()  # infinity is all zero
    assert from_arr(arr) == pts


def test_checked_point_rejects_off_curve():
    arr = g1_array([G1Point()])
    arr[0, 1, 0] ^= 1  # y + 1 bit: off the curve
    with pytest.raises(Exception):  # noqa: B017  (arkworks raises its own exception type)
        g1_point_checked(arr)
    assert g1_point_checked(np.zeros((1, 2, 6), np.uint64)) == G1Point.identity()


def _edge_scalars(rng, n):
    base = [0, 1, R_MOD - 1, 2, 1, 0]
    return (base + [rng.randrange(R_MOD) for _ in range(n)])[:n] if n > len(base) else base[:n]


@pytest.mark.parametrize("n", [0, 1, 2, 7, 33, 100])
@pytest.mark.parametrize("group", ["g1", "g2"])
def test_msm_matches_naive(rng, n, group):
    cls, msm = (G1Point, msm_g1) if group == "g1" else (G2Point, msm_g2)
    pts = _rand_points(rng, cls, n)
    if n >= 4:
        pts[1] = cls.identity()  # infinity base
        pts[3] = pts[2]  # repeated point
    sc = _edge_scalars(rng, n)
    expect = naive_msm(pts, sc, cls.identity())
    assert msm(pts, sc) == expect
    assert msm(pts, fr_to_limbs(sc)) == expect  # limb input
    if n:
        sc2 = list(sc)
        sc2[-1] = (sc2[-1] + 1) % R_MOD
        assert msm(pts, sc2) != expect or pts[-1] == cls.identity()


def test_msm_all_zero_and_bits(rng):
    pts = _rand_points(rng, G1Point, 50)
    assert msm_g1(pts, [0] * 50) == G1Point.identity()
    bits = [rng.randrange(2) for _ in range(50)]
    expect = G1Point.identity()
    for p, b in zip(pts, bits):
        if b:
            expect = expect + p
    assert msm_g1(pts, bits) == expect


def test_msm_length_mismatch_and_slices(rng):
    with pytest.raises(ValueError, match="2 bases but 3 scalars"):
        msm_g1([G1Point(), G1Point()], [1, 2, 3])
    with pytest.raises(ValueError, match="3 bases but 2 scalars"):  # no silent prefix of the bases
        msm_g1([G1Point()] * 3, [1, 2])
    with pytest.raises(ValueError, match="2 scalars from base 1 but 2 bases"):
        msm_g2([G2Point(), G2Point()], [1, 2], start=1)
    pts = _rand_points(rng, G2Point, 9)
    sc = [rng.randrange(R_MOD) for _ in range(9)]
    assert msm_g2(pts, sc[:4], start=0) + msm_g2(pts, sc[4:], start=4) == naive_msm(pts, sc, G2Point.identity())


@pytest.mark.parametrize("cls", [G1Point, G2Point])
def test_fixed_base_mul(rng, cls):
    sc = [0, 1, 255, 256, R_MOD - 1] + [rng.randrange(R_MOD) for _ in range(20)]
    base = cls() * Scalar(rng.randrange(1, R_MOD))
    assert fixed_base_mul(base, sc) == [base * Scalar(s) for s in sc]


def test_scalars_from_limbs_and_ints(rng):
    vals = [0, 1, R_MOD - 1, rng.randrange(R_MOD)]
    assert [int(s) for s in to_scalars(vals)] == vals
    assert [int(s) for s in to_scalars(fr_to_limbs(vals))] == vals


@pytest.mark.parametrize("group,cls,to_arr", [("g1", G1Point, g1_array), ("g2", G2Point, g2_array)])
def test_fixed_base_mul_array_on_processes_equals_serial(rng, group, cls, to_arr):
    from cuzk_ray.ref.msm import fixed_base_mul_array

    sc = [0, 1, R_MOD - 1] + [rng.randrange(R_MOD) for _ in range(37)]
    serial = fixed_base_mul_array(group, sc, workers=1)
    parallel = fixed_base_mul_array(group, sc, workers=2, min_parallel=1)
    assert np.array_equal(serial, parallel)
    assert np.array_equal(serial, to_arr([cls() * Scalar(s) for s in sc]))
