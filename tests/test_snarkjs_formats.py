"""Readers of circom/snarkjs files (.r1cs, .wtns, .zkey) against committed fixtures.

The fixtures under tests/fixtures/circom/ were made with circom 2.2.3 (npm circom2 0.2.23,
--prime bls12381) and snarkjs 0.7.6 by tests/fixtures/make_fixtures.sh (see its header).
Fast, no Ray. The strongest check is test_qap_proof_verifies: a proof assembled from the decoded
key with cuzk_ray.ref.qap must pass the pairing check, which fails if any part of the decoding is off.
"""

from __future__ import annotations

import json
import random
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest
from py_arkworks_bls12381 import GT, G1Point, G2Point, Scalar

from cuzk_ray.curve import g1_points, g2_points, scalars
from cuzk_ray.curves import BLS12_381
from cuzk_ray.field import FP_R_INV, FR_R_INV, Q_MOD, R_MOD, ints_to_limbs, limbs_to_ints
from cuzk_ray.formats import snarkjs
from cuzk_ray.formats.binfile import BN254_R
from cuzk_ray.formats.montgomery import redc_limbs
from cuzk_ray.formats.snarkjs import FormatError, check_zkey_against_r1cs, read_r1cs, read_wtns, read_zkey
from cuzk_ray.formats.zkey_cache import load_zkey_cached
from cuzk_ray.groth16.keys import present_points
from cuzk_ray.r1cs import UnsatisfiedConstraint
from cuzk_ray.ref.qap import compute_h, domain_size, evaluations

FIX = Path(__file__).parent / "fixtures" / "circom"
WITNESSES = {"linear": 3, "pow2": 2}
CASES = [(c, k) for c, n in WITNESSES.items() for k in range(1, n + 1)]


def paths(circuit: str) -> dict[str, Path]:
    d = FIX / circuit
    return {"r1cs": d / f"{circuit}.r1cs", "zkey": d / f"{circuit}.zkey", "vk": d / "verification_key.json"}


@pytest.fixture(scope="module")
def loaded():
    """circuit -> (r1cs ConstraintSystem, ProvingKey, zkey ConstraintSystem); parsed once."""
    out = {}
    for c in WITNESSES:
        p = paths(c)
        out[c] = (read_r1cs(p["r1cs"]), *read_zkey(p["zkey"]))
    return out


def witness(circuit: str, k: int, n_wires=None) -> np.ndarray:
    return read_wtns(FIX / circuit / f"witness_{k}.wtns", n_wires)


def load_json(circuit: str, name: str):
    return json.loads((FIX / circuit / name).read_text())


@pytest.mark.parametrize("modulus,limbs,r_inv", [(Q_MOD, 6, FP_R_INV), (R_MOD, 4, FR_R_INV)])
@pytest.mark.parametrize("chunk", [1, 7, 1 << 14])
def test_redc_limbs_matches_python_ints(modulus, limbs, r_inv, chunk):
    rng = random.Random(modulus % 1000 + chunk)
    values = [0, 1, 2, modulus - 1, modulus - 2, 2**64 - 1, 2**64, modulus >> 1]
    values += [rng.randrange(modulus) for _ in range(300)] + [modulus - 1 - rng.randrange(2**70) for _ in range(30)]
    got = limbs_to_ints(redc_limbs(ints_to_limbs(values, limbs), modulus, chunk)).tolist()
    assert got == [v * r_inv % modulus for v in values]
    assert got != values[:]  # it changed something: not the identity


# ---------------------------------------------------------------------------------------------
# Consistency of the three readers


