"""Filecoin primitives against known answers from outside the project: fr32, SHA-254 tree D and
comm_d CIDs (curio), Poseidon (neptune, curio), tree R_last roots (curio), commitment CIDs.

Sources, read at these commits:
- argumentcomputer/neptune 86377d0bd6c5: src/poseidon.rs `hash_values_aux` (Standard strength),
  src/round_numbers.rs `test_round_numbers_against_known_values`.
- filecoin-project/curio e0294b0f948c: lib/proof/post_vproof_test.go `TestPoseidonHashMulti`,
  lib/proof/treed_build_test.go (`TestHashChunk`, `Test2K`, `Test8MiBUnpad`, `expectD8M`),
  lib/proof/tree_r_last_comm_test.go ("golden_8_matches_paux_commRLast").
"""

from __future__ import annotations

import base64
import time

import numpy as np
import pytest

from cuzk_ray.field import R_MOD, fr_to_limbs, limbs_to_ints
from cuzk_ray.filecoin import cid, fr32, poseidon, poseidon_batch, sha254, trees
from cuzk_ray.filecoin.merkle import InclusionPath, PathLevel


def flip(node: bytes, byte: int = 0) -> bytes:
    """``node`` with one low bit changed (stays a field element when it was one)."""
    return node[:byte] + bytes([node[byte] ^ 1]) + node[byte + 1 :]


def tamper_sibling(path: InclusionPath, level: int) -> InclusionPath:
    lvl = path.levels[level]
    levels = list(path.levels)
    levels[level] = PathLevel((flip(lvl.siblings[0]), *lvl.siblings[1:]), lvl.index)
    return InclusionPath(path.leaf, tuple(levels), path.root)


# --- fr32 -------------------------------------------------------------------------------------


def test_fr_bytes_round_trip_and_refusal():
    value = R_MOD - 1
    assert fr32.fr_from_bytes(fr32.fr_to_bytes(value)) == value
    with pytest.raises(ValueError, match="comm_x: .* not a reduced Fr"):
        fr32.fr_from_bytes(R_MOD.to_bytes(32, "little"), "comm_x")
    with pytest.raises(ValueError, match="need 32 bytes.*have 31"):
        fr32.fr_from_bytes(bytes(31))


def test_fr_safe_clears_top_two_bits():
    assert fr32.fr_from_bytes_safe(b"\xff" * 32) == (1 << 254) - 1
    assert fr32.fr_from_bytes_safe(b"\xff" * 32) != int.from_bytes(b"\xff" * 32, "little")


def test_fr32_pad_bit_layout():
    # 254 data bits per node, least significant bit first: data bit 254 (byte 31, bit 6) starts node 1.
    data = bytearray(127)
    data[31] = 0x40
    padded = fr32.pad(bytes(data))
    assert padded[32] == 1 and padded[31] == 0 and padded.sum() == 1
    ones = fr32.pad(b"\xff" * 127).reshape(4, 32)
    assert (ones[:, :31] == 0xFF).all() and (ones[:, 31] == 0x3F).all()
    data[31] = 0x20  # bit 253 stays in node 0 (its top data bit)
    assert fr32.pad(bytes(data))[31] == 0x20


def test_fr32_unpad_round_trip_and_refusal():
    rng = np.random.default_rng(7)
    data = rng.integers(0, 256, 127 * 300, dtype=np.uint8)
    padded = fr32.pad(data)
    assert padded.size == 128 * 300
    assert (padded.reshape(-1, 32)[:, 31] <= 0x3F).all()
    np.testing.assert_array_equal(fr32.unpad(padded), data)
    bad = padded.copy()
    bad[5 * 32 + 31] |= 0x80
    with pytest.raises(ValueError, match=r"node 5 \(byte offset 160\) has its top two bits set"):
        fr32.unpad(bad)
    with pytest.raises(ValueError, match="multiple of 127 bytes, have 128"):
        fr32.pad(bytes(128))


# --- SHA-254 and tree D -----------------------------------------------------------------------

