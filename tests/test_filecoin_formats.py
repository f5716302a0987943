"""Filecoin's key and proof formats (cuzk_ray.filecoin: points, params, proofs, verifier,
polka_storage, parameters_json). Outside data: arkworks' zcash encoder (an independent
implementation of the encoding), the BLS12-381 generators' published compressed forms, RFC 7693's
BLAKE2b-512 vector, rust-fil-proofs' parameters.json and polka-storage's real 2 KiB PoRep vector.
Every positive has a negative twin."""

from __future__ import annotations

import hashlib
import struct
from dataclasses import replace

import numpy as np
import pytest
from filecoin_vectors import polka_porep_2kib, polka_porep_verifies
from py_arkworks_bls12381 import G1Point, G2Point, Scalar

from cuzk_ray.backends.cpu import CpuBackend
from cuzk_ray.circuits.porep import build_circuit, public_inputs, synthesize
from cuzk_ray.curve import g1_array, g1_points, g2_array
from cuzk_ray.field import Q_MOD, R_MOD
from cuzk_ray.filecoin import parameters_json
from cuzk_ray.filecoin.parameters_json import PUBLISHED_FILES, DigestMismatch, PublishedFile, authenticate, file_digest
from cuzk_ray.filecoin.params import (
    BellpersonVerifyingKey,
    ParamsError,
    ParamsFile,
    read_vk,
    vk_to_bytes,
    write_params,
    write_vk,
)
from cuzk_ray.filecoin.points import G1, G2, PointError, Where, decode, encode
from cuzk_ray.filecoin.polka_storage import vk_from_polka_bytes
from cuzk_ray.filecoin.proofs import (
    PROOF_BYTES,
    multiproof_from_bytes,
    multiproof_to_bytes,
    proof_from_bytes,
    proof_to_bytes,
    proofs_equal,
)
from cuzk_ray.filecoin.verifier import prepare_bellperson, verify_multiproof, verify_proof
from cuzk_ray.groth16.keys import Proof
from cuzk_ray.groth16.prover import prove
from cuzk_ray.groth16.setup import dev_setup, wire_density

# The generators' compressed encodings (zcash serialization; the IETF pairing-friendly-curves draft
# and every BLS12-381 library print them): x with the compression flag, y the smaller root.
G1_GEN_COMPRESSED = ("97f1d3a73197d7942695638c4fa9ac0fc3688c4f9774b905a14e3a3f171bac586c55e83ff97a1aeffb3af00adb22c6bb")
G2_GEN_COMPRESSED = ("93e02b6052719f607dacd3a088274f65596bd0d09920b61ab5da61bbdc7f5049334cf11213945d57e5ac7d055d042b7e"
                     "024aa2b2f08f0a91260805272dc51051c6e47ad4fa403b02b4510b647ae3d1770bac0326a805bbefd48056c8c121bdb8")
# RFC 7693 appendix A: BLAKE2b-512("abc"); parameters.json keeps its first 32 hex characters.
BLAKE2B_ABC = "ba80a53f981c4d0d6a2797b69f12f6e9"
PUBLIC = 3


def random_points(rng, group, n):
    cls, to_array = (G1Point, g1_array) if group is G1 else (G2Point, g2_array)
    pts = [cls() * Scalar(rng.randrange(1, R_MOD)) for _ in range(n)] + [cls.identity()]
    return pts, to_array(pts)


# ---------------------------------------------------------------------------------------------
# points.py


@pytest.mark.parametrize("group", [G1, G2], ids=["G1", "G2"])
def test_encodings_match_arkworks_and_round_trip(rng, group):
    pts, arr = random_points(rng, group, 12)
    compressed = encode(arr, compressed=True)
    assert compressed.tobytes() == b"".join(p.to_compressed_bytes() for p in pts)  # arkworks: zcash form
    assert np.array_equal(decode(compressed.tobytes(), group, compressed=True), arr)
    unc = encode(arr)
    assert np.array_equal(decode(unc, group), arr)
    # arkworks' big-endian x||y puts c0 before c1; zcash (ours) c1 before c0: swap to compare
    be = b"".join(p.to_xy_bytes_be() for p in pts[:-1])
    if group is G2:
        be = b"".join(be[i + 48 : i + 96] + be[i : i + 48] for i in range(0, len(be), 96))
    assert unc[:-1].tobytes() == be
    assert unc[-1, 0] == 0x40 and not unc[-1, 1:].any()  # infinity: the flag alone
    # negative twin: a flipped sign flag decodes to -P, not P
    flipped = compressed.copy()
    flipped[0, 0] ^= 0x20
    neg = decode(flipped.tobytes(), group, compressed=True)[0]
    assert not np.array_equal(neg, arr[0]) and np.array_equal(neg[0], arr[0][0])  # same x, other y