@pytest.mark.parametrize("circuit", WITNESSES)
def test_sizes_are_consistent(loaded, circuit):
    r1cs, pk, zcs = loaded[circuit]
    vk_json = load_json(circuit, "verification_key.json")
    assert pk.n_wires == r1cs.n_wires == zcs.n_wires
    assert pk.n_public == r1cs.n_public == zcs.n_public == vk_json["nPublic"]
    assert zcs.n_constraints == r1cs.n_constraints == pk.meta["n_constraints"]
    assert pk.domain_size == domain_size(r1cs.n_constraints, r1cs.n_public)
    # stored by density: a point per wire that appears in A (with the public-input rows) / in B
    in_a = np.union1d(r1cs.A.indices, np.arange(r1cs.n_public + 1))
    in_b = np.unique(r1cs.B.indices)
    a_wires = np.arange(r1cs.n_wires) if pk.a_wires is None else pk.a_wires
    assert np.array_equal(a_wires, in_a) and np.array_equal(pk.b_wires, in_b)
    assert pk.b_wires is not None and len(in_b) < r1cs.n_wires  # the fixtures exercise the density
    assert pk.a_query.shape == (len(in_a), 2, 6) and pk.b_g1_query.shape == (len(in_b), 2, 6)
    assert pk.b_g2_query.shape == (len(in_b), 2, 2, 6)
    assert all(present_points(q).all() for q in (pk.a_query, pk.b_g1_query, pk.b_g2_query))
    assert pk.l_query.shape == (r1cs.n_wires - r1cs.n_public - 1, 2, 6)
    assert pk.h_query.shape == (pk.domain_size, 2, 6)
    assert pk.vk.ic.shape == (r1cs.n_public + 1, 2, 6)
    assert pk.meta["curve"] == "bls12381" and pk.meta["source"].endswith(f"{circuit}.zkey")
    assert r1cs.name == f"{circuit}.r1cs" and zcs.name == f"{circuit}.zkey" and zcs.C is None
    for k in range(1, WITNESSES[circuit] + 1):
        assert witness(circuit, k).shape == (r1cs.n_wires, 4)


