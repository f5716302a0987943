"""Keys that lie (issue 15 item 6): a zkey point off its curve or outside the subgroup of order r
is refused where the zkey is read, in one line naming the file, the section and the point's index
there; the cached conversion records that its points were checked. Real fixture zkeys (circom +
snarkjs, tests/fixtures/make_fixtures.sh) with one point rewritten. Fast, no Ray."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from py_arkworks_bls12381 import G1Point, Scalar

from cuzk_ray.field import Q_MOD, R_MOD
from cuzk_ray.formats.snarkjs import FormatError, read_zkey, read_zkey_sizes
from cuzk_ray.formats.zkey_cache import CACHE_VERSION, load_zkey_cached, zkey_cached

FIX = Path(__file__).parent / "fixtures" / "circom"
ZKEY = FIX / "linear" / "linear.zkey"
G1_RAW, G2_RAW, FP = 96, 192, 48
H_COFACTOR = 0x396C8C005555E1568C00AAAB0000AAAB  # BLS12-381 G1: #E(Fq) = h * r


def sections(data: bytes) -> dict[int, int]:
    """id -> offset of the section's payload (test-side parser of the iden3 container)."""
    out, pos = {}, 12
    for _ in range(struct.unpack_from("<I", data, 8)[0]):
        sid, length = struct.unpack_from("<IQ", data, pos)
        out[sid] = pos + 12
        pos += 12 + length
    return out


def mont(v: int) -> bytes:
    """An Fq value as the zkey stores it: Montgomery form (v * 2^384 mod q), 48 bytes LE."""
    return (v * (1 << 384) % Q_MOD).to_bytes(FP, "little")


def unmont(b: bytes) -> int:
    return int.from_bytes(b, "little") * pow(1 << 384, -1, Q_MOD) % Q_MOD


