"""The host side of the BN254 kernels, no GPU needed: the XYZZ formulas of the MSM's host tail
(cuzk_ray.ref.bn254_xyzz) against ref.bn254's affine arithmetic and a published point, and the
device NTT's host tables (cuda.device.two_level) right mod either curve's r."""

from __future__ import annotations

import pytest

from cuzk_ray.cuda.device import two_level
from cuzk_ray.field import R_MOD, limbs_to_ints
from cuzk_ray.ref import bn254 as ref
from cuzk_ray.ref import bn254_xyzz

# [2](1, 2) on alt_bn128, as published in py_ecc's bn128 tests (ethereum/py_ecc).
DOUBLE_G1 = (1368015179489954701390400359078579693043519447331113978918064868415326638035,
             9918110051302171585080402603319702774565515993150576347155970296011118125764)
GROUPS = [(bn254_xyzz.G1, ref.G1_OPS, ref.G1_GEN), (bn254_xyzz.G2, ref.G2_OPS, ref.G2_GEN)]


def test_double_generator_as_published():
    g = bn254_xyzz.G1
    assert g.xyzz_to_affine(g.xyzz_dbl(g.from_affine(ref.G1_GEN))) == DOUBLE_G1
    assert g.xyzz_to_affine(g.xyzz_add(g.from_affine(ref.G1_GEN), g.from_affine(ref.G1_GEN))) == DOUBLE_G1
    assert g.xyzz_to_affine(g.from_affine(ref.G1_GEN)) != DOUBLE_G1  # negative twin


@pytest.mark.parametrize("g, ops, gen", GROUPS, ids=["g1", "g2"])
def test_xyzz_equals_affine(g, ops, gen):
    p, q = ref.mul(gen, 5, ops), ref.mul(gen, 11, ops)
    P, Q = g.from_affine(p), g.from_affine(q)
    assert g.xyzz_to_affine(g.xyzz_add(P, Q)) == ref.mul(gen, 16, ops)
    assert g.xyzz_to_affine(g.xyzz_dbl(g.xyzz_add(P, Q))) == ref.mul(gen, 32, ops)
    assert g.xyzz_to_affine(g.xyzz_add(P, P)) == ref.mul(gen, 10, ops)  # the doubling case
    assert g.xyzz_to_affine(g.xyzz_add(P, g.from_affine(ref.neg(p, ops)))) is None  # p - p
    assert g.xyzz_add(g.inf_xyzz, Q) == Q and g.xyzz_dbl(g.inf_xyzz) == g.inf_xyzz
    assert g.xyzz_to_affine_many([g.xyzz_add(P, Q), g.inf_xyzz]) == [ref.mul(gen, 16, ops), None]
    assert g.xyzz_to_affine(g.xyzz_add(P, Q)) != ref.mul(gen, 17, ops)  # negative twin


@pytest.mark.parametrize("modulus", [ref.R, R_MOD], ids=["bn254", "bls12381"])
def test_device_tables_for_each_modulus(modulus):
    """hi[j >> L] lo_f[j mod 2^L] R^-1 = f w^j R mod r, for either curve's r (a factor pre-reduced
    mod BLS12-381's r once made BN254's tables wrong: the H200 run's NTT round trips failed)."""
    w, f, R = 7, 3, 1 << 256
    hi, lo, L = two_level(w, 6, [1, f], modulus)
    hi, lo = limbs_to_ints(hi), limbs_to_ints(lo)
    r_inv = pow(R, -1, modulus)
    got = [int(hi[j >> L]) * int(lo[(1 << L) + (j & ((1 << L) - 1))]) * r_inv % modulus for j in range(64)]
    assert got == [f * pow(w, j, modulus) * R % modulus for j in range(64)]
    other = R_MOD if modulus == ref.R else ref.R
    assert got != [f * pow(w, j, other) * R % other for j in range(64)]  # negative: the other curve's r
