"""Small-sector sealing, the C1 JSON file, the vanilla verifier and the C1 generator without sealing.

Outside data:
- rust-fil-proofs 87348a749d80 storage-proofs-porep/tests/stacked_vanilla.rs
  ``test_stacked_porep_generate_labels``: the last label of 64- and 128-node graphs, 11 layers,
  replica_id [9; 32], porep_id [0; 32] (V1_0) and [123; 32] (V1_1);
- curio e0294b0f948c lib/proof/treed_build_test.go: comm_d CID of 2 KiB of zeros with byte 0 = 1;
- filecoin-project/go-fil-commcid 7af27549e911 commcid_test.go ("empty32GiB"): the empty 32 GiB
  sector's comm_d CID.
The 8 MiB seal (about 15 s) is in jobs/make_c1_32g.py, not here.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from cuzk_ray.cli import main as cli_main
from cuzk_ray.filecoin import c1 as c1_format
from cuzk_ray.filecoin import c1_synthetic, cid, fr32, graph, labels, registry, seal, sha254, trees
from cuzk_ray.filecoin.commands import main as filecoin_main
from cuzk_ray.filecoin.vanilla import c1_error

CURIO_2K_CID = "baga6ea4seaqovgk4kr4eoifujh6jfmdqvw3m6zrvyjqzu6s6abkketui6jjoydi"
EMPTY_32G_CID = "baga6ea4seaqao7s73y24kcutaosvacpdjgfe5pw76ooefnyqw4ynr3d2y6x2mpq"
PROVER_ID, SECTOR_ID, TICKET, SEED = bytes(31) + b"\x07", 77, bytes([12]) * 32, bytes([13]) * 32
V1_0, V1_1 = registry.ApiVersion.V1_0, registry.ApiVersion.V1_1
RUST_LAST_LABELS = [  # (nodes, porep_id byte, ApiVersion, the last label as rust's from_u64s_le limbs)
    (64, 0, V1_0, (0xd3faa96b9a0fba04, 0xea81a283d106485e, 0xe3d51b9afa5ac2b3, 0x0462f4f4f1a68d37)),
    (128, 0, V1_0, (0x7e191e52c4a8da86, 0x5ae8a1c9e6fac148, 0xce239f3b88a894b8, 0x234c00d1dc1d53be)),
    (64, 123, V1_1, (0xabb3f38bb70defcf, 0x777a2e4d7769119f, 0x3448959d495490bc, 0x06021188c7a71cb5)),
    (128, 123, V1_1, (0x22ab81cf68c4676d, 0x7a77a82fc7c9c189, 0xc6c03d32c1e42d23, 0x0f777c18cc2c55bd)),
]


def flip_bytes(value: list[int], byte: int = 0) -> list[int]:
    """A JSON byte array with one low bit changed (an Fr element stays one)."""
    return value[:byte] + [value[byte] ^ 1] + value[byte + 1 :]


@pytest.mark.parametrize("nodes,porep_byte,version,limbs", RUST_LAST_LABELS)
def test_labels_match_rust_fil_proofs(nodes, porep_byte, version, limbs):
    g = graph.StackedGraph(nodes, bytes([porep_byte]) * 32, version)
    expected = sum(limb << (64 * i) for i, limb in enumerate(limbs)).to_bytes(32, "little")
    assert labels.sdr_labels(g, bytes([9]) * 32, 11)[10][nodes - 1].tobytes() == expected
    assert labels.sdr_labels(g, bytes([8]) * 32, 11)[10][nodes - 1].tobytes() != expected


def test_label_from_parents_agrees_with_the_layer_loop():
    g = graph.StackedGraph(64, bytes(32), registry.ApiVersion.V1_1)
    rid, parents = bytes([3]) * 32, g.all_parents()
    got = labels.sdr_labels(g, rid, 2, parents)
    for layer, node in ((1, 1), (1, 40), (2, 2), (2, 63)):
        drg = [got[layer - 1][p].tobytes() for p in parents[node, :6]]
        exp = [got[layer - 2][p].tobytes() for p in parents[node, 6:]] if layer > 1 else []
        parts = labels.layer_parent_labels(layer, drg, exp)
        assert labels.label_from_parents(rid, layer, node, parts) == got[layer - 1][node].tobytes()
        assert labels.label_from_parents(rid, layer, node + 1, parts) != got[layer - 1][node].tobytes()
    assert got[0][0].tobytes() == labels.label_from_parents(rid, 1, 0, [])


@pytest.fixture(scope="module")
def sector():
    piece = bytearray(fr32.unpadded_size(2048))
    piece[0] = 1  # curio's tree-D input
    proof = registry.registered_seal_proof("StackedDrg2KiBV1_1")
    return seal.seal_sector(bytes(piece), proof, PROVER_ID, SECTOR_ID, TICKET)


@pytest.fixture(scope="module")
def c1_obj(sector):
    return c1_format.c1_json(seal.commit_phase1(sector, SEED))


def parse(obj) -> c1_format.C1Output:
    return c1_format.parse_c1(json.loads(json.dumps(obj)))


def test_sealed_comm_d_is_curio_vector(sector):
    assert cid.comm_d_to_cid(sector.comm_d) == CURIO_2K_CID
    assert sector.comm_d == sha254.comm_d(seal.sector_data(bytes([1]), 2048))
    assert sector.comm_d != sha254.comm_d(seal.sector_data(bytes([2]), 2048))
    with pytest.raises(ValueError, match="holds 2032 bytes of data, the piece has 2033"):
        seal.sector_data(bytes(2033), 2048)


def test_sealed_c1_verifies_and_round_trips(sector, tmp_path):
    out = seal.commit_phase1(sector, SEED)
    path = tmp_path / "c1.json"
    assert c1_format.write_c1(out, path) == path.stat().st_size
    back = c1_format.read_c1(path)
    assert back == out
    assert c1_error(back, PROVER_ID, SECTOR_ID) is None
    assert back.comm_r == trees.comm_r(sector.comm_c, sector.comm_r_last)
    assert "replica_id" in c1_error(back, PROVER_ID, SECTOR_ID + 1)


def test_c1_json_has_serde_shape(c1_obj):
    assert list(c1_obj) == ["registered_proof", "vanilla_proofs", "comm_r", "comm_d", "replica_id", "seed", "ticket"]
    assert c1_obj["registered_proof"] == "StackedDrg2KiBV1_1" and list(c1_obj["vanilla_proofs"]) == ["StackedDrg2KiBV1"]
    proof = c1_obj["vanilla_proofs"]["StackedDrg2KiBV1"][0][0]
    assert list(proof) == ["comm_d_proofs", "comm_r_last_proof", "replica_column_proofs", "labeling_proofs",
                           "encoding_proof"]
    column = proof["replica_column_proofs"]["c_x"]
    assert column["column"]["_h"] is None and len(column["column"]["rows"]) == 2
    single = proof["comm_d_proofs"]["data"]["Single"]
    assert list(single) == ["root", "leaf", "path"] and len(single["path"]["path"]) == 6
    assert [len(e["hashes"]) for e in column["inclusion_proof"]["data"]["Single"]["path"]["path"]] == [7, 7]
    assert list(proof["labeling_proofs"][1]) == ["parents", "layer_index", "node"]
    assert len(proof["labeling_proofs"][1]["parents"]) == 37 and proof["encoding_proof"]["layer_index"] == 2


TAMPERS = {  # what is changed in vanilla_proofs[0][1] -> what the verifier says
    "c_x label": (lambda p: p["replica_column_proofs"]["c_x"]["column"]["rows"], 1,
                  "vanilla_proofs[0][1].replica_column_proofs.c_x: the column hashes to"),
    "parent column value": (lambda p: p["replica_column_proofs"]["drg_parents"][2]["column"]["rows"], 0,
                            "vanilla_proofs[0][1].replica_column_proofs.drg_parents[2]: the column hashes to"),
    "tree R path node": (lambda p: p["comm_r_last_proof"]["data"]["Single"]["path"]["path"][1]["hashes"], 3,
                         "vanilla_proofs[0][1].comm_r_last_proof: path hashes to"),
    "tree D path node": (lambda p: p["comm_d_proofs"]["data"]["Single"]["path"]["path"][4]["hashes"], 0,
                         "vanilla_proofs[0][1].comm_d_proofs: path of leaf"),
    "labeling parent": (lambda p: p["labeling_proofs"][1]["parents"], 20,
                        "vanilla_proofs[0][1].labeling_proofs[1].parents[20]: is not the label in the parent's column "
                        "(replica_column_proofs.exp_parents[0] at layer 1)"),
    "encoding parent": (lambda p: p["encoding_proof"]["parents"], 0,
                        "vanilla_proofs[0][1].encoding_proof.parents: differ"),
}


@pytest.mark.parametrize("name", list(TAMPERS))
def test_tampered_c1_fails_naming_the_field(c1_obj, name):
    where, index, message = TAMPERS[name]
    obj = json.loads(json.dumps(c1_obj))
    values = where(obj["vanilla_proofs"]["StackedDrg2KiBV1"][0][1])
    values[index] = flip_bytes(values[index])
    fault = c1_error(parse(obj))
    assert fault is not None and fault.startswith(message) and "\n" not in fault
    assert c1_error(parse(c1_obj)) is None


def test_tampered_comm_r_and_seed_fail(c1_obj):
    obj = dict(c1_obj, comm_r=flip_bytes(c1_obj["comm_r"]))
    assert c1_error(parse(obj)).startswith("comm_r: ")
    obj = dict(c1_obj, seed=flip_bytes(c1_obj["seed"]))
    assert "the challenged node is" in c1_error(parse(obj))


def test_label_not_from_its_parents_fails(sector):
    """A sealer's mistake: one challenged label wrong, trees C and R built over it (all paths hold)."""
    challenge = seal.commit_phase1(sector, SEED).vanilla_proofs[0][0].c_x.index
    bad = sector.labels.copy()
    bad[0, challenge, 0] ^= 1
    fault = c1_error(seal.commit_phase1(sector.with_labels(bad), SEED))
    assert fault.startswith("vanilla_proofs[0][0].labeling_proofs[0]: label does not match its parents")
    assert c1_error(seal.commit_phase1(sector.with_labels(sector.labels.copy()), SEED)) is None


