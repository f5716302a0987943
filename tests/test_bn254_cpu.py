"""BN254 (circom's default curve) on the CPU (issue 31): the curve read from the files, proofs
by ``cuzk-ray groth16 prove`` that snarkjs 0.7.6 accepts, snarkjs's proofs that our verifier
accepts, each with a tampered twin, and the refusals (another curve's witness, an unknown curve).

Fixtures: tests/fixtures/circom/{bn254,bn_many,bn_pow2} (tests/fixtures/make_fixtures.sh,
ONLY=bn128): few public inputs (2 signals), many (10), and a domain of exactly 2^6 (61
constraints + 2 public signals = 63).
"""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path

import pytest
from conftest import snarkjs_verify_many
from test_cli import cli

from cuzk_ray.backends import check_backend_curve
from cuzk_ray.curves import BLS12_381, BN254
from cuzk_ray.domain import Domain
from cuzk_ray.formats.snarkjs import read_r1cs, read_wtns, read_zkey
from cuzk_ray.formats.snarkjs_json import read_proof, read_public, read_verification_key, verification_key_json
from cuzk_ray.groth16.keys import Proof
from cuzk_ray.groth16.verifier import verify
from cuzk_ray.r1cs import UnsatisfiedConstraint
from cuzk_ray.ref import bn254 as ref

FIX = Path(__file__).parent / "fixtures" / "circom"
WITNESSES = {"bn254": 1, "bn_many": 2, "bn_pow2": 2}
SHAPES = {"bn254": (2, 4), "bn_many": (10, 32), "bn_pow2": (2, 64)}  # public signals, domain


@pytest.mark.parametrize("circuit", WITNESSES)
def test_fixture_shapes_and_witnesses_satisfy_the_r1cs(circuit):
    pk, zcs = read_zkey(FIX / circuit / f"{circuit}.zkey", check_points=True)
    assert pk.meta["curve"] == "bn254" and pk.meta["points_checked"] != "no"
    assert (pk.n_public, pk.domain_size) == SHAPES[circuit]
    r1cs = read_r1cs(FIX / circuit / f"{circuit}.r1cs")
    if circuit == "bn_pow2":  # constraints + public = 2^6 - 1: the domain is exactly a power of two
        assert r1cs.n_constraints + r1cs.n_public == 63
    for k in range(1, WITNESSES[circuit] + 1):
        w = read_wtns(FIX / circuit / f"witness_{k}.wtns", pk.n_wires, BN254)
        r1cs.check(w)  # satisfied over BN254's r
        bad = w.limbs.copy()
        bad[-1, 0] ^= 1  # negative twin: one wire changed
        with pytest.raises(UnsatisfiedConstraint):
            r1cs.check(bad)


def test_groth16_prove_bn254_accepted_by_snarkjs_and_tampered_rejected(tmp_path, snarkjs):
    triples, twins = [], []
    for circuit, count in WITNESSES.items():
        out = tmp_path / circuit
        given = [FIX / circuit / f"witness_{k}.wtns" for k in range(1, count + 1)]
        res = cli("groth16", "prove", FIX / circuit / f"{circuit}.zkey", *given, "-o", out,
                  f"cache_dir={tmp_path / 'cache'}")
        assert res.returncode == 0, res.stdout + res.stderr
        m = json.loads((out / "manifest.json").read_text())
        assert len(m["proofs"]) == count
        vk = out / "verification_key.json"
        assert json.loads(vk.read_text()) == json.loads((FIX / circuit / "verification_key.json").read_text())
        for e in m["proofs"]:
            k = Path(e["witness"]).stem.split("_")[-1]
            public = json.loads((out / e["public"]).read_text())
            assert public == json.loads((FIX / circuit / f"public_{k}.json").read_text())
            proof = json.loads((out / e["proof"]).read_text())
            assert proof["curve"] == "bn128" and proof["protocol"] == "groth16"
            triples.append((vk, out / e["public"], out / e["proof"]))
            bad_public = tmp_path / f"{circuit}-{k}-public.json"  # negative twin: a public input changed
            bad_public.write_text(json.dumps([str(int(public[0]) + 1)] + public[1:]))
            twins.append((vk, bad_public, out / e["proof"]))
    answers = snarkjs_verify_many(snarkjs, triples + twins)
    assert answers == [True] * len(triples) + [False] * len(twins)