def test_generators_compressed_known_answer():
    assert encode(g1_array([G1Point()]), compressed=True).tobytes().hex() == G1_GEN_COMPRESSED
    assert encode(g2_array([G2Point()]), compressed=True).tobytes().hex() == G2_GEN_COMPRESSED
    assert np.array_equal(decode(bytes.fromhex(G2_GEN_COMPRESSED), G2, compressed=True), g2_array([G2Point()]))
    neg = bytearray.fromhex(G1_GEN_COMPRESSED)
    neg[0] |= 0x20  # the other root: -G
    assert np.array_equal(decode(bytes(neg), G1, compressed=True), g1_array([-G1Point()]))
    assert not np.array_equal(decode(bytes(neg), G1, compressed=True), g1_array([G1Point()]))


def test_bad_flags_are_refused_with_offset(rng):
    _, arr = random_points(rng, G1, 2)
    unc = encode(arr)
    cases = [(0, 0x80, "compression flag set"), (1, 0x20, "sign flag set on an uncompressed point")]
    for i, flag, what in cases:
        bad = unc.copy()
        bad[i, 0] |= flag
        with pytest.raises(PointError, match=rf"^keyfile: G1 point {i} at byte {1000 + 96 * i}: .*{what}"):
            decode(bad, G1, where=Where("keyfile", 1000))
    inf = unc.copy()
    inf[2, 5] = 1  # the infinity point with a stray bit
    with pytest.raises(PointError, match="infinity flag set but the coordinates are not all zero"):
        decode(inf, G1)
    comp = encode(arr, compressed=True)
    comp[1, 0] &= 0x7F
    with pytest.raises(PointError, match=r"G1 point 1 at byte 48: .*compression flag not set"):
        decode(comp, G1, compressed=True)
    assert np.array_equal(decode(unc, G1), arr)  # the positive twin


def test_point_off_the_curve_and_x_not_below_p(rng):
    _, arr = random_points(rng, G2, 2)
    unc = encode(arr)
    off = unc.copy()
    off[1, -1] ^= 1  # y.c0's last byte
    with pytest.raises(PointError, match=r"^vk: G2 point 1 at byte 192: not on the curve$"):
        decode(off, G2, where=Where("vk"))
    decode(off, G2, check=False)  # an unchecked bulk read does not look (as bellperson's)
    big = encode(g1_array([G1Point()]))
    big[0, :48] = np.frombuffer(Q_MOD.to_bytes(48, "big"), dtype=np.uint8)
    with pytest.raises(PointError, match="x = 0x1a0111ea.* is not below the field modulus q"):
        decode(big, G1, check=False)
    comp = encode(g1_array([G1Point()]), compressed=True)
    comp[0, :48] = np.frombuffer((Q_MOD + 5).to_bytes(48, "big"), dtype=np.uint8)
    comp[0, 0] |= 0x80
    with pytest.raises(PointError, match="not below the field modulus"):
        decode(comp, G1, compressed=True)
    zero = np.zeros((1, 96), dtype=np.uint8)
    with pytest.raises(PointError, match=r"\(0, 0\) without the infinity flag"):
        decode(zero, G1, check=False)
    not_x = _compressed_x(G1, lambda x: not decodes_unchecked(x, G1))
    with pytest.raises(PointError, match="x is not the x-coordinate of a point on the curve"):
        decode(not_x, G1, compressed=True)


def decodes_unchecked(data: bytes, group) -> bool:
    """Is data a compressed point's x on the curve (no subgroup check)?"""
    try:
        decode(data, group, compressed=True, check=False)
    except PointError:
        return False
    return True


def _compressed_x(group, want):
    """The compressed encoding of the smallest x >= 1 (G2: x = (k, 0)) for which want(bytes)."""
    for k in range(1, 100):
        data = bytearray(group.compressed_size)
        data[-1] = k
        data[0] |= 0x80
        if want(bytes(data)):
            return bytes(data)
    raise AssertionError("no such x below 100")