MALFORMED = {
    "missing field": (lambda p: p["replica_column_proofs"]["c_x"].pop("column"),
                      "vanilla_proofs[0][0].replica_column_proofs.c_x: missing field 'column'"),
    "byte over 255": (lambda p: p["encoding_proof"]["parents"][3].__setitem__(5, 256),
                      "vanilla_proofs[0][0].encoding_proof.parents[3]: need numbers 0..255"),
    "not an Fr": (lambda p: p["labeling_proofs"][0]["parents"][0].__setitem__(31, 255),
                  "vanilla_proofs[0][0].labeling_proofs[0].parents[0]: 0xff"),
    "wrong variant": (lambda p: p["comm_r_last_proof"].__setitem__("data", {"Sub": {}}),
                      "vanilla_proofs[0][0].comm_r_last_proof.data: this sector's tree proofs are 'Single', "
                      "have 'Sub'"),
    "negative node": (lambda p: p["labeling_proofs"][1].__setitem__("node", -1),
                      "vanilla_proofs[0][0].labeling_proofs[1].node: need an unsigned 64-bit integer"),
}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_malformed_c1_is_refused_in_one_line(c1_obj, tmp_path, name):
    change, message = MALFORMED[name]
    obj = json.loads(json.dumps(c1_obj))
    change(obj["vanilla_proofs"]["StackedDrg2KiBV1"][0][0])
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(obj))
    with pytest.raises(c1_format.C1FormatError) as e:
        c1_format.read_c1(path)
    assert str(e.value).startswith(f"{path}: {message}") and "\n" not in str(e.value)


