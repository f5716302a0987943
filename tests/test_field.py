import json
import subprocess

import numpy as np
import pytest
from py_arkworks_bls12381 import G1Point, Scalar

from cuzk_ray import field as F
from cuzk_ray.curve import G1_GEN, g1_coords

ROOT = __import__("pathlib").Path(__file__).resolve().parent.parent


def test_moduli_match_arkworks():
    # r: arkworks reduces r to zero and r - 1 to -1.
    assert Scalar.from_le_bytes_mod_order(F.R_MOD.to_bytes(32, "little")).is_zero()
    assert int(Scalar.from_le_bytes_mod_order((F.R_MOD - 1).to_bytes(32, "little"))) == F.R_MOD - 1
    # q: the generator satisfies y^2 = x^3 + 4 mod q and is arkworks' generator.
    x, y = G1_GEN
    assert (y * y - x**3 - 4) % F.Q_MOD == 0
    assert g1_coords(G1Point()) == G1_GEN
    assert F.Q_MOD.bit_length() == 381 and F.R_MOD.bit_length() == 255


def test_montgomery_constants():
    assert (F.FR_INV64 * F.R_MOD) % 2**64 == 2**64 - 1
    assert (F.FP_INV64 * F.Q_MOD) % 2**64 == 2**64 - 1
    assert (F.FR_INV32 * F.R_MOD) % 2**32 == 2**32 - 1
    assert F.FR_R2 == (2**256) ** 2 % F.R_MOD and F.FP_R2 == (2**384) ** 2 % F.Q_MOD
    assert F.FR_R * F.FR_R_INV % F.R_MOD == 1 and F.FP_R * F.FP_R_INV % F.Q_MOD == 1


@pytest.mark.parametrize("conv", ["snarkjs", "native"])
def test_roots_of_unity_are_primitive(conv):
    for log_n in (0, 1, 5, 17, 32):
        n = 1 << log_n
        w = F.root_of_unity(n, conv)
        assert pow(w, n, F.R_MOD) == 1
        if n > 1:
            assert pow(w, n // 2, F.R_MOD) == F.R_MOD - 1
    with pytest.raises(ValueError):
        F.root_of_unity(3)
    with pytest.raises(ValueError):
        F.root_of_unity(1 << 33)


def test_native_root_is_arkworks_literal():
    # arkworks ff bls12_381 Fr::TWO_ADIC_ROOT_OF_UNITY
    assert F.two_adic_root("native") == 0x16A2A19EDFE81F20D09B681922C813B4B63683508C2280B93829971F439F0D2B


def test_snarkjs_root_matches_ffjavascript(snarkjs):
    """ffjavascript (snarkjs's field library) computes its own 2^32-th root; ask it."""
    script = ("const ff=require('ffjavascript');(async()=>{const c=await ff.buildBls12381(true);"
              "const Fr=c.Fr;const out=[];for(const k of [1,10,32])out.push(Fr.toString(Fr.w[k]));"
              "console.log(JSON.stringify(out));process.exit(0)})()")
    res = subprocess.run(["node", "-e", script], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert res.returncode == 0, res.stderr
    got = json.loads(res.stdout.strip().splitlines()[-1])
    assert [int(x) for x in got] == [F.root_of_unity(1 << k, "snarkjs") for k in (1, 10, 32)]
    assert F.root_of_unity(1 << 32, "snarkjs") != F.root_of_unity(1 << 32, "native")


@pytest.mark.parametrize("nlimbs,mod", [(4, F.R_MOD), (6, F.Q_MOD)])
def test_limb_round_trip(rng, nlimbs, mod):
    vals = [0, 1, mod - 1, 2**64 - 1, 2**64] + [rng.randrange(mod) for _ in range(200)]
    limbs = F.ints_to_limbs(vals, nlimbs)
    assert limbs.dtype == np.uint64 and limbs.shape == (len(vals), nlimbs)
    assert limbs[3, 0] == 2**64 - 1 and limbs[4, 1] == 1 and limbs[4, 0] == 0  # little-endian limbs
    assert list(F.limbs_to_ints(limbs)) == vals
    limbs[0, 0] = 7  # writable
    assert F.limbs_to_ints(np.zeros((0, nlimbs), np.uint64)).shape == (0,)


@pytest.mark.parametrize("mod", [F.R_MOD, F.Q_MOD])
def test_montgomery_round_trip(rng, mod):
    vals = F.int_vector([0, 1, mod - 1] + [rng.randrange(mod) for _ in range(100)])
    mont = F.to_montgomery(vals, mod)
    radix = 2**256 if mod == F.R_MOD else 2**384
    assert all(m == v * radix % mod for m, v in zip(mont, vals))
    assert list(F.from_montgomery(mont, mod)) == list(vals)


def test_batch_inverse(rng):
    vals = F.int_vector([1, F.R_MOD - 1] + [rng.randrange(1, F.R_MOD) for _ in range(50)])
    inv = F.fr_batch_inverse(vals)
    assert all(a * b % F.R_MOD == 1 for a, b in zip(vals, inv))
    with pytest.raises(ZeroDivisionError, match="element 1"):
        F.fr_batch_inverse(F.int_vector([3, 0]))


def test_montgomery_rejects_unknown_modulus_and_fr_vector_reduces():
    with pytest.raises(ValueError, match="R_MOD .* and Q_MOD"):
        F.to_montgomery(F.int_vector([1]), 101)
    limbs = F.ints_to_limbs([F.R_MOD + 5, 3], 4)  # an unreduced limb value
    assert list(F.fr_vector(limbs)) == [5, 3]