@pytest.mark.parametrize("circuit", WITNESSES)
def test_our_verifier_accepts_snarkjs_bn254_proofs_and_rejects_tampered(circuit):
    vk = read_verification_key(FIX / circuit / "verification_key.json")
    for k in range(1, WITNESSES[circuit] + 1):
        proof = read_proof(FIX / circuit / f"proof_{k}.json")
        public = read_public(FIX / circuit / f"public_{k}.json")
        assert verify(vk, public, proof)
        assert not verify(vk, [(public[0] + 1) % BN254.r] + public[1:], proof)
        assert not verify(vk, public, Proof(a=proof.c, b=proof.b, c=proof.a))  # A and C swapped
        off_curve = proof.a.copy()
        off_curve[0, 1, 0] ^= 1  # y changed: not on the curve
        assert not verify(vk, public, Proof(a=off_curve, b=proof.b, c=proof.c))


def test_pairing_is_bilinear_and_the_check_fails_on_unequal_products():
    g1, g2 = ref.G1_GEN, ref.G2_GEN
    a, b = 1234567, 7654321
    pa, qb = ref.mul(g1, a, ref.G1_OPS), ref.mul(g2, b, ref.G2_OPS)
    pab = ref.mul(g1, a * b, ref.G1_OPS)
    assert ref.pairing_check([(pa, qb), (ref.neg(pab, ref.G1_OPS), g2)])  # e(aP, bQ) = e(abP, Q)
    assert not ref.pairing_check([(pa, qb), (ref.neg(ref.add(pab, g1, ref.G1_OPS), ref.G1_OPS), g2)])
    assert ref.in_g2(qb) and not ref.on_curve((qb[0], ref.f2_add(qb[1], (1, 0))), ref.G2_OPS)


def test_f12_inverse_by_the_norm_matches_the_power_and_refuses_zero():
    rng = random.Random(31)
    for a in ([rng.randrange(ref.P) for _ in range(12)] for _ in range(4)):
        inv = ref.f12_inv(a)
        assert inv == ref.f12_inv_pow(a) and ref.f12_mul(a, inv) == ref.ONE12
        assert ref.f12_mul([a[0] ^ 1] + a[1:], inv) != ref.ONE12  # negative twin: another element
    sparse = [5] + [0] * 5 + [7] + [0] * 5  # an Fp2 element: its norm is itself
    assert ref.f12_inv(sparse) == ref.f12_inv_pow(sparse)
    with pytest.raises(ZeroDivisionError):
        ref.f12_inv([0] * 12)


def test_vk_alphabeta_is_snarkjs_s_computed_once_per_key_and_handed_out_as_a_copy():
    vk = read_zkey(FIX / "bn254" / "bn254.zkey")[0].vk
    want = json.loads((FIX / "bn254" / "verification_key.json").read_text())["vk_alphabeta_12"]
    first = verification_key_json(vk)["vk_alphabeta_12"]
    assert first == want
    first[0][0][0] = "0"  # a caller changing its copy does not change the next answer
    assert verification_key_json(vk)["vk_alphabeta_12"] == want
    other = dataclasses.replace(vk, beta_g2=vk.gamma_g2)  # negative: another key, another value
    assert verification_key_json(other)["vk_alphabeta_12"] != want


