"""Filecoin PoRep public inputs (issue 29 item 2): ChaCha, the Feistel permutation, SDR's parents,
challenges, replica_id and the per-partition input vector, each against outside data where it
exists (RFC 8439, rand_chacha-compatible ChaCha8 vectors, rust-fil-proofs' hard-coded synthetic
challenges and seal regression records, polka-storage's real 2 KiB proof) and against a plain
re-derivation from the spec otherwise. Every positive check has a tampered twin."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pytest

from cuzk_ray.field import R_MOD
from cuzk_ray.filecoin.chacha import ChaChaRng, ietf_block, ietf_keystream, rng_u64
from cuzk_ray.filecoin.challenges import (
    SyntheticChallenges,
    interactive_challenges,
    ni_challenges,
    porep_challenges,
)
from cuzk_ray.filecoin.feistel import (
    FeistelShape,
    blake2b_prefix_be_hashlib,
    blake2b_prefix_be_numpy,
    invert_permute,
    permute,
    permute_compiled,
)
from cuzk_ray.filecoin.graph import StackedGraph, drg_seed, feistel_keys
from cuzk_ray.filecoin.public_inputs import (
    SealPublicData,
    path_index_input,
    porep_public_inputs,
    replica_id,
    seal_public_inputs,
    tree_levels,
)
from cuzk_ray.filecoin.registry import (
    SEAL_PROOFS,
    ApiFeature,
    ApiVersion,
    PoRepConfig,
    porep_id_for,
    registered_seal_proof,
)

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "filecoin"
REGRESSION_RECORDS = FIXTURES / "seal_regression_records.jsonl"  # README beside it names the source

# --- ChaCha --------------------------------------------------------------------------------------


def test_chacha20_rfc8439_block():
    # RFC 8439 section 2.3.2: key 00..1f, nonce 000000090000004a00000000, block counter 1
    key, nonce = bytes(range(32)), bytes.fromhex("000000090000004a00000000")
    expected = ("10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
                "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e")
    assert ietf_block(key, 1, nonce).hex() == expected
    assert ietf_block(key, 2, nonce).hex() != expected
    assert ietf_block(key, 1, nonce, rounds=8).hex() != expected
    # a keystream slice across blocks is the blocks' bytes
    whole = ietf_block(key, 0, nonce) + ietf_block(key, 1, nonce) + ietf_block(key, 2, nonce)
    assert ietf_keystream(key, nonce, 50, 100) == whole[50:150]
    assert ietf_keystream(key, nonce, 51, 100) != whole[50:150]


def test_chacha20_rand_chacha_true_values():
    # rand_chacha src/chacha.rs test_chacha_true_values_a (rust-random/rand, before 8ee82f46b8):
    # zero seed, ChaCha20, the first 32 words (draft-nir-cfrg-chacha20-poly1305-04 vectors 1-2)
    expected = [0xADE0B876, 0x903DF1A0, 0xE56A5D40, 0x28BD8653, 0xB819D2BD, 0x1AED8DA0, 0xCCEF36A8, 0xC70D778B,
                0x7C5941DA, 0x8D485751, 0x3FE02477, 0x374AD8B8, 0xF4B8436A, 0x1CA11815, 0x69B687C3, 0x8665EEB2,
                0xBEE7079F, 0x7A385155, 0x7C97BA98, 0x0D082D73, 0xA0290FCB, 0x6965E348, 0x3E53C612, 0xED7AEE32,
                0x7621B729, 0x434EE69C, 0xB03371D5, 0xD539D874, 0x281FED31, 0x45FB0A51, 0x1F0AE1AC, 0x6F4D794B]
    rng = ChaChaRng(bytes(32), rounds=20)
    assert [rng.next_u32() for _ in range(32)] == expected
    # test_chacha_multiple_blocks: seed words 0..7, the i-th word of the i-th block
    seed = b"".join(i.to_bytes(4, "little") for i in range(8))
    words = rng_u64(np.frombuffer(seed, np.uint8)[None, :], 8 * 17, rounds=20)[0]
    as_words = np.stack([words & 0xFFFFFFFF, words >> np.uint64(32)], axis=1).ravel()
    assert [int(as_words[17 * i]) for i in range(4)] == [0xF225C81A, 0x6AB1BE57, 0x04D42951, 0x70858036]
    assert [int(as_words[17 * i + 1]) for i in range(4)] != [0xF225C81A, 0x6AB1BE57, 0x04D42951, 0x70858036]


def test_chacha8_rng_vectors():
    # nixberg/chacha-rng-c (rand_chacha-compatible): README, first u64 of ChaCha8 with a zero seed;
    # tests.c test_chacha8, the 8 u64 after skipping 3,141 (crosses many blocks)
    assert ChaChaRng(bytes(32), rounds=8).next_u64() == 0xD6405F892FEF003E
    assert ChaChaRng(bytes(32), rounds=20).next_u64() != 0xD6405F892FEF003E
    expected = [0x0FEE22EDA2AA9AD4, 0x1777D0B16DE665F8, 0xD5982A26DB1AB427, 0x258C713D160030FB,
                0xE46846B5A485A788, 0x5B17880E52A4BF6F, 0xFF7AE1B1F77AD022, 0xD161B85F84BD6B21]
    stream = rng_u64(np.zeros((1, 32), np.uint8), 3141 + 8)[0]
    assert [int(x) for x in stream[3141:]] == expected
    assert [int(x) for x in stream[3140:-1]] != expected


def test_chacha8_vectorized_equals_scalar():
    seeds = np.random.default_rng(29).integers(0, 256, (5, 32), dtype=np.uint8)
    many = rng_u64(seeds, 10)
    for row, seed in zip(many, seeds):
        rng = ChaChaRng(seed.tobytes())
        assert [int(x) for x in row] == [rng.next_u64() for _ in range(10)]
    assert not np.array_equal(many[0], many[1])


# --- Feistel ---------------------------------------------------------------------------------------


def test_feistel_round_function_numpy_equals_hashlib():
    right = np.random.default_rng(7).integers(0, 2**63, 300, dtype=np.uint64)
    key = 0x0123456789ABCDEF
    fast = blake2b_prefix_be_numpy(right, key)
    assert np.array_equal(fast, blake2b_prefix_be_hashlib(right, key))
    assert int(fast[0]) == int.from_bytes(hashlib.blake2b(int(right[0]).to_bytes(8, "big") +
                                                          key.to_bytes(8, "big")).digest()[:8], "big")
    assert not np.array_equal(fast, blake2b_prefix_be_hashlib(right, key + 1))


def test_feistel_is_a_permutation_and_inverts():
    shape = FeistelShape.for_elements(1000)  # not a power of four: cycle walking happens
    assert shape.half_bits == 5
    idx = np.arange(1000, dtype=np.uint64)
    out = permute(idx, (1, 2, 3, 4), shape)
    assert sorted(out.tolist()) == list(range(1000))
    assert np.array_equal(invert_permute(out, (1, 2, 3, 4), shape), idx)
    assert not np.array_equal(permute(idx, (1, 2, 5, 4), shape), out)


def test_feistel_compiled_loop_equals_numpy():
    shape = FeistelShape.for_elements(8 << 18)  # an 8 MiB sector's expander domain
    idx = np.random.default_rng(3).integers(0, 8 << 18, 1000, dtype=np.uint64)
    keys = feistel_keys(porep_id_for(6))
    assert np.array_equal(permute_compiled(idx, keys, shape), permute(idx, keys, shape))
    assert not np.array_equal(permute_compiled(idx, keys[::-1], shape), permute(idx, keys, shape))


# --- graph -----------------------------------------------------------------------------------------


def hand_drg_parents(node: int, porep_id: bytes, version: ApiVersion) -> list[int]:
    """drgraph.rs BucketGraph::parents, one draw at a time with Python ints and rust's f64 log2."""
    if node < 2:
        return [0] * 6
    seed = hashlib.sha256(b"Filecoin_DRSample" + porep_id).digest()[:28] + node.to_bytes(4, "little")
    rng = ChaChaRng(seed, rounds=8)
    meta = node * 5
    n_buckets = math.ceil(math.log2(meta))
    drawn = []
    for _ in range(5):
        bucket = rng.next_u64() % n_buckets + 1
        largest = min(meta, 1 << bucket)
        smallest = max(2, largest >> 1)
        parent = (meta - (smallest + rng.next_u64() % (largest - smallest + 1))) // 5
        drawn.append(node - 1 if parent == node else parent)
    return drawn + [node - 1] if version is ApiVersion.V1_0 else [node - 1] + drawn


