"""A real 32 GiB WindowPoSt vanilla proof (curio's testgolden, see tests/fixtures/filecoin/README.md):
decoded from bincode, its ten 8-8-0 tree-R paths hashed up to comm_r_last, and
comm_r = Poseidon2(comm_c, comm_r_last) checked against the sector's real sealed CID."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from cuzk_ray.filecoin import cid, post_vanilla
from cuzk_ray.filecoin.merkle import InclusionPath, PathLevel

FIXTURES = Path(__file__).parent / "fixtures" / "filecoin"


@pytest.fixture(scope="module")
def golden():
    raw = (FIXTURES / "post.vproof").read_bytes()
    public = json.loads((FIXTURES / "postpub.json").read_text())
    sector = public["ChallengedSectors"][0]
    return raw, sector["SectorNumber"], cid.cid_to_comm_r(sector["SealedCID"]["/"])


def test_golden_post_proof_decodes_and_verifies(golden):
    raw, sector_number, comm_r = golden
    proof = post_vanilla.read_fallback_post_sector_proof(raw)
    assert proof.sector_id == sector_number == 1
    [sector] = proof.sectors
    assert len(sector.inclusion_proofs) == 10  # WINDOW_POST_CHALLENGE_COUNT
    assert all([lvl.arity for lvl in p.levels] == [8] * 10 for p in sector.inclusion_proofs)  # 2^30 leaves, 8-8-0
    assert post_vanilla.post_proof_error(proof, comm_r) is None


def test_golden_post_proof_tampered_fails(golden):
    raw, _, comm_r = golden
    proof = post_vanilla.read_fallback_post_sector_proof(raw)
    sector = proof.sectors[0]
    path = sector.inclusion_proofs[3]
    top = path.levels[-1]
    bumped = bytes([top.siblings[2][0] ^ 1]) + top.siblings[2][1:]
    bad_level = PathLevel((*top.siblings[:2], bumped, *top.siblings[3:]), top.index)
    bad_path = InclusionPath(path.leaf, (*path.levels[:-1], bad_level), path.root)
    bad_paths = (*sector.inclusion_proofs[:3], bad_path, *sector.inclusion_proofs[4:])
    tampered = replace(proof, sectors=(replace(sector, inclusion_proofs=bad_paths),))
    fault = post_vanilla.post_proof_error(tampered, comm_r)
    assert fault.startswith("sectors[0].inclusion_proofs[3]: path of leaf")
    bad_c = bytes([sector.comm_c[0] ^ 1]) + sector.comm_c[1:]
    fault = post_vanilla.post_proof_error(replace(proof, sectors=(replace(sector, comm_c=bad_c),)), comm_r)
    assert fault == "sectors[0]: Poseidon2(comm_c, comm_r_last) is not comm_r"
    other = bytes([comm_r[0] ^ 1]) + comm_r[1:]
    assert "is not" in post_vanilla.post_proof_error(proof, other)


def test_malformed_post_proof_refused_naming_offset(golden):
    raw, _, _ = golden
    with pytest.raises(ValueError, match=r"offset 24928: need 32 bytes for sectors\[0\].comm_r_last, have 0"):
        post_vanilla.read_fallback_post_sector_proof(raw[:-32], "post.vproof")
    with pytest.raises(ValueError, match="2 trailing bytes after the proof at offset 24960"):
        post_vanilla.read_fallback_post_sector_proof(raw + b"\0\0", "post.vproof")
    bad_variant = raw[:56] + (7).to_bytes(4, "little") + raw[60:]
    with pytest.raises(ValueError, match=r"offset 56: sectors\[0\].inclusion_proofs\[0\] variant 7"):
        post_vanilla.read_fallback_post_sector_proof(bad_variant, "post.vproof")
