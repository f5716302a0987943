"""The Python-int BN254 oracle (cuzk_ray.ref.bn254) against published values: the generators on
their curves and of order r, 2 G1 and the 2^28-th root of unity as published, the snarkjs roots
primitive, the fast NTT equal to the definition, XYZZ formulas equal to affine ones."""

from __future__ import annotations

import random

import pytest

from cuzk_ray.cuda.device import two_level
from cuzk_ray.field import R_MOD, limbs_to_ints
from cuzk_ray.ref import bn254 as ref

# ark-bn254 (arkworks-rs/algebra, curves/bn254/src/fields/fr.rs) TWO_ADIC_ROOT_OF_UNITY; equal to
# snarkjs's w[28] = 5^t (ffjavascript f1field.js takes the least non-residue, 5 for bn128).
ROOT_2_28 = 19103219067921713944291392827692070036145651957329286315305642004821462161904
# [2](1, 2) on alt_bn128 (py_ecc's bn128 tests, ethereum/py_ecc).
DOUBLE_G1 = (1368015179489954701390400359078579693043519447331113978918064868415326638035,
             9918110051302171585080402603319702774565515993150576347155970296011118125764)


def test_published_constants():
    assert ref.snarkjs_root(1 << 28) == ROOT_2_28
    assert ref.G1.mul(2, ref.G1.gen) == DOUBLE_G1
    assert ref.G1.mul(3, ref.G1.gen) != DOUBLE_G1  # negative twin
    assert not ref.G1.on_curve((DOUBLE_G1[0], DOUBLE_G1[1] + 1))


@pytest.mark.parametrize("g", [ref.G1, ref.G2], ids=["g1", "g2"])
def test_generator_order_r(g):
    assert g.on_curve(g.gen)
    assert g.mul(ref.R, g.gen) is None
    assert g.mul(ref.R - 1, g.gen) == g.neg(g.gen)
    assert g.mul(ref.R + 1, g.gen) == g.gen
    assert g.mul(ref.R - 1, g.gen) != g.gen  # negative twin


@pytest.mark.parametrize("log_n", [1, 2, 5, 28])
def test_snarkjs_roots_primitive(log_n):
    w = ref.snarkjs_root(1 << log_n)
    assert pow(w, 1 << log_n, ref.R) == 1 and pow(w, 1 << (log_n - 1), ref.R) == ref.R - 1
    with pytest.raises(ValueError):
        ref.snarkjs_root(3 << log_n)
    with pytest.raises(ValueError):
        ref.snarkjs_root(1 << 29)


@pytest.mark.parametrize("n", [1, 2, 8, 64])
def test_ntt_equals_definition(n):
    rng = random.Random(n)
    x = [rng.randrange(ref.R) for _ in range(n)]
    w = ref.snarkjs_root(n)
    assert ref.ntt(x, w) == ref.ntt_naive(x, w)
    if n > 2:  # (for n = 2 the root is its own inverse)
        assert ref.ntt(x, w) != ref.ntt_naive(x, pow(w, -1, ref.R))  # negative: the other root


@pytest.mark.parametrize("g", [ref.G1, ref.G2], ids=["g1", "g2"])
def test_xyzz_equals_affine(g):
    p, q = g.mul(5, g.gen), g.mul(11, g.gen)
    P, Q = (*p, g.F.one, g.F.one), (*q, g.F.one, g.F.one)
    assert g.xyzz_to_affine(g.xyzz_add(P, Q)) == g.mul(16, g.gen)
    assert g.xyzz_to_affine(g.xyzz_dbl(g.xyzz_add(P, Q))) == g.mul(32, g.gen)
    assert g.xyzz_to_affine(g.xyzz_add(P, P)) == g.mul(10, g.gen)  # the doubling case
    assert g.xyzz_to_affine(g.xyzz_add(P, (*g.neg(p), g.F.one, g.F.one))) is None  # p - p
    assert g.xyzz_to_affine(g.xyzz_add(P, Q)) != g.mul(17, g.gen)


@pytest.mark.parametrize("modulus", [ref.R, R_MOD], ids=["bn254", "bls12_381"])
def test_device_tables_for_each_modulus(modulus):
    """The host tables of the device NTT (cuda.device.two_level, Montgomery form) are right mod
    either curve's r: hi[j >> L] lo_f[j mod 2^L] R^-1 = f w^j R. (A factor pre-reduced mod
    BLS12-381's r once made BN254's tables wrong.)"""
    w, f, R = 7, 3, 1 << 256
    hi, lo, L = two_level(w, 6, [1, f], modulus)
    hi, lo = limbs_to_ints(hi), limbs_to_ints(lo)
    r_inv = pow(R, -1, modulus)
    got = [int(hi[j >> L]) * int(lo[(1 << L) + (j & ((1 << L) - 1))]) * r_inv % modulus for j in range(64)]
    assert got == [f * pow(w, j, modulus) * R % modulus for j in range(64)]
    other = R_MOD if modulus == ref.R else ref.R
    assert got != [f * pow(w, j, other) * R % other for j in range(64)]  # negative: the other curve's r