@pytest.mark.parametrize("group", [G1, G2], ids=["G1", "G2"])
def test_point_on_the_curve_outside_the_subgroup_is_refused(group):
    # a small x on the curve: its point is (all but certainly) not of order r
    data = _compressed_x(group, lambda x: decodes_unchecked(x, group))
    point = decode(data, group, compressed=True, check=False)
    with pytest.raises(PointError, match=rf"^f: {group.name} point 0 at byte 0: on the curve but not in the subgroup"):
        decode(data, group, compressed=True, where=Where("f"))
    with pytest.raises(PointError, match="not in the subgroup"):
        decode(encode(point), group)
    gen = encode(g1_array([G1Point()]) if group is G1 else g2_array([G2Point()]))
    decode(gen, group)  # the generator passes both checks


# ---------------------------------------------------------------------------------------------
# proofs.py


def random_proof(rng) -> Proof:
    (_, a), (_, b), (_, c) = (random_points(rng, g, 1) for g in (G1, G2, G1))
    return Proof(a=a[:1], b=b[:1], c=c[:1])


def test_proof_and_multiproof_round_trip(rng):
    proofs = [random_proof(rng) for _ in range(10)]
    one = proof_to_bytes(proofs[0])
    assert len(one) == PROOF_BYTES == 192
    assert proofs_equal(proof_from_bytes(one), proofs[0])
    multi = multiproof_to_bytes(proofs)
    assert len(multi) == 1920
    back = multiproof_from_bytes(multi, partitions=10)
    assert all(proofs_equal(x, y) for x, y in zip(back, proofs))
    assert not proofs_equal(back[0], back[1])


def test_bad_proofs_are_refused_naming_the_part(rng):
    proofs = [random_proof(rng) for _ in range(3)]
    multi = bytearray(multiproof_to_bytes(proofs))
    with pytest.raises(PointError, match="10 partitions need 1920 bytes, got 576"):
        multiproof_from_bytes(bytes(multi), partitions=10)
    with pytest.raises(PointError, match="not a whole number"):
        multiproof_from_bytes(bytes(multi[:-1]))
    with pytest.raises(PointError, match="a Groth16 proof is 192 bytes, got 191"):
        proof_from_bytes(bytes(multi[:191]))
    inf = bytearray(multi)
    inf[192 + 48 : 192 + 144] = bytes([0xC0]) + bytes(95)  # partition 1's B at infinity
    with pytest.raises(PointError, match=r"partition 1: proof B: G2 point 0 at byte 240: the point at infinity"):
        multiproof_from_bytes(bytes(inf))
    flag = bytearray(multi)
    flag[384 + 144] &= 0x7F  # partition 2's C without the compression flag
    with pytest.raises(PointError, match=r"partition 2: proof C: G1 point 0 at byte 528: .*compression flag not set"):
        multiproof_from_bytes(bytes(flag))


# ---------------------------------------------------------------------------------------------
# params.py and parameters_json.py


@pytest.fixture(scope="module")
def small_key():
    """The project's development key for a tiny circuit (stored by density, as Filecoin's)."""
    cs = build_circuit(64, PUBLIC)
    return cs, dev_setup(cs, seed=29)


def random_vk(rng, n_ic) -> BellpersonVerifyingKey:
    g1 = lambda: random_points(rng, G1, 1)[1][:1]  # noqa: E731
    g2 = lambda: random_points(rng, G2, 1)[1][:1]  # noqa: E731
    return BellpersonVerifyingKey(alpha_g1=g1(), beta_g1=g1(), beta_g2=g2(), gamma_g2=g2(), delta_g1=g1(),
                                  delta_g2=g2(), ic=random_points(rng, G1, n_ic)[1][:n_ic])


def test_vk_file_round_trip_and_size(rng, tmp_path):
    vk = random_vk(rng, 40)
    path = tmp_path / "key.vk"
    write_vk(path, vk)
    assert path.stat().st_size == 4708  # FILECOIN.md 2.4: the 2 KiB / 8 MiB / 512 MiB .vk size
    back = read_vk(path)
    assert back.equals(vk) and back.n_inputs == 39
    assert not back.equals(random_vk(rng, 40))


