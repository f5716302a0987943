"""BN254's fast CPU path (issue 31, item 3): every numba kernel bit for bit against ref/bn254.py
(and ref/qap.py, ref/ntt.py) on random inputs and edge cases, and a 2^10 circom circuit proved
with it (fast H and MSMs) that `snarkjs groth16 verify` accepts, with tampered twins.

Fixture tests/fixtures/circom/bn_k10 (tests/fixtures/make_fixtures.sh): jobs/bench_snarkjs.py's
circuit at k = 10 over bn128 (1021 constraints + 2 public signals: a domain of exactly 2^10).
Kernels compile on first use (this file and test_bn254_cpu.py: ~57 s together with an empty numba
cache on the 2-core box, ~15 s with it warm).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from conftest import snarkjs_verify_many

from cuzk_ray import curve_bn254 as cb
from cuzk_ray.backends.cpu import CpuBackend
from cuzk_ray.curves import BLS12_381, BN254
from cuzk_ray.domain import Domain
from cuzk_ray.fast import bn254_msm as M
from cuzk_ray.fast import ntt as F
from cuzk_ray.fast.ec_kernels import signed_digits
from cuzk_ray.fast.limb_arith import field_namespace, limbs_of
from cuzk_ray.fast.ntt_kernels import kernels_for
from cuzk_ray.field import ints_to_limbs, limbs_to_ints
from cuzk_ray.formats.snarkjs import read_wtns, read_zkey
from cuzk_ray.formats.snarkjs_json import proof_json, public_json, verification_key_json
from cuzk_ray.groth16.prover import prove
from cuzk_ray.groth16.verifier import verify
from cuzk_ray.ref import bn254 as ref
from cuzk_ray.ref import ntt as ref_ntt
from cuzk_ray.ref import qap

P, R = BN254.p, BN254.r
FIX = Path(__file__).parent / "fixtures" / "circom" / "bn_k10"
rng = random.Random(31)


def _ints(arr) -> list[int]:
    return [int(x) for x in limbs_to_ints(np.asarray(arr))]


def _tuple(v: int):
    return tuple(np.uint64(x) for x in limbs_of(v, 4))


def _int(t) -> int:
    return sum(int(x) << (64 * i) for i, x in enumerate(t))


@pytest.mark.parametrize("modulus", [P, R])
def test_field_ops_equal_python_ints(modulus):
    ns = field_namespace(modulus, 4)
    mont = pow(2, 256, modulus)
    values = [0, 1, 2, modulus - 1, modulus - 2] + [rng.randrange(modulus) for _ in range(20)]
    for a, b in zip(values, values[::-1] + values):
        ta, tb = _tuple(a), _tuple(b)
        assert _int(ns["mul"](ta, tb)) == a * b * pow(mont, -1, modulus) % modulus
        assert _int(ns["add"](ta, tb)) == (a + b) % modulus
        assert _int(ns["sub"](ta, tb)) == (a - b) % modulus
        assert _int(ns["neg"](ta)) == -a % modulus
    assert _int(ns["mul"](_tuple(3), _tuple(5))) != 15  # negative twin: a Montgomery product, not a * b


def test_reduce_in_place_brings_any_256_bit_value_below_r():
    values = [0, R - 1, R, 2 * R + 5, (1 << 256) - 1, 5 * R + 7] + [rng.randrange(1 << 256) for _ in range(50)]
    x = ints_to_limbs(values, 4)
    kernels_for(R).reduce_in_place(x)
    assert _ints(x) == [v % R for v in values]
    y = ints_to_limbs(values, 4)
    kernels_for(BLS12_381.r).reduce_in_place(y)  # twin: BLS12-381's kernels reduce mod its r
    assert _ints(y) != [v % R for v in values]


@pytest.mark.parametrize("n", [1, 2, 4, 16, 1 << 11])
def test_bn254_h_and_ntts_equal_the_reference(n):
    d = Domain(n, "snarkjs", "bn254")
    a, b, c = ([rng.randrange(R) for _ in range(n)] for _ in range(3))
    a[0], b[-1], c[0] = R - 1, 0, R - 1
    want = [int(v) for v in qap.compute_h(*(np.array(x, dtype=object) for x in (a, b, c)), d)]
    for threads in (1, 2):
        assert _ints(F.compute_h_fast(a, b, c, d, threads=threads)) == want
    obj = np.array(a, dtype=object)
    assert _ints(F.ntt(a, d)) == [int(v) for v in ref_ntt.ntt(obj, d)]
    assert _ints(F.intt(a, d)) == [int(v) for v in ref_ntt.intt(obj, d)]
    assert _ints(F.coset_intt(F.coset_ntt(a, 7, d), 7, d)) == a
    if n > 1:  # twin: BLS12-381's domain of the same size gives another H
        assert _ints(F.compute_h_fast(a, b, c, Domain(n), threads=1)) != want


def test_signed_digits_recombine_to_the_scalar():
    scalars = [0, 1, R - 1, (1 << 253) + 12345] + [rng.randrange(R) for _ in range(30)]
    limbs = ints_to_limbs(scalars, 4)
    for c in (4, 7, 13, 16):
        nw = M.SCALAR_BITS // c + 1
        d = np.empty((nw, len(scalars)), dtype=np.int32)
        signed_digits(limbs, c, d)
        assert np.abs(d).max() <= 1 << (c - 1)
        assert [sum(int(d[w, i]) << (c * w) for w in range(nw)) for i in range(len(scalars))] == scalars


def _g1(n):
    return [ref.mul(ref.G1_GEN, rng.randrange(1, R), ref.G1_OPS) for _ in range(n)]


def _g2(n):
    return [ref.mul(ref.G2_GEN, rng.randrange(1, R), ref.G2_OPS) for _ in range(n)]


def _with_edge_cases(pts, scalars, ops):
    """Zero scalar, r - 1, repeated points (doubling in a bucket), P and -P, infinity."""
    pts, scalars = list(pts), list(scalars)
    scalars[0], scalars[1] = 0, R - 1
    pts[3] = pts[2]
    scalars[3] = scalars[2]
    pts[4] = ref.neg(pts[2], ops)
    pts[5] = None
    return pts, scalars


@pytest.mark.parametrize("affine", [False, True])
@pytest.mark.parametrize("c", [None, 4, 13])
def test_g1_msm_equals_the_reference(c, affine, monkeypatch):
    """XYZZ buckets and the batched affine ones (AFFINE_MIN_SIZE 0: on small MSMs too; batches
    of 2, so that conflicts in an open batch and full batches both happen)."""
    monkeypatch.setattr(M, "AFFINE_MIN_SIZE", 0 if affine else 1 << 30)
    monkeypatch.setattr(M, "AFFINE_BATCH", 2)
    if c is not None:  # the window width of a large MSM on a small one: the kernels are the same
        monkeypatch.setattr(M, "window_bits", lambda n: c)
    for n in (1, 2, 7, 41):
        pts, scalars = _g1(n), [rng.randrange(R) for _ in range(n)]
        if n >= 7:
            pts, scalars = _with_edge_cases(pts, scalars, ref.G1_OPS)
        bases = M.MsmBases.g1(cb.g1_array(pts))
        want = ref.msm(pts, scalars, ref.G1_OPS)
        assert bases.msm(scalars) == want
        assert bases.msm(ints_to_limbs(scalars, 4)) == want
        if n >= 2:
            assert bases.msm(scalars[1:], start=1) == ref.msm(pts[1:], scalars[1:], ref.G1_OPS)
            bad = scalars[:-1] + [(scalars[-1] + 1) % R]  # twin: one scalar changed
            assert bases.msm(bad) != want


@pytest.mark.parametrize("affine", [False, True])
def test_g1_msm_of_cancelling_terms_and_zero_scalars_is_infinity(affine, monkeypatch):
    monkeypatch.setattr(M, "AFFINE_MIN_SIZE", 0 if affine else 1 << 30)
    (p,) = _g1(1)
    bases = M.MsmBases.g1(cb.g1_array([p, p, ref.neg(p, ref.G1_OPS)]))
    assert bases.msm([0, 0, 0]) is None
    assert bases.msm([5, 3, 8]) is None  # 5P + 3P - 8P
    assert bases.msm([5, 3, 7]) == p
    assert bases.msm([1, 1, 0]) == ref.add(p, p, ref.G1_OPS)
    assert bases.msm([], start=0) is None  # an empty sum
    with pytest.raises(ValueError, match="3 bases but 2 scalars"):
        bases.msm([1, 2])


@pytest.mark.parametrize("affine", [False, True])
@pytest.mark.parametrize("c", [None, 13])
def test_g2_msm_equals_the_reference(c, affine, monkeypatch):
    monkeypatch.setattr(M, "AFFINE_MIN_SIZE", 0 if affine else 1 << 30)
    monkeypatch.setattr(M, "AFFINE_BATCH", 2)
    if c is not None:
        monkeypatch.setattr(M, "window_bits", lambda n: c)
    for n in (1, 9):
        pts, scalars = _g2(n), [rng.randrange(R) for _ in range(n)]
        if n >= 7:
            pts, scalars = _with_edge_cases(pts, scalars, ref.G2_OPS)
        bases = M.MsmBases.g2(cb.g2_array(pts))
        want = ref.msm(pts, scalars, ref.G2_OPS)
        assert bases.msm(scalars) == want
        assert bases.msm([(s + 1) % R for s in scalars]) != want  # twin


def test_xyzz_addition_law_matches_the_reference():
    """add_rows / madd_rows / dbl_rows on P + Q, P + P, P + (-P), P + infinity, infinity + Q."""
    k = M.group_kernels("g1")
    p, q = _g1(2)
    cases = [(p, q), (p, p), (p, ref.neg(p, ref.G1_OPS)), (p, None), (None, q)]
    affine = M.to_mont_rows(cb.g1_array([b for _, b in cases]), 2)
    lhs = np.zeros((len(cases), 16), dtype=np.uint64)
    k.madd_rows(lhs, M.to_mont_rows(cb.g1_array([a for a, _ in cases]), 2), lhs)  # lhs = a (from infinity)
    out = np.zeros_like(lhs)
    k.madd_rows(lhs, affine, out)
    want = [ref.add(a, b, ref.G1_OPS) for a, b in cases]
    assert [M.xyzz_row_to_affine(row, "g1") for row in out] == want
    rhs = np.zeros_like(lhs)
    k.madd_rows(rhs, affine, rhs)
    k.add_rows(lhs, rhs, out)
    assert [M.xyzz_row_to_affine(row, "g1") for row in out] == want
    k.dbl_rows(lhs, out)
    assert [M.xyzz_row_to_affine(row, "g1") for row in out] == [ref.add(a, a, ref.G1_OPS) for a, _ in cases]
    assert M.xyzz_row_to_affine(out[0], "g1") != ref.add(p, q, ref.G1_OPS)  # twin: 2P is not P + Q


def test_k10_circuit_proved_on_the_fast_path_snarkjs_accepts(tmp_path, snarkjs):
    """The fast H (threshold 0) and the numba MSMs prove the 2^10 circuit; snarkjs accepts both
    witnesses' proofs and rejects a changed public input and a proof with A and C swapped."""
    pk, cs = read_zkey(FIX / "bn_k10.zkey")
    assert pk.curve is BN254 and pk.domain_size == 1 << 10
    backend = CpuBackend(fast_h_min_size=0)
    vk_path = tmp_path / "vk.json"
    vk_path.write_text(json.dumps(verification_key_json(pk.vk)))
    triples, twins = [], []
    for k in (1, 2):
        w = read_wtns(FIX / f"witness_{k}.wtns", pk.n_wires, BN254)
        a, b, c = qap.evaluations(cs, w)
        h_ref = qap.compute_h(a, b, c, Domain(1 << 10, "snarkjs", "bn254"))
        assert _ints(backend.compute_h_from_witness(cs, w).limbs) == [int(v) for v in h_ref]
        r, s = rng.randrange(R), rng.randrange(R)
        proof = prove(pk, cs, w, r, s, backend)
        public = _ints(w.limbs)[1 : pk.n_public + 1]
        assert verify(pk.vk, public, proof)
        proof_path, public_path = tmp_path / f"proof_{k}.json", tmp_path / f"public_{k}.json"
        proof_path.write_text(json.dumps(proof_json(proof)))
        public_path.write_text(json.dumps(public_json(public)))
        assert json.loads(public_path.read_text()) == json.loads((FIX / f"public_{k}.json").read_text())
        triples.append((vk_path, public_path, proof_path))
        bad_public = tmp_path / f"bad_public_{k}.json"
        bad_public.write_text(json.dumps(public_json([(public[0] + 1) % R] + public[1:])))
        swapped = tmp_path / f"swapped_{k}.json"
        swapped.write_text(json.dumps(proof_json(type(proof)(a=proof.c, b=proof.b, c=proof.a))))
        twins += [(vk_path, bad_public, proof_path), (vk_path, public_path, swapped)]
    assert snarkjs_verify_many(snarkjs, triples + twins) == [True] * len(triples) + [False] * len(twins)


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_fixed_base_tables_equal_the_reference_and_are_reused(group, tmp_path, monkeypatch):
    """Fixed-base tables (TABLE_MIN_SIZE 0: on a small query) give the reference sum, whole and
    from a start (the G2 halves); the table is stored once and memory-mapped by the next key."""
    monkeypatch.setattr(M, "TABLE_MIN_SIZE", 0)
    monkeypatch.setattr(M, "TABLE_DIR", str(tmp_path))
    monkeypatch.setattr(M, "AFFINE_BATCH", 4)
    ops, pts = (ref.G1_OPS, _g1(12)) if group == "g1" else (ref.G2_OPS, _g2(8))
    pts, scalars = _with_edge_cases(pts, [rng.randrange(R) for _ in pts], ops)
    arr = cb.g1_array(pts) if group == "g1" else cb.g2_array(pts)
    bases = M.MsmBases.make(arr, group)
    assert bases.table is not None and len(bases.table) == len(pts) * M.table_windows(M.TABLE_C)
    want = ref.msm(pts, scalars, ops)
    assert bases.msm(scalars) == want
    assert bases.msm(scalars[3:], start=3) == ref.msm(pts[3:], scalars[3:], ops)
    assert bases.msm([(s + 1) % R for s in scalars]) != want  # twin
    (stored,) = list(tmp_path.glob(f"{group}-*.npy"))
    again = M.MsmBases.make(arr, group)
    assert isinstance(again.table, np.memmap) and again.msm(scalars) == want
    assert list(tmp_path.glob(f"{group}-*.npy")) == [stored]


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_fast_point_check_finds_the_first_invalid_point(group, monkeypatch):
    """fast/bn254_msm.first_invalid (numba) against curve_bn254's Python-int answer: valid points
    (infinity included) pass; a point off the curve and (G2) one on the twist but outside the
    subgroup are found at their index, the first of two bad ones named."""
    ops, pts = (ref.G1_OPS, _g1(6)) if group == "g1" else (ref.G2_OPS, _g2(6))
    pts[2] = None
    array = cb.g1_array if group == "g1" else cb.g2_array
    arr = array(pts)
    assert M.first_invalid(arr) is None
    off = arr.copy()
    off[4, 1, ..., 0] ^= 1  # y changed
    off[5, 1, ..., 0] ^= 1
    assert M.first_invalid(off) == (4, "point is not on the curve")
    monkeypatch.setattr(cb, "FAST_CHECK_MIN_POINTS", 1 << 30)
    assert cb.first_invalid_point(off) == (4, "point is not on the curve")  # the reference agrees
    if group == "g2":  # a twist point outside G2 (the twist's cofactor is not 1): the first x = k that has one
        y, k = None, 1
        while y is None:  # search x = k until x^3 + b' is a square in Fp2 (its root by the reference)
            x = (k, 0)
            rhs = ref.f2_add(ref.f2_mul(ref.f2_sqr(x), x), ref.B2)
            y = _fp2_sqrt(rhs)
            k += 1
        outside = arr.copy()
        outside[3] = cb.g2_array([(x, y)])[0]
        assert not ref.in_g2((x, y)) and ref.on_curve((x, y), ops)
        assert M.first_invalid(outside) == (3, "point is not in the subgroup of order r")
        assert cb.first_invalid_point(outside) == (3, "point is not in the subgroup of order r")


def _fp2_sqrt(a):
    """A square root in Fp2 (p = 3 mod 4; Adj-Rodriguez's algorithm 9), None when there is none."""
    a1 = ref.f2_pow(a, (P - 3) // 4)
    alpha = ref.f2_mul(a1, ref.f2_mul(a1, a))
    x0 = ref.f2_mul(a1, a)
    if alpha == (P - 1, 0):
        return ref.f2_mul((0, 1), x0)
    b = ref.f2_pow(ref.f2_add((1, 0), alpha), (P - 1) // 2)
    y = ref.f2_mul(b, x0)
    return y if ref.f2_sqr(y) == a else None