def point_outside_subgroup() -> tuple[int, int]:
    """A point of E(Fq): y^2 = x^3 + 4 whose order is not r (the smallest x that gives one): on
    the curve, so only a subgroup check can refuse it."""
    for x in range(1, 1000):
        rhs = (x**3 + 4) % Q_MOD
        y = pow(rhs, (Q_MOD + 1) // 4, Q_MOD)  # q = 3 mod 4: the square root, when there is one
        if y * y % Q_MOD == rhs:
            return x, y
    raise AssertionError("no x below 1000 on the curve")


def test_constructed_point_is_on_the_curve_and_outside_the_subgroup():
    x, y = point_outside_subgroup()
    assert (y * y - x**3 - 4) % Q_MOD == 0
    p = G1Point.from_xy_bytes_unchecked_le(x.to_bytes(FP, "little") + y.to_bytes(FP, "little"))
    assert not p.is_in_subgroup()
    # twin: h times it is in the subgroup (the cofactor clears it): the check is the subgroup's
    cleared = p * Scalar(H_COFACTOR % R_MOD)
    assert cleared.is_in_subgroup()


def rewrite(tmp_path, edit, name="bad.zkey") -> Path:
    data = bytearray(ZKEY.read_bytes())
    edit(data, sections(bytes(data)))
    out = tmp_path / name
    out.write_bytes(bytes(data))
    return out


def present(data: bytes, offset: int, size: int, count: int) -> list[int]:
    return [i for i in range(count) if any(data[offset + i * size : offset + (i + 1) * size])]


def off_curve(sid: int, size: int):
    """Edit: the last point of section sid that is not infinity gets y (its first Fq) + 1."""
    def edit(d, s):
        count = {5: 9, 6: 9, 7: 9, 9: 16}[sid]
        i = present(bytes(d), s[sid], size, count)[-1]
        y = s[sid] + i * size + size // 2  # y.c0 for G2: y's first coordinate
        d[y : y + FP] = mont((unmont(bytes(d[y : y + FP])) + 1) % Q_MOD)
        edit.index = i
    return edit


def refused(path, *fragments) -> str:
    with pytest.raises(FormatError) as info:
        read_zkey(path)
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith(f"{path}: "), msg
    for frag in fragments:
        assert frag in msg, (frag, msg)
    return msg


@pytest.mark.parametrize("sid,what,size,group", [(5, "A", G1_RAW, "G1"), (7, "B2", G2_RAW, "G2"),
                                                 (9, "H", G1_RAW, "G1")])
def test_point_off_the_curve_is_refused_naming_section_and_index(tmp_path, sid, what, size, group):
    edit = off_curve(sid, size)
    path = rewrite(tmp_path, edit)
    refused(path, f"section {sid} ({what}) point {edit.index}: expected a point on the {group} curve "
                  f"in its subgroup of order r, found one that is not on the {group} curve")


def test_point_outside_the_subgroup_is_refused(tmp_path):
    x, y = point_outside_subgroup()

    def edit(d, s):
        i = present(bytes(d), s[5], G1_RAW, 9)[1]
        d[s[5] + i * G1_RAW : s[5] + (i + 1) * G1_RAW] = mont(x) + mont(y)
        edit.index = i
    path = rewrite(tmp_path, edit)
    refused(path, f"section 5 (A) point {edit.index}: expected a point on the G1 curve in its subgroup",
            "found one that is not in the correct G1 subgroup")


def test_header_point_off_the_curve_is_refused(tmp_path):
    def edit(d, s):  # alpha1.y, after n8q q n8r r nVars nPublic domainSize and alpha1.x
        y = s[2] + 4 + 48 + 4 + 32 + 12 + FP
        d[y : y + FP] = mont((unmont(bytes(d[y : y + FP])) + 1) % Q_MOD)
    refused(rewrite(tmp_path, edit), "section 2 (groth16 header) alpha1: expected a point on the G1 curve")


def test_fixture_points_pass_and_the_check_is_recorded():
    """The twin of the refusals: the real zkeys' points are all valid, and read_zkey says it checked."""
    for c in ("linear", "pow2"):
        pk, _ = read_zkey(FIX / c / f"{c}.zkey")
        assert pk.meta["points_checked"] == "on the curve and in the subgroup of order r"
    pk, _ = read_zkey(ZKEY, check_points=False)
    assert pk.meta["points_checked"] == "no"


def test_cache_records_the_check_and_never_caches_a_refused_key(tmp_path):
    cache = tmp_path / "cache"
    bad = rewrite(tmp_path, off_curve(9, G1_RAW))
    with pytest.raises(FormatError, match="section 9 \\(H\\) point"):
        load_zkey_cached(bad, cache)
    assert not zkey_cached(bad, cache)
    assert not cache.exists() or not [p for p in cache.iterdir() if not p.name.startswith(".")]
    # twin: the good key is converted, checked, cached with the record, then loaded unchecked
    assert not zkey_cached(ZKEY, cache)
    pk, _ = load_zkey_cached(ZKEY, cache)
    assert pk.meta["cache"] == "miss" and zkey_cached(ZKEY, cache)
    (entry,) = [p for p in cache.iterdir() if not p.name.startswith(".")]
    manifest = json.loads((entry / "manifest.json").read_text())
    assert manifest["version"] == CACHE_VERSION == 3
    assert manifest["meta"]["points_checked"] == "on the curve and in the subgroup of order r"
    pk2, _ = load_zkey_cached(ZKEY, cache)
    assert pk2.meta["cache"] == "hit" and pk2.meta["points_checked"] == manifest["meta"]["points_checked"]


def test_zkey_sizes_from_headers(tmp_path):
    assert tuple(vars(read_zkey_sizes(ZKEY)).values()) == (9, 4, 16, 14)
    # twin: a header that lies about nVars is refused by the same length checks as read_zkey
    def edit(d, s):
        struct.pack_into("<I", d, s[2] + 88, 10)
    with pytest.raises(FormatError, match="section 5 \\(A\\) length: expected 960 bytes"):
        read_zkey_sizes(rewrite(tmp_path, edit))


def test_cache_entry_of_version_2_is_checked_again(tmp_path, monkeypatch):
    """An entry converted before points were checked (version 2) is not loaded: the zkey is
    converted again, its points checked, and the new entry records it."""
    from cuzk_ray.formats import zkey_cache

    real_read = zkey_cache.read_zkey
    monkeypatch.setattr(zkey_cache, "CACHE_VERSION", 2)
    monkeypatch.setattr(zkey_cache, "read_zkey", lambda p: real_read(p, check_points=False))
    old, _ = load_zkey_cached(ZKEY, tmp_path)
    assert old.meta["points_checked"] == "no" and zkey_cached(ZKEY, tmp_path)
    monkeypatch.setattr(zkey_cache, "CACHE_VERSION", 3)
    monkeypatch.setattr(zkey_cache, "read_zkey", real_read)
    assert not zkey_cached(ZKEY, tmp_path)  # the preflight counts its disk again
    pk, _ = load_zkey_cached(ZKEY, tmp_path)
    assert pk.meta["cache"] == "miss" and pk.meta["points_checked"] == "on the curve and in the subgroup of order r"
    assert load_zkey_cached(ZKEY, tmp_path)[0].meta["cache"] == "hit" and zkey_cached(ZKEY, tmp_path)