def test_vk_file_negatives(rng, tmp_path):
    data = bytearray(vk_to_bytes(random_vk(rng, 5)))
    ic_len_at = 3 * 96 + 3 * 192
    cases = {
        "truncated": (bytes(data[:-10]), r"ic \(ic_len 5\) needs 480 bytes at byte 868, the file ends at byte 1338"),
        "ic_len": (bytes(data[:ic_len_at]) + struct.pack(">I", 4) + bytes(data[ic_len_at + 4 :]),
                   "ic_len 4 makes the key 1252 bytes, the file has 1348"),
        "off curve": (bytes(data[:95]) + bytes([data[95] ^ 1]) + bytes(data[96:]),
                      r"alpha_g1: G1 point 0 at byte 0: not on the curve"),
    }
    for name, (blob, message) in cases.items():
        path = tmp_path / f"{name}.vk"
        path.write_bytes(blob)
        with pytest.raises(ParamsError, match=message):
            read_vk(path)
    good = tmp_path / "good.vk"
    good.write_bytes(bytes(data))
    assert read_vk(good).n_inputs == 4


def test_params_written_from_a_project_key_read_back_lazily(small_key, tmp_path):
    cs, pk = small_key
    path = tmp_path / "dev.params"
    write_params(path, pk, chunk=7)  # several chunks per query
    with ParamsFile(path) as pf:
        counts = {n: s.count for n, s in pf.spans.items()}
        assert counts == {"h": 64, "l": len(pk.l_query), "a": len(pk.a_query), "b_g1": len(pk.b_g1_query),
                          "b_g2": len(pk.b_g2_query)}
        assert pf.spans["h"].offset == len(vk_to_bytes(pf.vk)) + 4
        assert np.array_equal(pf.query("l", 3, 9), pk.l_query[3:9])
        a_wires, b_wires = wire_density(cs)
        back = pf.proving_key(a_wires, b_wires, check=True)
        with pytest.raises(ParamsError, match="pass a_wires and b_wires"):
            pf.proving_key()  # a .params stores no density
    for name in pk.VK_ARRAYS:
        assert np.array_equal(getattr(back.vk, name), getattr(pk.vk, name)), name
    for name in pk.PK_ARRAYS + pk.DENSITIES:
        assert np.array_equal(getattr(back, name), getattr(pk, name)), name


def test_params_file_negatives(small_key, tmp_path):
    _, pk = small_key
    path = tmp_path / "dev.params"
    write_params(path, pk)
    data = path.read_bytes()
    (tmp_path / "short.params").write_bytes(data[:-1])
    with pytest.raises(ParamsError, match=r"b_g2 length \d+ at byte \d+ needs \d+ G2 points up to byte "
                                          rf"{len(data)}, the file has {len(data) - 1} bytes \(truncated\)"):
        ParamsFile(tmp_path / "short.params")
    (tmp_path / "long.params").write_bytes(data + b"\0")
    with pytest.raises(ParamsError, match=rf"1 bytes after the b_g2 query \(at byte {len(data)}\)"):
        ParamsFile(tmp_path / "long.params")
    bad_vk = bytearray(data)
    bad_vk[96 + 95] ^= 1  # beta_g1's last byte
    (tmp_path / "bad_vk.params").write_bytes(bytes(bad_vk))
    with pytest.raises(ParamsError, match=r"beta_g1: G1 point 0 at byte 96: not on the curve"):
        ParamsFile(tmp_path / "bad_vk.params")
    with ParamsFile(path) as pf:
        h = pf.spans["h"]
    bad = bytearray(data)
    bad[h.offset + 96 + 95] ^= 1  # h point 1's last byte
    (tmp_path / "bad.params").write_bytes(bytes(bad))
    with ParamsFile(tmp_path / "bad.params") as pf:
        pf.query("h")  # unchecked (a bulk read of a trusted file)
        with pytest.raises(ParamsError, match=rf"h query: G1 point 1 at byte {h.offset + 96}: not on the curve"):
            pf.query("h", check=True)


def test_params_with_bellperson_h_is_refused_as_a_project_key(small_key, tmp_path):
    cs, pk = small_key
    path = tmp_path / "mono.params"
    write_params(path, replace(pk, h_query=pk.h_query[:-1]))  # m - 1 points, as Filecoin's keys
    with ParamsFile(path) as pf:
        assert pf.spans["h"].count == 63
        with pytest.raises(ParamsError, match="h holds 63 = m - 1 points: bellperson's H convention"):
            pf.proving_key(*wire_density(cs))