def hand_exp_parents(node: int, nodes: int, porep_id: bytes) -> list[int]:
    """graph.rs correspondent with feistel.rs written out: one index at a time, hashlib BLAKE2b."""
    raw = hashlib.sha256(b"Filecoin_Feistel" + porep_id).digest()
    keys = [int.from_bytes(raw[8 * i:8 * i + 8], "little") for i in range(4)]
    half = 1
    while 4**half < 8 * nodes:
        half += 1
    mask = (1 << half) - 1

    def f(r: int, k: int) -> int:
        return int.from_bytes(hashlib.blake2b(r.to_bytes(8, "big") + k.to_bytes(8, "big")).digest()[:8], "big") & mask

    def encode(x: int) -> int:
        left, right = x >> half & mask, x & mask
        for k in keys[:3]:
            left, right = right, left ^ f(right, k)
        return left << half | right

    out = []
    for i in range(8):
        u = encode(8 * node + i)
        while u >= 8 * nodes:
            u = encode(u)
        out.append(u // 8)
    return out


@pytest.mark.parametrize("porep_index, version", [(0, ApiVersion.V1_0), (5, ApiVersion.V1_1), (10, ApiVersion.V1_2)])
def test_parents_match_a_hand_derivation(porep_index, version):
    porep_id = porep_id_for(porep_index)
    graph = StackedGraph(64, porep_id, version)
    for node in (0, 1, 2, 3, 17, 37, 63):
        assert graph.parents(node) == hand_drg_parents(node, porep_id, version) + hand_exp_parents(node, 64, porep_id)
    other = StackedGraph(64, porep_id_for(porep_index + 1), version)
    assert other.parents(37) != graph.parents(37)


def test_drg_parents_in_range_and_never_self():
    for nodes in (64, 1 << 14):
        drg = StackedGraph(nodes, porep_id_for(6), ApiVersion.V1_1).drg_parents_of(np.arange(nodes))
        v = np.arange(nodes)[:, None]
        assert (drg[2:] < v[2:]).all()  # strictly earlier nodes: no self-loops, a topological order
        assert (drg[2:, 0] == v[2:, 0] - 1).all()
        assert (drg[:2] == 0).all()
    exp = StackedGraph(64, porep_id_for(6), ApiVersion.V1_1).exp_parents_of(np.arange(64))
    assert exp.max() < 64 and exp.min() >= 0
    with pytest.raises(ValueError, match="node 64 is outside 0..63"):
        StackedGraph(64, porep_id_for(6), ApiVersion.V1_1).parents(64)


def test_v1_0_and_v1_1_differ_only_by_predecessor_placement():
    nodes = np.arange(2048)
    old = StackedGraph(2048, porep_id_for(1), ApiVersion.V1_0).parents_of(nodes)
    new = StackedGraph(2048, porep_id_for(1), ApiVersion.V1_1).parents_of(nodes)
    assert np.array_equal(old[:, :5], new[:, 1:6]) and np.array_equal(old[:, 5], new[:, 0])
    assert np.array_equal(old[:, 6:], new[:, 6:])  # expander: same below 2^29 nodes
    assert not np.array_equal(old[:, :6], new[:, :6])


def test_v1_0_truncates_expander_parents_of_64gib_sectors():
    # graph.rs correspondent: V1_0 divides `transformed as u32`, so 64 GiB parents stay below 2^29
    nodes = np.arange(1 << 31, (1 << 31) - 200, -1)[1:]
    old = StackedGraph(1 << 31, porep_id_for(4), ApiVersion.V1_0).exp_parents_of(nodes)
    new = StackedGraph(1 << 31, porep_id_for(4), ApiVersion.V1_1).exp_parents_of(nodes)
    assert old.max() < 1 << 29 and new.max() >= 1 << 29
    small = new < 1 << 29
    assert np.array_equal(old[small], new[small])


def test_graph_seeds_from_porep_id():
    pid = porep_id_for(8)
    assert drg_seed(pid) == hashlib.sha256(b"Filecoin_DRSample" + pid).digest()[:28]
    assert feistel_keys(pid)[1] == int.from_bytes(hashlib.sha256(b"Filecoin_Feistel" + pid).digest()[8:16], "little")
    assert drg_seed(porep_id_for(9)) != drg_seed(pid)


# --- challenges ------------------------------------------------------------------------------------


def test_synthetic_challenges_match_rust_fil_proofs():
    # rust-fil-proofs storage-proofs-porep/src/stacked/vanilla/challenges.rs
    # test_synth_challenges_against_hardcoded: 2^10 nodes, replica_id = 55, comm_r = 101, 21 synthetic
    synth = SyntheticChallenges((55).to_bytes(32, "little"), (101).to_bytes(32, "little"), 1 << 10, count=21)
    expected = [178, 297, 869, 211, 875, 477, 94, 781, 124, 332, 856, 801, 176, 692, 429, 691, 290, 204, 986, 210, 973]
    assert synth.all() == expected
    assert [synth.challenge(i) for i in reversed(range(21))] == expected[::-1]
    assert synth.partition_challenges(bytes([1] * 32), 10, 0) == [176, 781, 801, 986, 290, 211, 692, 856, 986, 332]
    assert synth.partition_challenges(bytes([2] * 32), 10, 0) != [176, 781, 801, 986, 290, 211, 692, 856, 986, 332]
    other = SyntheticChallenges((55).to_bytes(32, "little"), (102).to_bytes(32, "little"), 1 << 10, count=21)
    assert other.all() != expected


def test_interactive_and_ni_challenges():
    rid, seed, comm_r = bytes(range(32)), bytes([7] * 32), bytes([9] * 32)
    nodes = 1 << 30
    digest = hashlib.sha256(rid + seed + (3 * 18 + 5).to_bytes(4, "little")).digest()
    assert interactive_challenges(rid, seed, nodes, 18, 3)[5] == int.from_bytes(digest, "little") % (nodes - 1) + 1
    # partitioning: five partitions of 40 are the first 200 of one partition (challenges.rs test)
    split = [c for k in range(5) for c in interactive_challenges(rid, seed, nodes, 40, k)]
    assert split == interactive_challenges(rid, seed, nodes, 200, 0)
    assert split != interactive_challenges(rid, bytes([8] * 32), nodes, 200, 0)
    ni = ni_challenges(rid, comm_r, 2048 // 32, 2, 12)
    tag = b"filecoin.io|PoRep|1|NonInteractive|1"
    digest = hashlib.sha256(tag + rid + comm_r + (2 * 12 + 1).to_bytes(4, "little")).digest()
    assert ni[1] == int.from_bytes(digest, "little") % 63 + 1
    assert all(1 <= c < 64 for c in ni) and ni != ni_challenges(rid, bytes(32), 64, 2, 12)


# --- registry --------------------------------------------------------------------------------------


def test_registry_table():
    assert len(SEAL_PROOFS) == 20
    p = registered_seal_proof("StackedDrg2KiBV1_1")
    assert p.index == 5 and p.porep_id == bytes([5]) + bytes(31) and p.api_version is ApiVersion.V1_1
    big = registered_seal_proof("StackedDrg32GiBV1_1").config
    assert (big.partitions, big.challenges_per_partition, big.nodes, big.shape.layers) == (10, 18, 1 << 30, 11)
    assert (big.shape.base_arity, big.shape.sub_arity, big.shape.top_arity) == (8, 8, 0)
    assert 1 + 3 + 18 * big.challenges_per_partition == 328  # with ONE, as bellperson counts
    ni = registered_seal_proof(18).config
    assert ni.non_interactive and (ni.partitions, ni.challenges_per_partition) == (126, 18)
    small_ni = registered_seal_proof("StackedDrg8MiBV1_2_Feat_NonInteractivePoRep").config
    assert (small_ni.partitions, small_ni.challenges_per_partition) == (13, 2)
    synth = registered_seal_proof("StackedDrg64GiBV1_1_Feat_SyntheticPoRep")
    assert synth.index == 14 and synth.api_version is ApiVersion.V1_2 and synth.config.shape.top_arity == 2
    assert ApiVersion.parse("V1_2_0") is ApiVersion.parse("1.2.0") is ApiVersion.V1_2
    assert ApiFeature.parse("synthetic-porep") is ApiFeature.SYNTHETIC_POREP


def test_registry_refuses_bad_configs():
    with pytest.raises(ValueError, match="sector_size: 4096 is not a published sector size"):
        PoRepConfig(4096, 1, bytes(32), ApiVersion.V1_1)
    with pytest.raises(ValueError, match="SyntheticPoRep needs ApiVersion 1.2.0, have 1.1.0"):
        PoRepConfig(2048, 1, bytes(32), ApiVersion.V1_1, (ApiFeature.SYNTHETIC_POREP,))
    with pytest.raises(ValueError, match="partitions: 1 gives 176 challenges per partition"):
        PoRepConfig(32 << 30, 1, bytes(32), ApiVersion.V1_1)
    with pytest.raises(ValueError, match="'V1_3_0' is not one of"):
        ApiVersion.parse("V1_3_0")
    with pytest.raises(ValueError, match="'StackedDrg2KiBV2' is not a known name"):
        registered_seal_proof("StackedDrg2KiBV2")


# --- public inputs ---------------------------------------------------------------------------------


def test_path_index_packing():
    assert tree_levels(1 << 30, 8, 8) == (8,) * 9 + (8,)
    assert tree_levels(1 << 31, 8, 8, 2) == (8,) * 9 + (8, 2)
    assert tree_levels(64, 2) == (2,) * 6
    leaf = 0b1_011_010_110_001_111_000_101_100_011_110  # 31 bits: 9 base levels, sub, top
    assert path_index_input(leaf, 1 << 31, tree_levels(1 << 31, 8, 8, 2)) == leaf
    with pytest.raises(ValueError, match="leaf 64 of 64 does not fit"):
        path_index_input(64, 64, tree_levels(64, 8))


def test_replica_id_is_a_safe_sha256():
    rid = replica_id(bytes([1] * 32), 0x0102030405060708, bytes([2] * 32), bytes([3] * 32), bytes([4] * 32))
    digest = hashlib.sha256(bytes([1] * 32) + bytes(range(1, 9)) + bytes([2] * 32) + bytes([3] * 32) +
                            bytes([4] * 32)).digest()
    assert rid[:31] == digest[:31] and rid[31] == digest[31] & 0x3F and int.from_bytes(rid, "little") < R_MOD
    assert replica_id(bytes([1] * 32), 0x0807060504030201, bytes([2] * 32), bytes([3] * 32), bytes([4] * 32)) != rid
    with pytest.raises(ValueError, match="sector_id: -1 is not a u64"):
        replica_id(bytes(32), -1, bytes(32), bytes(32), bytes(32))


# eigerco/polka-storage pallets/proofs/src/tests/porep.rs at ce0aa7ff8f4e (default_porep_test_setup,
# default_porep_comm_r, default_porep_comm_d); their sealer (lib/polka-storage-proofs/src/porep/mod.rs
# seal_to_config) proves with porep_id [0; 32] and ApiVersion V1_2_0, no features.
POLKA_CONFIG = PoRepConfig(2048, 1, bytes(32), ApiVersion.V1_2)
POLKA_DATA = SealPublicData(
    comm_r=bytes.fromhex("4afb35f82a95a10187a913bc14520d9a1d173328265b301b5dcf440ef2583950"),
    comm_d=bytes.fromhex("129c7562bb0c189544f5dccd365feaec2141eab458097a5ca8429c109d154421"),
    prover_id=bytes(32), sector_id=77, ticket=bytes([12] * 32), seed=bytes([13] * 32))
# The 36 per-challenge inputs for that vector. Before the merge, these 39 inputs verified
# polka-storage's real proof under its key with the fc-formats branch's verifier (and with one
# changed, or with V1_0's parent order, did not): outside evidence, not just a snapshot.
POLKA_CHALLENGE_INPUTS = [37, 36, 31, 35, 36, 11, 36, 20, 54, 46, 50, 16, 17, 9, 27, 37, 37, 37,
                          29, 28, 27, 28, 27, 11, 28, 14, 21, 31, 58, 41, 12, 62, 55, 29, 29, 29]


def polka_storage_2kib_public_inputs(version: ApiVersion = ApiVersion.V1_2) -> list[int]:
    """The 39 public inputs (ONE excluded) of polka-storage's 2 KiB PoRep vector: pass them to
    tests/filecoin_vectors.py ``polka_porep_verifies`` to check the real proof."""
    config = PoRepConfig(2048, 1, bytes(32), version)
    return porep_public_inputs(config, POLKA_DATA, 0)


def test_polka_storage_vector_inputs():
    inputs = polka_storage_2kib_public_inputs()
    assert len(inputs) == 3 + 18 * POLKA_CONFIG.challenges_per_partition == 39
    rid = replica_id(bytes(32), 77, bytes([12] * 32), POLKA_DATA.comm_d, bytes(32))
    assert inputs[:3] == [int.from_bytes(rid, "little"), int.from_bytes(POLKA_DATA.comm_d, "little"),
                          int.from_bytes(POLKA_DATA.comm_r, "little")]
    assert inputs[3:] == POLKA_CHALLENGE_INPUTS
    for i in range(2):  # the challenge appears as comm_d, comm_r_last and comm_c index and as a u64
        row = inputs[3 + 18 * i:3 + 18 * (i + 1)]
        assert row[0] == row[15] == row[16] == row[17]
    old = polka_storage_2kib_public_inputs(ApiVersion.V1_0)
    assert old != inputs and old[:3] == inputs[:3] and sorted(old[4:10]) == sorted(inputs[4:10])
    tampered = SealPublicData(**{**POLKA_DATA.__dict__, "seed": bytes([14] * 32)})
    assert porep_public_inputs(POLKA_CONFIG, tampered, 0)[3:] != POLKA_CHALLENGE_INPUTS


def test_polka_storage_real_proof_verifies():
    """Runs once the verifier branch (tests/filecoin_vectors.py) is merged in; skipped before."""
    vectors = pytest.importorskip("filecoin_vectors")
    inputs = polka_storage_2kib_public_inputs()
    assert vectors.polka_porep_verifies(inputs)
    assert not vectors.polka_porep_verifies(polka_storage_2kib_public_inputs(ApiVersion.V1_0))
    assert not vectors.polka_porep_verifies(inputs[:20] + [inputs[20] + 1] + inputs[21:])


def test_public_inputs_refuse_bad_commitments():
    with pytest.raises(ValueError, match="comm_r: 0xff.* is not below the BLS12-381 scalar modulus r"):
        porep_public_inputs(POLKA_CONFIG, SealPublicData(**{**POLKA_DATA.__dict__, "comm_r": b"\xff" * 32}), 0)
    with pytest.raises(ValueError, match="comm_d: need 32 bytes, have 31"):
        porep_public_inputs(POLKA_CONFIG, SealPublicData(**{**POLKA_DATA.__dict__, "comm_d": bytes(31)}), 0)
    with pytest.raises(ValueError, match="partition: k = 1 is outside 0..0"):
        porep_public_inputs(POLKA_CONFIG, POLKA_DATA, 1)


def load_record(line: str) -> tuple[PoRepConfig, SealPublicData]:
    """A seal regression record (rust-fil-proofs tests/regression.rs SealRegressionRecord), its
    32-byte fields as hex and its proof dropped (seal_regression_records.README)."""
    r = json.loads(line)
    pc, h = r["porep_config"], bytes.fromhex
    config = PoRepConfig(pc["sector_size"], pc["partitions"], h(pc["porep_id"]), ApiVersion.parse(pc["api_version"]),
                         tuple(ApiFeature.parse(f) for f in pc["api_features"]))
    data = SealPublicData(h(r["comm_r"]), h(r["comm_d"]), h(r["prover_id"]), r["sector_id"], h(r["ticket"]),
                          h(r["seed"]))
    return config, data


# filecoin-proofs constants.rs: 2 challenges per partition for the test sizes, 18 for production
# ones, interactive or not (get_porep_non_interactive_partitions' comment says the NI partition
# counts were picked to keep exactly these).
CHALLENGES_PER_PARTITION = {2048: 2, 8 << 20: 2, 512 << 20: 2, 32 << 30: 18, 64 << 30: 18}


def check_record_inputs(config: PoRepConfig, data: SealPublicData, per_partition: list[list[int]]) -> None:
    """Asserts the layout of one record's public inputs: counts, the shared head and, per
    challenge, its 18 inputs (leaf indices in range, the DRG predecessor where the version puts it)."""
    c = CHALLENGES_PER_PARTITION[config.sector_size]
    assert config.challenges_per_partition == c and len(per_partition) == config.partitions
    rid = replica_id(data.prover_id, data.sector_id, data.ticket, data.comm_d, config.porep_id)
    digest = hashlib.sha256(data.prover_id + data.sector_id.to_bytes(8, "big") + data.ticket + data.comm_d +
                            config.porep_id).digest()
    assert rid == digest[:31] + bytes([digest[31] & 0x3F])  # params.rs generate_replica_id, spelled out again
    head = [int.from_bytes(rid, "little"), int.from_bytes(data.comm_d, "little"), int.from_bytes(data.comm_r, "little")]
    predecessor = 6 if config.api_version is ApiVersion.V1_0 else 1  # the DRG parent that is node - 1
    for k, inputs in enumerate(per_partition):
        assert len(inputs) == 3 + 18 * c  # bellperson's 1 + 3 + 18 C with ONE, which the list leaves out
        assert inputs[:3] == head and all(0 <= x < R_MOD for x in inputs)
        rows = [inputs[3 + 18 * i:3 + 18 * (i + 1)] for i in range(c)]
        assert [row[0] for row in rows] == porep_challenges(config, rid, data.comm_r, data.seed, k)
        for row in rows:
            assert row[0] == row[15] == row[16] == row[17] and 1 <= row[0] < config.nodes
            assert all(0 <= p < config.nodes for p in row[1:15])
            assert row[predecessor] == row[0] - 1  # node 1's DRG parents are all 0, so this holds there too


def test_every_seal_regression_record_gives_public_inputs():
    lines = REGRESSION_RECORDS.read_text().splitlines()
    assert len(lines) == 448 + 113  # v16's records, then v18's
    replica_ids, partitions, total = set(), 0, 0
    for number, line in enumerate(lines, 1):
        config, data = load_record(line)
        per_partition = seal_public_inputs(config, data)
        try:
            check_record_inputs(config, data, per_partition)
        except AssertionError as err:
            raise AssertionError(f"{REGRESSION_RECORDS.name} line {number}: {err}") from err
        replica_ids.add(per_partition[0][0])
        partitions += len(per_partition)
        total += sum(map(len, per_partition))
    assert len(replica_ids) == 557  # v16 repeats four records verbatim; every other record is its own sector
    # 530 one-partition records with 2 challenges, 22 NI ones of 13 x 2, 7 of 10 x 18 and 2 NI 32 GiB of 126 x 18
    assert partitions == 530 + 22 * 13 + 7 * 10 + 2 * 126
    assert total == 39 * (530 + 22 * 13) + 327 * (7 * 10 + 2 * 126)


def test_tampered_seal_regression_records():
    line = REGRESSION_RECORDS.read_text().splitlines()[0]
    config, data = load_record(line)
    inputs = seal_public_inputs(config, data)
    record = json.loads(line)
    porep_config = record["porep_config"]
    short_id = {**record, "porep_config": {**porep_config, "porep_id": porep_config["porep_id"][2:]}}
    with pytest.raises(ValueError, match="^porep_id: need 32 bytes, have 31$"):
        load_record(json.dumps(short_id))
    other_id = PoRepConfig(config.sector_size, config.partitions, b"\x01" + config.porep_id[1:], config.api_version)
    assert seal_public_inputs(other_id, data)[0][0] != inputs[0][0]  # a porep_id of the right length moves replica_id
    above_r = {**record, "comm_r": (R_MOD + 1).to_bytes(32, "little").hex()}
    with pytest.raises(ValueError, match="^comm_r: 0x73ed.* is not below the BLS12-381 scalar modulus r$"):
        seal_public_inputs(*load_record(json.dumps(above_r)))
    moved = SealPublicData(**{**data.__dict__, "sector_id": data.sector_id + 1})
    assert seal_public_inputs(config, moved)[0][0] != inputs[0][0]
    # the layout check can fail: inputs of another seed, or of V1_1's parent order, are not this record's
    check_record_inputs(config, data, inputs)
    reseeded = SealPublicData(**{**data.__dict__, "seed": bytes(32)})
    with pytest.raises(AssertionError):
        check_record_inputs(config, data, seal_public_inputs(config, reseeded))
    newer = PoRepConfig(config.sector_size, config.partitions, config.porep_id, ApiVersion.V1_1)
    with pytest.raises(AssertionError):
        check_record_inputs(config, data, seal_public_inputs(newer, data))