CURIO_HASH_CHUNK = "16abab341fb7f370e27e4dadcf81766dd0dfd0ae64469477bb2cf6614938b22f"  # SHA-254(01 00 .. 00)
CURIO_2K_CID = "baga6ea4seaqovgk4kr4eoifujh6jfmdqvw3m6zrvyjqzu6s6abkketui6jjoydi"
CURIO_8M_CID = "baga6ea4seaqcgqckrcapts6hea44xbqugwocqneekvyp5fizbo6u3e2biluckla"
# expectD8M: node 0 and 1 of the tree's levels 1 and 2 (level 1 node 1 is the hash of two zero nodes).
CURIO_8M_LEVELS = {
    1: ("16abab341fb7f370e27e4dadcf81766dd0dfd0ae64469477bb2cf6614938b22f",
        "f5a5fd42d16a20302798ef6ed309979b43003d2320d9f0e8ea9831a92759fb0b"),
    2: ("0dd6dae41c2f75550129594fb644e4a842cfafb316a2d59321e388fe84a1ec2f",
        "3731bb99ac689f66eef5973e4a94da188f4ddcae580724fc6f3fd60dfd488333"),
}


def test_sha254_known_chunk():
    chunk = bytes([1]) + bytes(63)
    assert sha254.sha254(chunk).hex() == CURIO_HASH_CHUNK
    assert sha254.sha254(bytes([2]) + bytes(63)).hex() != CURIO_HASH_CHUNK


def test_comm_d_2kib_cid():
    data = bytearray(2048)
    data[0] = 1
    assert cid.comm_d_to_cid(sha254.comm_d(bytes(data))) == CURIO_2K_CID
    data[1] = 1
    assert cid.comm_d_to_cid(sha254.comm_d(bytes(data))) != CURIO_2K_CID


def test_comm_d_8mib_cid_from_unpadded_data():
    data = np.zeros(fr32.unpadded_size(8 << 20), dtype=np.uint8)
    data[0] = 1
    start = time.perf_counter()
    tree = sha254.build_tree_d(fr32.pad(data))
    seconds = time.perf_counter() - start
    print(f"tree D of 8 MiB (2^18 leaves) with fr32 padding: {seconds:.2f} s")
    assert cid.comm_d_to_cid(tree.root) == CURIO_8M_CID
    for level, nodes in CURIO_8M_LEVELS.items():
        assert [tree.levels[level][i].tobytes().hex() for i in (0, 1)] == list(nodes)
    path = tree.path(123_457)
    assert path.leaf_index == 123_457 and sha254.tree_d_path_error(path, tree.root) is None
    assert "hashes to" in sha254.tree_d_path_error(tamper_sibling(path, 17))
    data[-1] = 1
    assert cid.comm_d_to_cid(sha254.comm_d(fr32.pad(data))) != CURIO_8M_CID


def test_tree_d_paths_and_tampering():
    rng = np.random.default_rng(3)
    tree = sha254.build_tree_d(fr32.pad(rng.integers(0, 256, 127 * 16, dtype=np.uint8)))
    for index in (0, 1, 37, 63):
        path = tree.path(index)
        assert sha254.tree_d_path_error(path, tree.root) is None
        assert sha254.tree_d_path_error(tamper_sibling(path, index % 6)) is not None
    path = tree.path(9)
    assert "expected" in sha254.tree_d_path_error(path, flip(tree.root))
    wrong_leaf = InclusionPath(flip(path.leaf), path.levels, path.root)
    assert "hashes to" in sha254.tree_d_path_error(wrong_leaf)
    with pytest.raises(ValueError, match="power-of-two number of leaves, has 3"):
        sha254.build_tree_d(bytes(96))


# --- Poseidon ---------------------------------------------------------------------------------


def u64s(parts: list[int]) -> int:
    """neptune's `scalar_from_u64s`: little-endian u64 limbs of the canonical (not Montgomery) value,
    read with `from_repr_vartime`."""
    return sum(p << (64 * i) for i, p in enumerate(parts))