def test_vk_alphabeta_is_stored_with_the_converted_zkey_and_a_damaged_copy_is_recomputed(tmp_path, monkeypatch):
    from cuzk_ray import curve_bn254
    from cuzk_ray.formats import snarkjs_json, zkey_cache

    zkey = FIX / "bn254" / "bn254.zkey"
    want = json.loads((FIX / "bn254" / "verification_key.json").read_text())["vk_alphabeta_12"]
    pk, _ = zkey_cache.load_zkey_cached(zkey, tmp_path)  # a miss: converted, e(alpha, beta) stored beside
    (entry,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert json.loads((entry / zkey_cache.ALPHABETA).read_text()) == want
    monkeypatch.setattr(snarkjs_json, "_ALPHABETA", {})  # a new process: nothing computed yet
    pairings = []
    tower = curve_bn254.alphabeta_tower
    monkeypatch.setattr(curve_bn254, "alphabeta_tower", lambda a, b: pairings.append(1) or tower(a, b))
    pk, _ = zkey_cache.load_zkey_cached(zkey, tmp_path)  # a hit: the stored value, no pairing
    assert verification_key_json(pk.vk)["vk_alphabeta_12"] == want and not pairings
    # negative twin: a damaged file is not taken; the value is computed (a pairing) and stored again
    (entry / zkey_cache.ALPHABETA).write_text('[["1", "2"]]')
    monkeypatch.setattr(snarkjs_json, "_ALPHABETA", {})
    assert not snarkjs_json.remember_alphabeta(pk.vk, [["1", "2"]])
    pk, _ = zkey_cache.load_zkey_cached(zkey, tmp_path)
    assert pairings and verification_key_json(pk.vk)["vk_alphabeta_12"] == want
    assert json.loads((entry / zkey_cache.ALPHABETA).read_text()) == want


def test_point_times_int_in_xyzz_is_the_affine_ladder_s():
    from cuzk_ray.curve_bn254 import mul_xyzz

    rng = random.Random(7)
    for ops, g in ((ref.G1_OPS, ref.G1_GEN), (ref.G2_OPS, ref.G2_GEN)):
        for k in [0, 1, 2, 3, ref.R - 1, ref.R, ref.R + 5] + [rng.randrange(ref.R) for _ in range(3)]:
            assert mul_xyzz(g, k, ops) == ref.mul(g, k, ops)
        assert mul_xyzz(None, 5, ops) is None
        assert mul_xyzz(g, 5, ops) != ref.mul(g, 6, ops)  # negative twin: another multiple


def test_hard_part_in_the_cyclotomic_subgroup_is_the_plain_power_by_hard():
    rng = random.Random(5)
    for _ in range(2):
        f = [rng.randrange(ref.P) for _ in range(12)]
        m = ref.f12_mul(ref.f12_frobenius(f, 6), ref.f12_inv(f))
        m = ref.f12_mul(ref.f12_frobenius(m, 2), m)  # the easy part: cyclotomic
        assert ref.cyclotomic_pow_hard(m) == ref.f12_pow(m, ref.HARD)
        # negative twin: outside the subgroup (m^(p^6) is not m's inverse) the shortcut is wrong
        assert ref.cyclotomic_pow_hard(f) != ref.f12_pow(f, ref.HARD)


def test_point_lists_sum_by_the_xyzz_ladder_as_the_reference_msm():
    from cuzk_ray.curve_bn254 import Bn254Point, msm_g1

    pts = [ref.mul(ref.G1_GEN, k, ref.G1_OPS) for k in (3, 5, 7)]
    bases = [Bn254Point(pt, ref.G1_OPS) for pt in pts]
    ks = [11, ref.R - 2, 0]
    assert msm_g1(bases, ks).pt == ref.msm(pts, ks, ref.G1_OPS)
    assert msm_g1(bases, [11, 2, 0]).pt != ref.msm(pts, ks, ref.G1_OPS)  # negative twin


def test_bn254_domain_uses_snarkjs_roots():
    d = Domain(64, "snarkjs", "bn254")
    # ffjavascript's Fr.w[28] for bn128: 5^((r - 1) / 2^28)
    assert BN254.two_adic_root() == 19103219067921713944291392827692070036145651957329286315305642004821462161904
    assert pow(d.omega, 64, BN254.r) == 1 and pow(d.omega, 32, BN254.r) != 1
    assert d.omega_2n**2 % BN254.r == d.omega and d.r == BN254.r
    assert Domain(64).omega != d.omega  # BLS12-381's domain is another field's
    with pytest.raises(ValueError, match=r"between 1 and 2\^27 \(bn254\)"):
        Domain(1 << 28, "snarkjs", "bn254")


def test_both_backends_take_a_bn254_key_and_an_unknown_curve_is_refused_in_one_line():
    """backend=cuda proves BN254 since issue 31 (tests/test_bn254_cuda_backend.py, gpu; more
    refusals in tests/test_bn254_cuda_host.py)."""
    check_backend_curve("cuda", BLS12_381.name)
    check_backend_curve("cpu", BN254.name)
    check_backend_curve("cuda", BN254.name)
    with pytest.raises(ValueError) as info:
        check_backend_curve("cuda", "bls12377")
    assert "\n" not in str(info.value) and "bls12377" in str(info.value)


def test_zkey_cache_hit_keeps_the_bn254_field(tmp_path):
    """A converted-key cache hit gives back the circuit over BN254's r (it came back over
    BLS12-381's once: the prover then refused the key's own circuit); the miss is its twin."""
    from cuzk_ray.formats.zkey_cache import load_zkey_cached

    zkey = FIX / "bn254" / "bn254.zkey"
    pk1, cs1 = load_zkey_cached(zkey, tmp_path)
    pk2, cs2 = load_zkey_cached(zkey, tmp_path)
    assert (pk1.meta["cache"], pk2.meta["cache"]) == ("miss", "hit")
    assert cs1.modulus == cs2.modulus == BN254.r and pk2.curve is BN254
    w = read_wtns(FIX / "bn254" / "witness_1.wtns", pk2.n_wires, BN254)
    a, b, c = cs2.evaluate(w)
    assert all((int(x) * int(y) - int(z)) % BN254.r == 0 for x, y, z in zip(a, b, c))
    assert any((int(x) * int(y) - int(z)) % BLS12_381.r != 0 for x, y, z in zip(a, b, c))