def test_unreadable_c1_files(tmp_path):
    path = tmp_path / "c1.json"
    path.write_text("{not json")
    with pytest.raises(c1_format.C1FormatError, match="not JSON"):
        c1_format.read_c1(path)
    path.write_text(json.dumps({"registered_proof": "StackedDrg3KiBV1"}))
    with pytest.raises(c1_format.C1FormatError, match="registered_proof: .*'StackedDrg3KiBV1' is not a known name"):
        c1_format.read_c1(path)


def test_cli_seal_and_verify_c1(tmp_path, capsys):
    piece, out = tmp_path / "piece", tmp_path / "c1.json"
    piece.write_bytes(bytes(range(256)) * 7)
    ids = ["--prover-id", PROVER_ID.hex(), "--sector-id", str(SECTOR_ID)]
    args = ["seal", str(piece), "--sector-size", "2KiB", *ids, "--ticket", TICKET.hex(), "--seed", SEED.hex()]
    assert cli_main(["filecoin", *args, "-o", str(out)]) == 0  # the top-level command leaves -o to the verb
    assert filecoin_main(["verify-c1", str(out), *ids]) == 0
    assert capsys.readouterr().out.count("OK ") == 1
    obj = json.loads(out.read_bytes())
    obj["vanilla_proofs"]["StackedDrg2KiBV1"][0][0]["comm_r_last_proof"]["data"]["Single"]["leaf"][0] ^= 1
    out.write_text(json.dumps(obj))
    assert filecoin_main(["verify-c1", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"{out}: vanilla_proofs[0][0].comm_r_last_proof: path hashes to")
    out.write_text("[]")
    assert filecoin_main(["verify-c1", str(out)]) == 2
    assert filecoin_main([*args[:3], "32GiB", *args[4:], "-o", str(out)]) == 2
    assert "over the 512.0 MiB" in capsys.readouterr().err


def test_sparse_tree_matches_the_full_tree():
    leaves = c1_synthetic.random_nodes(np.random.default_rng(5), 64)
    full = trees.build_tree(leaves, trees.SHAPE_8_0_0)
    known = {i: leaves[i].tobytes() for i in range(64)}
    sparse = c1_synthetic.SparseTree(known, (8, 8), np.random.default_rng(6))
    assert sparse.root == full.root and sparse.path(37) == full.path(37)
    partial = c1_synthetic.SparseTree({37: known[37]}, (8, 8), np.random.default_rng(6))
    assert partial.root != full.root and trees.tree_path_error(partial.path(37), partial.root) is None


def test_synthetic_32gib_c1_verifies(tmp_path):
    proof = registry.registered_seal_proof("StackedDrg32GiBV1_1")
    out = c1_synthetic.synthetic_c1(proof, PROVER_ID, SECTOR_ID, TICKET, SEED, np.random.default_rng(1), 2, 2)
    assert cid.comm_d_to_cid(out.comm_d) == EMPTY_32G_CID
    path = tmp_path / "c1.json"
    c1_format.write_c1(out, path)
    obj = json.loads(path.read_bytes())
    sub = obj["vanilla_proofs"]["StackedDrg32GiBV1"][1][0]["comm_r_last_proof"]["data"]["Sub"]
    assert len(sub["base_proof"]["path"]) == 9 and len(sub["sub_proof"]["path"]) == 1
    back = c1_format.read_c1(path)
    assert c1_error(back, PROVER_ID, SECTOR_ID, complete=False) is None
    assert c1_error(back, complete=True) == "vanilla_proofs: StackedDrg32GiBV1_1 has 10 partitions, the C1 has 2"
    sub["sub_proof"]["path"][0]["hashes"][6] = flip_bytes(sub["sub_proof"]["path"][0]["hashes"][6])
    fault = c1_error(c1_format.parse_c1(obj), complete=False)
    assert fault.startswith("vanilla_proofs[1][0].comm_r_last_proof: path hashes to")


def test_synthetic_2kib_c1_is_complete_and_verifies():
    proof = registry.registered_seal_proof("StackedDrg2KiBV1")
    out = c1_synthetic.synthetic_c1(proof, PROVER_ID, SECTOR_ID, TICKET, SEED, np.random.default_rng(2))
    assert c1_error(parse(c1_format.c1_json(out)), PROVER_ID, SECTOR_ID) is None
    assert out.comm_d == sha254.comm_d(bytes(2048))
    with pytest.raises(ValueError, match="draws its challenges from comm_r"):
        c1_synthetic.synthetic_c1(registry.registered_seal_proof("StackedDrg2KiBV1_1_Feat_SyntheticPoRep"),
                                  PROVER_ID, SECTOR_ID, TICKET, SEED, np.random.default_rng(2))