NEPTUNE_HASH_VALUES = {  # Standard strength, MerkleTree, preimage [0, 1, ..., arity - 1]
    2: u64s([0x2E203C369A02E7FF, 0xA6FBA9339D05A69D, 0x739E0FD902EFE161, 0x396508D75E76A56B]),
    4: u64s([0x019814FF6662075D, 0xFB6B4605BF1327EC, 0x00DB3C6579229399, 0x58A54B10A9E5848A]),
    8: u64s([0x2A9934F56D38A5E6, 0x4B682E9D9CC4AED9, 0x1201004211677077, 0x2394611DA3A5DE55]),
    11: u64s([0xCEE3BBC32B693163, 0x09F3DCD8CCB08FC1, 0x6CA537E232EBE87A, 0x0C0FC1B2E5227F28]),
}
NEPTUNE_PARTIAL_ROUNDS = {2: 55, 3: 55, 4: 56, 5: 56, 6: 56, 7: 56, 8: 57, 9: 57, 10: 57, 11: 57, 12: 57, 13: 57,
                          14: 57, 15: 57, 16: 59, 17: 59, 25: 59, 37: 60, 65: 61}  # width t -> R_P


def test_round_numbers_match_neptune():
    assert {t: poseidon.round_numbers(t - 1) for t in NEPTUNE_PARTIAL_ROUNDS} == {
        t: (8, rp) for t, rp in NEPTUNE_PARTIAL_ROUNDS.items()}
    assert poseidon.round_numbers(2) != (8, 56)


@pytest.mark.parametrize("arity", sorted(NEPTUNE_HASH_VALUES))
def test_poseidon_neptune_vectors(arity):
    preimage = list(range(arity))
    assert poseidon.poseidon_hash(preimage) == NEPTUNE_HASH_VALUES[arity]
    assert poseidon.poseidon_hash([*preimage[:-1], arity]) != NEPTUNE_HASH_VALUES[arity]


CURIO_ARITY8_IN = [
    "f743111428ecda9b74a18826f1cc62d48ae1510de17e58645997559f86442f31",
    "197a6efa37086e3a37108f8460c52bc810e2781aff0091bfd7b74e3f6f752f02",
    "01c2c12f7930bbb59e3b36dae1c694b33ac6b3f199ec32a8665fadb8338f4f21",
    "bbe672a853f65cdb2563339ca61d6ad648473b4b4ce44bf3a48486424b865a2d",
    "937d57295f488cea8099f5525958f1af39c6241614b917835292e8e2314cf908",
    "3272570cd8ba38c1183629ca72d5e9149d76786ed22c1d591db3d2bccfa7d308",
    "2d3fc90e11aaf601bd1beae80fc3aba15a9e1f886d8140533ce36cda3dd9f936",
    "0a017e264d0728bfcd2edb3c6c60cc5a05a02af31a71cdd7bb2da27616f5f630",
]
CURIO_ARITY8_OUT = "0737ca506df7d4544f8512df35aaa07ed8a40691e96ae868c23320220fec6866"


def test_poseidon_curio_arity8_vector_reference_and_batched():
    nodes = [bytes.fromhex(h) for h in CURIO_ARITY8_IN]
    assert poseidon.poseidon_hash_nodes(nodes).hex() == CURIO_ARITY8_OUT
    assert poseidon_batch.hash_node_groups(np.frombuffer(b"".join(nodes), np.uint8).reshape(8, 32), 8)[0] \
        .tobytes().hex() == CURIO_ARITY8_OUT
    assert poseidon.poseidon_hash_nodes([flip(nodes[0]), *nodes[1:]]).hex() != CURIO_ARITY8_OUT


@pytest.mark.parametrize("arity", [1, 2, 8, 11])
def test_poseidon_batched_equals_reference(arity):
    rng = np.random.default_rng(arity)
    rows = [[int(rng.integers(0, 2**63)) * int(rng.integers(0, 2**63)) ** 3 % R_MOD for _ in range(arity)]
            for _ in range(6)]
    rows[0] = [0] * arity
    rows[1] = [R_MOD - 1] * arity
    out = poseidon_batch.hash_many(fr_to_limbs([v for row in rows for v in row]).reshape(-1, arity, 4), threads=2)
    assert list(limbs_to_ints(out)) == [poseidon.poseidon_hash(row) for row in rows]
    plan = poseidon_batch.sparse_plan(poseidon.constants(arity))
    assert len(plan.partial_constants) == poseidon.constants(arity).partial_rounds