def test_fixtures_cover_the_issue(loaded):
    r1cs, pk, _ = loaded["pow2"]
    m, p = r1cs.n_constraints, r1cs.n_public
    assert m + p == 8 and pk.domain_size == 16  # power of two: the domain doubles
    lin = loaded["linear"][0]
    assert sum(lin.A.row(j) == [] and lin.B.row(j) == [] for j in range(lin.n_constraints)) >= 2  # linear
    coeffs = np.concatenate([m.coefficients() for m in (lin.A, lin.B, lin.C)])
    assert any(c > R_MOD // 2 for c in coeffs)  # negative coefficients
    assert lin.n_public == 4  # two outputs and two public inputs


@pytest.mark.parametrize("circuit,k", CASES)
def test_witness_satisfies_r1cs_and_matches_public_json(loaded, circuit, k):
    r1cs = loaded[circuit][0]
    w = witness(circuit, k, r1cs.n_wires)
    r1cs.check(w)
    public = [int(x) for x in load_json(circuit, f"public_{k}.json")]
    assert limbs_to_ints(w[1 : r1cs.n_public + 1]).tolist() == public


@pytest.mark.parametrize("circuit", WITNESSES)
def test_tampered_witness_fails_naming_a_constraint(loaded, circuit):
    r1cs = loaded[circuit][0]
    w = np.array(witness(circuit, 1))  # a writable copy of the FrVector's limbs
    w[-1, 0] ^= 1  # the last wire is internal: only a constraint can notice
    with pytest.raises(UnsatisfiedConstraint, match=rf"{circuit}.r1cs: constraint \d+ of {r1cs.n_constraints}"):
        r1cs.check(w)


@pytest.mark.parametrize("circuit", WITNESSES)
def test_zkey_matrices_equal_r1cs(loaded, circuit):
    r1cs, _, zcs = loaded[circuit]
    check_zkey_against_r1cs(zcs, r1cs)
    w = limbs_to_ints(witness(circuit, 1))
    a_r, b_r, c_r = r1cs.evaluate(w)
    a_z, b_z, c_z = zcs.evaluate(w)
    assert list(a_z) == list(a_r) and list(b_z) == list(b_r) and list(c_z) == list(c_r)
    for j in range(r1cs.n_constraints):
        assert sorted(zcs.A.row(j)) == sorted(r1cs.A.row(j)) and sorted(zcs.B.row(j)) == sorted(r1cs.B.row(j))


def test_zkey_against_another_circuit_is_rejected(loaded):
    _, _, zcs = loaded["linear"]
    with pytest.raises(FormatError, match=r"linear.zkey: n_wires: expected 8 \(from pow2.r1cs\), found 9"):
        check_zkey_against_r1cs(zcs, loaded["pow2"][0], "linear.zkey")


def _g1_json(arr) -> list[str]:
    x, y = limbs_to_ints(arr.reshape(2, 6))
    return [str(x), str(y), "1"]


def _g2_json(arr) -> list[list[str]]:
    x0, x1, y0, y1 = limbs_to_ints(arr.reshape(4, 6))
    return [[str(x0), str(x1)], [str(y0), str(y1)], ["1", "0"]]


@pytest.mark.parametrize("circuit", WITNESSES)
def test_vk_equals_snarkjs_json(loaded, circuit):
    vk = loaded[circuit][1].vk
    js = load_json(circuit, "verification_key.json")
    assert js["curve"] == "bls12381" and js["protocol"] == "groth16"
    assert _g1_json(vk.alpha_g1) == js["vk_alpha_1"]
    for name in ("beta", "gamma", "delta"):
        assert _g2_json(getattr(vk, f"{name}_g2")) == js[f"vk_{name}_2"], name
    assert [_g1_json(p) for p in vk.ic] == js["IC"]


@pytest.mark.parametrize("circuit", WITNESSES)
def test_query_points_are_on_the_curve(loaded, circuit):
    pk = loaded[circuit][1]
    rng = random.Random(3)
    g1 = [pk.beta_g1[0], pk.delta_g1[0], pk.vk.alpha_g1[0]]
    for q in (pk.a_query, pk.b_g1_query, pk.l_query, pk.h_query, pk.vk.ic):
        nz = [p for p in q if p.any()]
        g1 += rng.sample(nz, min(3, len(nz)))
    for p in g1:  # the checked constructors reject points off the curve or outside the subgroup
        assert G1Point.from_xy_bytes_le(p.tobytes()).is_in_subgroup()
    for p in [pk.vk.beta_g2[0], pk.vk.delta_g2[0]] + [p for p in pk.b_g2_query if p.any()][:3]:
        assert G2Point.from_xy_bytes_le(p.tobytes()).is_in_subgroup()
    bad = g1[0].copy()
    bad[0, 0] ^= 1
    with pytest.raises(ValueError):
        G1Point.from_xy_bytes_le(bad.tobytes())


# ---------------------------------------------------------------------------------------------
# The key is consistent with the QAP: a proof assembled from it verifies (and tampering breaks it)


def _msm(points, values):
    return G1Point.multiexp_unchecked(points, scalars(values))


def _prove(pk, cs, w, r: int, s: int):
    """Groth16 proof in the snarkjs convention (DESIGN.md section 4), test-only reference."""
    a, b, c = evaluations(cs, w)
    h = compute_h(a, b, c)
    alpha, beta1, delta1 = (g1_points(x)[0] for x in (pk.vk.alpha_g1, pk.beta_g1, pk.delta_g1))
    beta2, delta2 = g2_points(pk.vk.beta_g2)[0], g2_points(pk.vk.delta_g2)[0]
    R, S = Scalar(r), Scalar(s)
    wa = w if pk.a_wires is None else w[pk.a_wires]  # a key stored by density: its wires' values
    wb = w if pk.b_wires is None else w[pk.b_wires]
    pi_a = alpha + _msm(g1_points(pk.a_query), wa) + delta1 * R
    pi_b = beta2 + G2Point.multiexp_unchecked(g2_points(pk.b_g2_query), scalars(wb)) + delta2 * S
    b1 = beta1 + _msm(g1_points(pk.b_g1_query), wb) + delta1 * S
    priv = w[pk.n_public + 1 :]
    pi_c = (_msm(g1_points(pk.l_query), priv) + _msm(g1_points(pk.h_query), h)
            + pi_a * S + b1 * R - delta1 * Scalar(r * s % R_MOD))
    return pi_a, pi_b, pi_c


def _verify(vk, public, pi_a, pi_b, pi_c) -> bool:
    """e(A, B) = e(alpha, beta) e(sum pub IC, gamma) e(C, delta)."""
    ic = g1_points(vk.ic)
    vk_x = ic[0] + _msm(ic[1:], public)
    g2 = [g2_points(x)[0] for x in (vk.beta_g2, vk.gamma_g2, vk.delta_g2)]
    return GT.pairing_check([-pi_a, g1_points(vk.alpha_g1)[0], vk_x, pi_c], [pi_b, *g2])


@pytest.mark.parametrize("circuit,k", CASES)
def test_qap_proof_verifies(loaded, circuit, k):
    _, pk, zcs = loaded[circuit]
    rng = random.Random(1000 + k)
    w = list(limbs_to_ints(witness(circuit, k, pk.n_wires)))
    public = w[1 : pk.n_public + 1]
    pi_a, pi_b, pi_c = _prove(pk, zcs, np.array(w, dtype=object), rng.randrange(R_MOD), rng.randrange(R_MOD))
    assert _verify(pk.vk, public, pi_a, pi_b, pi_c)
    # negatives: a wrong public input, a tampered proof element
    assert not _verify(pk.vk, [(public[0] + 1) % R_MOD] + public[1:], pi_a, pi_b, pi_c)
    assert not _verify(pk.vk, public, pi_a, pi_b, pi_c + G1Point())


@pytest.mark.parametrize("circuit", WITNESSES)
def test_qap_proof_of_unsatisfying_witness_fails(loaded, circuit):
    _, pk, zcs = loaded[circuit]
    w = limbs_to_ints(witness(circuit, 1))
    w[-1] = (w[-1] + 1) % R_MOD  # private internal wire: a*b no longer matches the key's C
    pi = _prove(pk, zcs, w, 5, 7)
    assert not _verify(pk.vk, list(w[1 : pk.n_public + 1]), *pi)


@pytest.mark.parametrize("circuit,k", CASES)
def test_snarkjs_proof_verifies_with_decoded_vk(loaded, circuit, k):
    vk = loaded[circuit][1].vk
    proof = load_json(circuit, f"proof_{k}.json")
    public = [int(x) for x in load_json(circuit, f"public_{k}.json")]
    xy = lambda v: b"".join(int(t).to_bytes(48, "little") for t in v)  # noqa: E731
    pi_a = G1Point.from_xy_bytes_le(xy(proof["pi_a"][:2]))
    pi_b = G2Point.from_xy_bytes_le(xy(proof["pi_b"][0] + proof["pi_b"][1]))
    pi_c = G1Point.from_xy_bytes_le(xy(proof["pi_c"][:2]))
    assert _verify(vk, public, pi_a, pi_b, pi_c)
    assert not _verify(vk, public[::-1] if len(set(public)) > 1 else [public[0] + 1], pi_a, pi_b, pi_c)


# ---------------------------------------------------------------------------------------------
# The converted-key cache


def test_zkey_cache_hit_skips_parse(tmp_path, monkeypatch, loaded):
    src = tmp_path / "k.zkey"
    shutil.copy(paths("linear")["zkey"], src)
    pk1, cs1 = load_zkey_cached(src, tmp_path / "cache")
    assert pk1.meta["cache"] == "miss" and len(pk1.meta["sha256"]) == 64
    def no_parse(path):
        raise RuntimeError("parsed again")

    monkeypatch.setattr("cuzk_ray.formats.zkey_cache.read_zkey", no_parse)
    pk2, cs2 = load_zkey_cached(src, tmp_path / "cache")
    assert pk2.meta["cache"] == "hit" and pk2.meta["n_constraints"] == pk1.meta["n_constraints"]
    _, ref_pk, ref_cs = loaded["linear"]
    for name in ProvingKey_fields():
        assert np.array_equal(_get(pk2, name), _get(ref_pk, name)), name
    check_zkey_against_r1cs(cs2, loaded["linear"][0])
    # another file (different hash) is parsed, not served from the entry of the first
    other = tmp_path / "other.zkey"
    shutil.copy(paths("pow2")["zkey"], other)
    with pytest.raises(RuntimeError, match="parsed again"):
        load_zkey_cached(other, tmp_path / "cache")


def test_zkey_cache_repairs_a_damaged_entry(tmp_path):
    pk1, _ = load_zkey_cached(paths("pow2")["zkey"], tmp_path)
    entry = tmp_path / pk1.meta["sha256"]
    (entry / "pk.h_query.npy").write_bytes(b"garbage")
    pk2, _ = load_zkey_cached(paths("pow2")["zkey"], tmp_path)
    assert pk2.meta["cache"] == "miss" and np.array_equal(pk2.h_query, pk1.h_query)
    assert load_zkey_cached(paths("pow2")["zkey"], tmp_path)[0].meta["cache"] == "hit"
    assert [p.name for p in tmp_path.iterdir()] == [pk1.meta["sha256"]]  # no temp dirs left


def test_zkey_cache_redoes_a_dense_conversion_of_version_1(tmp_path, monkeypatch, loaded):
    """An entry written before keys were stored by density (version 1: dense a/b queries, no index
    arrays) is converted again, not loaded as it is or mixed with a density key."""
    from cuzk_ray.formats import zkey_cache

    _, ref_pk, _ = loaded["linear"]
    real_read = zkey_cache.read_zkey
    monkeypatch.setattr(zkey_cache, "CACHE_VERSION", 1)
    monkeypatch.setattr(zkey_cache, "read_zkey", lambda p: (lambda k, c: (k.to_dense(), c))(*real_read(p)))
    old, _ = load_zkey_cached(paths("linear")["zkey"], tmp_path)
    assert old.dense and len(old.a_query) == old.n_wires  # what a version-1 entry held
    monkeypatch.setattr(zkey_cache, "CACHE_VERSION", 2)
    monkeypatch.setattr(zkey_cache, "read_zkey", real_read)
    pk, _ = load_zkey_cached(paths("linear")["zkey"], tmp_path)
    assert pk.meta["cache"] == "miss" and not pk.dense
    assert np.array_equal(pk.b_wires, ref_pk.b_wires) and np.array_equal(pk.a_query, ref_pk.a_query)
    again, _ = load_zkey_cached(paths("linear")["zkey"], tmp_path)  # the new entry is a hit, by density
    assert again.meta["cache"] == "hit" and np.array_equal(again.a_wires, ref_pk.a_wires)
    assert np.array_equal(again.b_g2_query, ref_pk.b_g2_query)


def ProvingKey_fields():  # noqa: N802
    return ["vk.alpha_g1", "vk.beta_g2", "vk.gamma_g2", "vk.delta_g2", "vk.ic", "beta_g1", "delta_g1",
            "a_query", "b_g1_query", "b_g2_query", "l_query", "h_query", "a_wires", "b_wires"]


def _get(pk, name):
    obj = pk
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


# ---------------------------------------------------------------------------------------------
# Bad input: each raises FormatError with a one-line message naming the file and the field


READERS = {"r1cs": read_r1cs, "wtns": read_wtns, "zkey": read_zkey}
FILES = {"r1cs": FIX / "linear" / "linear.r1cs", "wtns": FIX / "linear" / "witness_1.wtns",
         "zkey": FIX / "linear" / "linear.zkey"}


def sections(data: bytes) -> dict[int, tuple[int, int]]:
    """id -> (offset of the section's length field, offset of its payload); test-side parser."""
    out, pos = {}, 12
    for _ in range(struct.unpack_from("<I", data, 8)[0]):
        sid, length = struct.unpack_from("<IQ", data, pos)
        out[sid] = (pos + 4, pos + 12)
        pos += 12 + length
    return out


def rewrite(tmp_path, kind: str, edit) -> Path:
    data = bytearray(FILES[kind].read_bytes())
    edit(data, sections(bytes(data)))
    out = tmp_path / f"bad.{kind}"
    out.write_bytes(bytes(data))
    return out


def raises(kind: str, path, *fragments):
    with pytest.raises(FormatError) as info:
        READERS[kind](path)
    msg = str(info.value)
    assert "\n" not in msg and str(path) in msg, msg
    for frag in fragments:
        assert frag in msg, (frag, msg)
    return msg


def reorder(data: bytes, order) -> bytes:
    """The same container with its sections rewritten in ``order`` (a function of the id list)."""
    secs = sections(data)
    payload = {sid: data[off - 8 : off + struct.unpack_from("<Q", data, off - 8)[0]] for sid, (_, off) in secs.items()}
    out = bytearray(data[:12])
    for sid in order(list(secs)):
        out += struct.pack("<I", sid) + payload[sid]
    return bytes(out)


@pytest.mark.parametrize("kind", READERS)
def test_sections_in_any_order(tmp_path, kind):
    p = tmp_path / f"rev.{kind}"
    p.write_bytes(reorder(FILES[kind].read_bytes(), lambda ids: ids[::-1]))
    assert p.read_bytes() != FILES[kind].read_bytes()
    a, b = READERS[kind](FILES[kind]), READERS[kind](p)
    if kind == "wtns":
        assert np.array_equal(a, b)
    elif kind == "r1cs":
        assert [a.A.row(j) + a.B.row(j) + a.C.row(j) for j in range(a.n_constraints)] == \
               [b.A.row(j) + b.B.row(j) + b.C.row(j) for j in range(b.n_constraints)]
    else:
        for name in ProvingKey_fields():
            assert np.array_equal(_get(a[0], name), _get(b[0], name)), name


@pytest.mark.parametrize("kind", READERS)
def test_duplicate_section(tmp_path, kind):
    data = FILES[kind].read_bytes()
    p = tmp_path / f"dup.{kind}"
    dup = reorder(data, lambda ids: ids + [ids[-1]])
    p.write_bytes(dup[:8] + struct.pack("<I", struct.unpack_from("<I", dup, 8)[0] + 1) + dup[12:])
    raises(kind, p, "expected one section with this id, found a second one")


@pytest.mark.parametrize("kind", READERS)
def test_missing_file(tmp_path, kind):
    raises(kind, tmp_path / f"nope.{kind}", "file not found")


@pytest.mark.parametrize("kind", READERS)
def test_truncated_anywhere(tmp_path, kind):
    data = FILES[kind].read_bytes()
    cuts = sorted({0, 3, 11, 12, 20, 40, len(data) // 3, len(data) // 2, len(data) - 33, len(data) - 1})
    for cut in cuts:
        p = tmp_path / f"cut{cut}.{kind}"
        p.write_bytes(data[:cut])
        msg = raises(kind, p)
        assert "truncated" in msg or "at least 12 bytes" in msg or "file size" in msg, msg


def test_truncated_zkey_message_says_which_section(tmp_path):
    data = FILES["zkey"].read_bytes()
    p = tmp_path / "t.zkey"
    p.write_bytes(data[:-100])
    raises("zkey", p, "section 10 length", "truncated")


@pytest.mark.parametrize("kind", READERS)
def test_corrupt_magic(tmp_path, kind):
    p = rewrite(tmp_path, kind, lambda d, s: d.__setitem__(slice(0, 4), b"junk"))
    raises(kind, p, f"magic: expected b'{kind}', found b'junk'")


@pytest.mark.parametrize("kind,name", [("r1cs", "bn254.r1cs"), ("wtns", "witness_1.wtns"), ("zkey", "bn254.zkey")])
def test_bn254_files_are_read_as_bn254(kind, name):
    """Each reader takes a BN254 file and says so (issue 31; they refused it before)."""
    got = READERS[kind](FIX / "bn254" / name)
    if kind == "zkey":
        assert got[0].meta["curve"] == "bn254" and got[0].a_query.shape[1:] == (2, 4) and got[1].modulus == BN254_R
    elif kind == "r1cs":
        assert got.modulus == BN254_R
    else:
        assert np.asarray(got)[0].tolist() == [1, 0, 0, 0]
    # negative twin: a BN254 witness where a BLS12-381 one is wanted is refused naming both curves
    if kind == "wtns":
        with pytest.raises(FormatError, match="expected BLS12-381 scalar field r .the curve of the key.*found BN254"):
            read_wtns(FIX / "bn254" / name, None, BLS12_381)


def test_read_wtns_gives_a_checked_fr_vector():
    """The reader checks every value once and says so in the type: the prover and the kernels
    take an FrVector as it is."""
    from cuzk_ray.field import FrVector

    w = read_wtns(FIX / "linear" / "witness_1.wtns")
    assert isinstance(w, FrVector) and w.dtype == np.uint64 and w.shape[1] == 4
    assert isinstance(w[1:3], FrVector) and len(w[1:3]) == 2
    assert not isinstance(np.asarray(w), FrVector)  # numpy sees its limbs


def test_witness_of_another_circuit(loaded):
    n = loaded["linear"][1].n_wires
    p = FIX / "pow2" / "witness_1.wtns"
    with pytest.raises(FormatError, match=rf"{p}: nWitness: expected {n} values .*found 8 \(a witness of another"):
        read_wtns(p, n)
    with pytest.raises(ValueError, match="witness has 8 values, the circuit has 9 wires"):
        loaded["linear"][0].check(read_wtns(p))


def test_non_groth16_zkey(tmp_path):
    p = rewrite(tmp_path, "zkey", lambda d, s: struct.pack_into("<I", d, s[1][1], 2))
    raises("zkey", p, "protocol: expected 1 (groth16), found 2 (plonk)")


def _set_u32(field_offset):
    return lambda value: (lambda d, s: struct.pack_into("<I", d, field_offset(s), value))


# zkey section 2: n8q(4) q(48) n8r(4) r(32) nVars nPublic domainSize
ZKEY_NVARS = _set_u32(lambda s: s[2][1] + 88)
ZKEY_NPUBLIC = _set_u32(lambda s: s[2][1] + 92)
ZKEY_DOMAIN = _set_u32(lambda s: s[2][1] + 96)
# r1cs section 1: n8(4) prime(32) nWires nPubOut nPubIn nPrvIn nLabels(8) nConstraints
R1CS_NCONSTRAINTS = _set_u32(lambda s: s[1][1] + 60)
R1CS_NWIRES = _set_u32(lambda s: s[1][1] + 36)
WTNS_COUNT = _set_u32(lambda s: s[1][1] + 36)


@pytest.mark.parametrize("kind,edit,fragments", [
    ("zkey", ZKEY_NVARS(10), ["section 5 (A) length: expected 960 bytes (10 points of 96 bytes), found 864"]),
    ("zkey", ZKEY_NVARS(0xFFFFFFFF), ["section 5 (A) length: expected 412316860320 bytes"]),
    ("zkey", ZKEY_NPUBLIC(5), ["section 3 (IC) length: expected 576 bytes (6 points"]),
    ("zkey", ZKEY_NPUBLIC(9), ["nPublic: expected below nVars=9, found 9"]),
    ("zkey", ZKEY_DOMAIN(32), ["section 9 (H) length: expected 3072 bytes (32 points"]),
    ("zkey", ZKEY_DOMAIN(12), ["domainSize: expected a power of two"]),
    ("zkey", lambda d, s: struct.pack_into("<I", d, s[4][1], 1000), ["section 4 (coefficients) length"]),
    ("zkey", lambda d, s: struct.pack_into("<Q", d, s[9][0], 1 << 40), ["section 9 length", "truncated"]),
    ("r1cs", R1CS_NCONSTRAINTS(6), ["section 2 (constraints): expected nConstraints=6", "ends inside constraint 5"]),
    ("r1cs", R1CS_NCONSTRAINTS(0xFFFFFFFF), ["section 2 (constraints) length: expected at least"]),
    ("r1cs", R1CS_NWIRES(3), ["nWires: expected at least 1 + nPubOut + nPubIn + nPrvIn = 6, found 3"]),
    ("r1cs", R1CS_NWIRES(6), ["wire: expected below nWires=6"]),
    ("r1cs", lambda d, s: struct.pack_into("<I", d, s[2][1], 0x10000000), ["constraint 0 A", "truncated or corrupt"]),
    ("wtns", WTNS_COUNT(10), ["section 2 (witness values) length: expected 320 bytes (nWitness=10"]),
    ("wtns", WTNS_COUNT(0xFFFFFFFF), ["section 2 (witness values) length"]),
])
def test_header_that_lies(tmp_path, kind, edit, fragments):
    raises(kind, rewrite(tmp_path, kind, edit), *fragments)


def test_zkey_coordinate_not_reduced(tmp_path):
    def edit(d, s):  # IC[0].x := 2^384 - 1 > q
        d[s[3][1] : s[3][1] + 48] = b"\xff" * 48
    raises("zkey", rewrite(tmp_path, "zkey", edit), "IC coordinates[0]: expected a value below the modulus")


def test_zkey_extra_rows_checked(tmp_path):
    def edit(d, s):  # the last record is the extra row of the last public input: change its wire
        count = struct.unpack_from("<I", d, s[4][1])[0]
        struct.pack_into("<I", d, s[4][1] + 4 + 44 * (count - 1) + 8, 0)
    raises("zkey", rewrite(tmp_path, "zkey", edit), "coefficients: expected A rows", "public input binding")


@pytest.mark.parametrize("section,size,zeroed", [(6, 96, "B1"), (7, 192, "B2")])
def test_zkey_b1_b2_disagreeing_on_infinity_is_refused(tmp_path, section, size, zeroed):
    """Wire 4 of linear has a point in B1 and B2 (it appears in B): zeroing it in one section
    leaves it at infinity there only, which one b_wires cannot describe."""
    def edit(d, s):
        d[s[section][1] + 4 * size : s[section][1] + 5 * size] = bytes(size)
    raises("zkey", rewrite(tmp_path, "zkey", edit), "sections 6 (B1) and 7 (B2): expected the same wires at infinity",
           f"wire 4 at infinity in {zeroed} only")


def test_zkey_same_infinity_in_b1_and_b2_is_read_by_density(tmp_path):
    """The twin: wire 4 zeroed in both B sections is one more wire outside b_wires (read, not refused)."""
    def edit(d, s):
        for section, size in ((6, 96), (7, 192)):
            d[s[section][1] + 4 * size : s[section][1] + 5 * size] = bytes(size)
    pk, _ = read_zkey(rewrite(tmp_path, "zkey", edit))
    assert pk.b_wires.tolist() == [5, 6, 7] and len(pk.b_g1_query) == len(pk.b_g2_query) == 3


def test_wtns_first_value_must_be_one(tmp_path):
    raises("wtns", rewrite(tmp_path, "wtns", lambda d, s: d.__setitem__(s[2][1], 2)), "witness[0]: expected 1")


def test_module_exports_format_error_as_value_error():
    assert issubclass(snarkjs.FormatError, ValueError)