def test_published_files_and_digest_check(tmp_path, monkeypatch):
    assert len(PUBLISHED_FILES) == 10
    vk32 = PUBLISHED_FILES["v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-8-0-sha256_hasher-"
                           "82a357d2f2ca81dc61bb45f4a762807aedee1b0a53fd6c4e77b46a01bfef7820.vk"]
    assert (vk32.sector_size, vk32.digest) == (32 << 30, "0c7b4aac1c40fdb7eb82bc355b41addf")
    abc = tmp_path / "abc.vk"
    abc.write_bytes(b"abc")
    assert file_digest(abc, chunk=2) == BLAKE2B_ABC
    assert authenticate(abc) is None  # not a published name: nothing to check against
    monkeypatch.setitem(parameters_json.PUBLISHED_FILES, "abc.vk", PublishedFile("abc.vk", 2048, "cid", BLAKE2B_ABC))
    assert authenticate(abc).digest == BLAKE2B_ABC
    fake = tmp_path / vk32.name
    fake.write_bytes(b"abd")
    with pytest.raises(DigestMismatch, match=rf"{fake}: BLAKE2b digest [0-9a-f]{{32}} does not match "
                                             "parameters.json's 0c7b4aac1c40fdb7eb82bc355b41addf"):
        read_vk(fake)
    assert hashlib.blake2b(b"abd").hexdigest()[:32] != vk32.digest


# ---------------------------------------------------------------------------------------------
# verifier.py: our prover's proofs through the 192-byte form, and polka-storage's real proof


def test_project_proof_verifies_as_192_bytes_under_the_vk_file(rng, small_key, tmp_path):
    cs, pk = small_key
    write_params(tmp_path / "dev.params", pk)
    with ParamsFile(tmp_path / "dev.params") as pf:
        key = pf.proving_key(*wire_density(cs))  # the existing prover runs on a .params key
        vk_path = tmp_path / "dev.vk"
        write_vk(vk_path, pf.vk)
    vk = prepare_bellperson(read_vk(vk_path))
    backend = CpuBackend(threads=1)
    witnesses = [synthesize(64, PUBLIC, seed=rng.randrange(1 << 30), partition=k) for k in range(2)]
    proofs = [prove(key, cs, w, rng.randrange(R_MOD), rng.randrange(R_MOD), backend) for w in witnesses]
    inputs = [public_inputs(w, PUBLIC) for w in witnesses]
    decoded = multiproof_from_bytes(multiproof_to_bytes(proofs), partitions=2)
    assert verify_multiproof(vk, decoded, inputs)
    assert verify_proof(vk, decoded[0], inputs[0])
    assert not verify_multiproof(vk, decoded, inputs[::-1])  # partitions' inputs swapped
    changed = [list(inputs[0]), inputs[1]]
    changed[0][1] = (changed[0][1] + 1) % R_MOD
    assert not verify_multiproof(vk, decoded, changed)
    a = g1_points(decoded[0].a)[0] + G1Point()
    assert not verify_proof(vk, Proof(a=g1_array([a]), b=decoded[0].b, c=decoded[0].c), inputs[0])
    with pytest.raises(ValueError, match="2 partition proofs but 1 input vectors"):
        verify_multiproof(vk, decoded, inputs[:1])


def test_polka_storage_vector_decodes_to_valid_points():
    v = polka_porep_2kib()
    assert len(v.vk_bytes) == 2356 and len(v.proof_bytes) == 192
    vk = v.vk  # every point decompressed, on the curve and in the subgroup
    assert vk.n_inputs == 39 and all(p.any() for p in vk.ic)
    assert proof_to_bytes(v.proof) == v.proof_bytes  # re-encodes to the same bytes
    assert vk_to_bytes(vk)[:96] == encode(vk.alpha_g1).tobytes()
    assert not polka_porep_verifies([0] * 39)  # real proof, wrong inputs
    bad = bytearray(v.vk_bytes)
    bad[432 + 3] = 41  # ic_len 40 -> 41
    with pytest.raises(ParamsError, match="ic_len 41 at byte 432 needs 2404 bytes"):
        vk_from_polka_bytes(bytes(bad))
    bad = bytearray(v.vk_bytes)
    bad[0] &= 0x7F
    with pytest.raises(ParamsError, match="alpha_g1: G1 point 0 at byte 0: .*compression flag not set"):
        vk_from_polka_bytes(bytes(bad))
    with pytest.raises(ValueError, match="38 public inputs given, the key expects 39"):
        polka_porep_verifies([0] * 38)