def test_poseidon_refuses_unreduced_input():
    limbs = fr_to_limbs([1, 2, 3, 4]).reshape(2, 2, 4)
    limbs[1, 0] = np.frombuffer(R_MOD.to_bytes(32, "little"), "<u8")  # r itself: one past the largest element
    with pytest.raises(ValueError, match="node 2 .* not a reduced Fr"):
        poseidon_batch.hash_many(limbs)
    with pytest.raises(ValueError, match="reduced Fr"):
        poseidon.poseidon_hash([R_MOD, 0])


# --- trees C / R_last, comm_r -----------------------------------------------------------------

# tree_r_last_comm_test.go, as `hexdump` printed it (16-bit little-endian words): the roots of the 8
# sub-trees of a real 32 GiB tree R_last, and p_aux (comm_c || comm_r_last).
GOLDEN_ROOTS = """
4a92 c600 5816 2932 d995 49fc 8a3f 72ec 5b36 a530 9701 95e5 df37 6c24 9fa3 1bfd
95d7 6f8d 68f2 0977 9215 9bea de51 a35c adb0 af57 fe34 10fd 9122 dba4 ec1a 3a54
fbfa 6411 076c 1cd0 63bf ccfa 6b26 dd46 b01a d30c 05e3 ef60 cf18 fd50 f340 732d
b8dc b4d1 3ebd 2a67 8cd9 e529 05cd 2edc a709 f06e 8308 87a4 63e1 4efe 9f71 63e6
46d8 37e9 fe87 146c 6ff2 ee49 0f61 4d43 1c02 d1c0 a5ad 6962 085e 4daf f65a 5733
ae5a e9f4 7d77 313b 4dd7 20ad dd75 84d5 8c57 7993 efe7 1538 c92c fa19 d127 29c6
6740 6828 7f4d 5ec8 0f05 db31 7599 552b 2f2a 609d 0987 eaf0 d6a2 6ac6 96fc 6be4
b09c 331c 137f bbb4 a4f4 02ae bd96 27d9 b5db 7924 87e8 d35b 7413 e5c9 7367 2c5f
"""
GOLDEN_PAUX = """
4199 9de5 a224 58a0 5577 c58a 1afa 25ab d16b 3e2a ef88 ee51 f579 8d8b ad80 4eb9
6bf5 7f7f 8d31 ac88 724d d9e5 fd4e e77d dff1 1b50 b098 851a fa64 b44c 3b98 4b9e
"""


def hexdump_words(text: str) -> bytes:
    return b"".join(int(w, 16).to_bytes(2, "little") for w in text.split())


def test_tree_r_last_golden_roots():
    roots_raw = hexdump_words(GOLDEN_ROOTS)
    roots = [roots_raw[i : i + 32] for i in range(0, 256, 32)]
    comm_r_last = hexdump_words(GOLDEN_PAUX)[32:]
    assert trees.compound_root(roots, trees.SHAPE_8_8_0) == comm_r_last
    assert trees.compound_root([roots[1], roots[0], *roots[2:]], trees.SHAPE_8_8_0) != comm_r_last


@pytest.mark.parametrize("shape, leaves", [(trees.SHAPE_8_0_0, 64), (trees.SHAPE_8_8_0, 512),
                                           (trees.SHAPE_8_8_2, 128)])
def test_poseidon_tree_paths(shape, leaves):
    rng = np.random.default_rng(leaves)
    data = fr32.pad(rng.integers(0, 256, leaves // 4 * 127, dtype=np.uint8))
    tree = trees.build_tree(data, shape, threads=1)
    base_leaves = leaves // max(1, shape.sub) // max(1, shape.top)
    base_roots = [trees.build_tree(data[i * 32 * base_leaves : (i + 1) * 32 * base_leaves]).root
                  for i in range(leaves // base_leaves)]
    if len(base_roots) > 1:
        assert trees.compound_root(base_roots, shape) == tree.root
    for index in (0, leaves - 1, leaves // 3):
        path = tree.path(index)
        assert path.leaf_index == index and trees.tree_path_error(path, tree.root) is None
        assert trees.tree_path_error(tamper_sibling(path, len(path.levels) - 1)) is not None
    assert [lvl.arity for lvl in tree.path(0).levels] == list(tree.arities)
    bad_index = InclusionPath(path.leaf, (PathLevel(path.levels[0].siblings, 8), *path.levels[1:]), path.root)
    assert "outside" in trees.tree_path_error(bad_index)


def test_tree_reference_root_and_shape_errors():
    leaves = [fr32.fr_to_bytes(i * 7919 % R_MOD) for i in range(64)]
    level1 = [poseidon.poseidon_hash_nodes(leaves[i : i + 8]) for i in range(0, 64, 8)]
    tree = trees.build_tree(b"".join(leaves))
    assert tree.root == poseidon.poseidon_hash_nodes(level1)
    assert trees.build_tree(b"".join([leaves[1], leaves[0], *leaves[2:]])).root != tree.root
    with pytest.raises(ValueError, match="8-8-0 tree cannot have 96 leaves"):
        trees.SHAPE_8_8_0.arities(96)
    with pytest.raises(ValueError, match="tree leaves: node 3 .* not a reduced Fr"):
        trees.build_tree(b"".join(leaves[:3]) + b"\xff" * 32 + b"".join(leaves[4:]))


def test_column_hashes_and_comm_r():
    rng = np.random.default_rng(11)
    labels = fr32.pad(rng.integers(0, 256, 127 * 11 * 4, dtype=np.uint8)).reshape(11, 16, 32)
    cols = trees.column_hashes(labels)
    for n in (0, 15):
        assert cols[n].tobytes() == poseidon.poseidon_hash_nodes([labels[k, n].tobytes() for k in range(11)])
    assert cols[1].tobytes() != poseidon.poseidon_hash_nodes([labels[k, 0].tobytes() for k in range(11)])
    a, b = cols[0].tobytes(), cols[1].tobytes()
    assert trees.comm_r(a, b) == poseidon.poseidon_hash_nodes([a, b]) != trees.comm_r(b, a)


# --- commitment CIDs --------------------------------------------------------------------------

SEALED_CID = "bagboea4b5abcbx3jccdohrttzfneleehcpkmle4oltwuh4q3rcf5tpdodaoj6mtl"  # curio testgolden/postpub.json


def test_cids_both_ways():
    comm_r = cid.cid_to_comm_r(SEALED_CID)
    assert cid.comm_r_to_cid(comm_r) == SEALED_CID
    comm_d = cid.cid_to_comm_d(CURIO_2K_CID)
    assert cid.comm_d_to_cid(comm_d) == CURIO_2K_CID
    assert cid.comm_d_to_cid(comm_r).startswith("baga6ea4sea") and cid.comm_r_to_cid(comm_d).startswith("bagboea4b5abc")


def test_cids_refused_in_one_line():
    with pytest.raises(ValueError, match="codec 0xf102, expected 0xf101 for comm_d"):
        cid.cid_to_comm_d(SEALED_CID)
    with pytest.raises(ValueError, match="codec 0xf101, expected 0xf102 for comm_r"):
        cid.cid_to_comm_r(CURIO_2K_CID)
    with pytest.raises(ValueError, match="multibase prefix 'z'"):
        cid.cid_to_comm_r("z" + SEALED_CID[1:])
    short = base64.b32encode(bytes.fromhex("0182e20381e80220") + bytes(31)).decode().rstrip("=").lower()
    with pytest.raises(ValueError, match="digest of 31 bytes, expected 32"):
        cid.cid_to_comm_r("b" + short)
    with pytest.raises(ValueError, match="not valid base32"):
        cid.cid_to_comm_r("b1" + SEALED_CID[2:])
