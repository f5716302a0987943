"""``cuzk-ray filecoin comm-d | inputs | verify`` (issue 29 item 6) against outside data:

- comm-d: curio's tree-D vectors (filecoin-project/curio lib/proof/treed_build_test.go at
  7fae6908178dba78bbf464321940ab7785d1daab: ``Test2K``, ``Test8MiBUnpad``, and ``Test32G``'s
  all-zero 32 GiB sector "baga6ea4seaqao7s...");
- inputs and verify: eigerco/polka-storage's real 2 KiB PoRep proof with its key and public data
  (tests/filecoin_vectors.py); one sector value changed (ticket, seed, sector id) must give INVALID.

Verbs run in-process through ``commands.main`` (fast); the one-line error rule is checked on real
subprocesses (exit code 2, one line on stderr, no traceback)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from filecoin_vectors import polka_porep_2kib, polka_porep_verifies

from cuzk_ray.filecoin import fr32, sha254
from cuzk_ray.filecoin.cid import cid_to_comm_d, comm_d_to_cid
from cuzk_ray.filecoin.commands import main
from cuzk_ray.filecoin.parameters_json import PUBLISHED_FILES
from cuzk_ray.filecoin.params import write_vk
from cuzk_ray.filecoin.piece_comm_d import piece_comm_d, zero_roots
from cuzk_ray.filecoin.public_inputs import SealPublicData, porep_public_inputs, replica_id
from cuzk_ray.filecoin.registry import ApiVersion, PoRepConfig, registered_seal_proof

ROOT = Path(__file__).resolve().parent.parent
CURIO_2K_CID = "baga6ea4seaqovgk4kr4eoifujh6jfmdqvw3m6zrvyjqzu6s6abkketui6jjoydi"
CURIO_8M_CID = "baga6ea4seaqcgqckrcapts6hea44xbqugwocqneekvyp5fizbo6u3e2biluckla"
CURIO_32G_ZERO_CID = "baga6ea4seaqao7s73y24kcutaosvacpdjgfe5pw76ooefnyqw4ynr3d2y6x2mpq"
CURIO_ZERO_LEVEL_1 = "f5a5fd42d16a20302798ef6ed309979b43003d2320d9f0e8ea9831a92759fb0b"  # expect32Null, level 1


def run(capsys, *argv) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``cuzk-ray filecoin ARGV`` run in this process."""
    try:
        rc = main([str(a) for a in argv])
    except SystemExit as e:  # argparse's exits
        rc = e.code
    out, err = capsys.readouterr()
    return rc, out, err


def piece(tmp_path, data: bytes, name: str = "piece.bin") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


# --- comm-d -------------------------------------------------------------------------------------


def test_comm_d_prints_curios_2kib_and_8mib_cids(capsys, tmp_path):
    one = piece(tmp_path, b"\x01")  # curio's inputs: data byte 0 = 1, the rest zero (zero fill here)
    assert run(capsys, "comm-d", one, "--sector-size", "2KiB") == (0, CURIO_2K_CID + "\n", "")
    assert run(capsys, "comm-d", one, "--sector-size", "8MiB") == (0, CURIO_8M_CID + "\n", "")
    rc, out, _ = run(capsys, "comm-d", one, "--sector-size", "2048", "--hex")
    assert rc == 0 and bytes.fromhex(out.strip()) == cid_to_comm_d(CURIO_2K_CID)
    two = piece(tmp_path, b"\x02", "two.bin")
    rc, out, _ = run(capsys, "comm-d", two, "--sector-size", "2KiB")
    assert rc == 0 and out.startswith("baga6ea4sea") and out.strip() != CURIO_2K_CID


def test_comm_d_of_an_empty_32gib_sector_is_curios(capsys, tmp_path):
    empty = piece(tmp_path, b"", "empty.bin")
    assert run(capsys, "comm-d", empty, "--sector-size", "32GiB") == (0, CURIO_32G_ZERO_CID + "\n", "")
    assert zero_roots(1)[1].hex() == CURIO_ZERO_LEVEL_1
    rc, out, _ = run(capsys, "comm-d", piece(tmp_path, b"\x01"), "--sector-size", "32GiB")  # one chunk hashed
    assert rc == 0 and out.strip() != CURIO_32G_ZERO_CID


def test_streamed_comm_d_equals_the_whole_tree(tmp_path):
    rng = np.random.default_rng(29)
    data = rng.integers(0, 256, 8128 - 300, dtype=np.uint8)  # an 8 KiB sector holds 8128 data bytes
    data[1000:3000] = 0  # a zero stretch inside the piece (an all-zero chunk at chunk_leaves=4)
    path = piece(tmp_path, data.tobytes())
    whole = sha254.comm_d(fr32.pad(np.concatenate([data, np.zeros(300, np.uint8)])))
    for chunk_leaves in (4, 16, 256):
        assert piece_comm_d(path, 8192, chunk_leaves).comm_d == whole
    path.write_bytes(data.tobytes() + b"\x01")
    assert piece_comm_d(path, 8192, 4).comm_d != whole


# --- inputs -------------------------------------------------------------------------------------

ZERO32 = "00" * 32


def polka_flags(**change) -> list[str]:
    """The sector flags of polka-storage's 2 KiB vector (porep_id [0; 32], ApiVersion 1.2.0), with
    ``change`` replacing values (flag name without dashes -> text)."""
    v = polka_porep_2kib()
    flags = {"sector-size": "2KiB", "api-version": v.api_version, "porep-id": v.porep_id.hex(),
             "comm-r": v.comm_r.hex(), "comm-d": comm_d_to_cid(v.comm_d), "prover-id": v.prover_id.hex(),
             "sector-id": str(v.sector_number), "ticket": v.ticket.hex(), "seed": v.seed.hex()}
    flags.update({k.replace("_", "-"): val for k, val in change.items()})
    return [x for k, val in flags.items() if val is not None for x in (f"--{k}", val)]


def test_inputs_of_the_polka_storage_vector(capsys):
    v = polka_porep_2kib()
    rc, out, _ = run(capsys, "inputs", *polka_flags())
    doc = json.loads(out)
    assert rc == 0 and doc["partitions"] == 1 and doc["challenges_per_partition"] == 2
    (part,) = doc["partition_inputs"]
    inputs = [int(x) for x in part["public_inputs"]]
    assert polka_porep_verifies(inputs)  # the real proof verifies with what the command printed
    data = SealPublicData(v.comm_r, v.comm_d, v.prover_id, v.sector_number, v.ticket, v.seed)
    assert inputs == porep_public_inputs(PoRepConfig(2048, 1, v.porep_id, ApiVersion.V1_2), data, 0)
    rid = replica_id(v.prover_id, v.sector_number, v.ticket, v.comm_d, v.porep_id)
    assert doc["replica_id"] == rid.hex() and inputs[0] == int(doc["replica_id_fr"])
    assert part["challenges"] == inputs[3 + 15 :: 18]
    rc, out, _ = run(capsys, "inputs", *polka_flags(seed="0e" * 32))
    changed = [int(x) for x in json.loads(out)["partition_inputs"][0]["public_inputs"]]
    assert rc == 0 and changed != inputs and not polka_porep_verifies(changed)


def test_inputs_of_one_32gib_partition_from_a_registered_proof(capsys, tmp_path):
    p = registered_seal_proof("StackedDrg32GiBV1_1")
    v = polka_porep_2kib()
    flags = polka_flags(sector_size=None, api_version=None, porep_id=None)
    out_file = tmp_path / "inputs.json"
    rc, out, _ = run(capsys, "inputs", "--registered-proof", p.name, *flags, "--partition", "9", "--out", out_file)
    doc = json.loads(out_file.read_text())
    assert rc == 0 and out == "" and doc["registered_proof"] == p.name and doc["porep_id"] == p.porep_id.hex()
    (part,) = doc["partition_inputs"]
    data = SealPublicData(v.comm_r, v.comm_d, v.prover_id, v.sector_number, v.ticket, v.seed)
    assert part["partition"] == 9 and len(part["public_inputs"]) == 3 + 18 * 18
    assert [int(x) for x in part["public_inputs"]] == porep_public_inputs(p.config, data, 9)
    assert [int(x) for x in part["public_inputs"]] != porep_public_inputs(p.config, data, 8)
    rc, _, err = run(capsys, "inputs", "--registered-proof", p.name, *flags, "--partition", "10")
    assert rc == 2 and err == "error: --partition: 10 is outside 0..9 (10 partitions for this proof type)\n"


# --- verify -------------------------------------------------------------------------------------


@pytest.fixture
def polka_files(tmp_path) -> tuple[Path, Path]:
    v = polka_porep_2kib()
    return piece(tmp_path, v.proof_bytes, "proof.bin"), piece(tmp_path, v.vk_bytes, "polka.vk")


def test_verify_polka_storage_real_proof(capsys, polka_files):
    proof, vk = polka_files
    assert run(capsys, "verify", proof, "--vk", vk, *polka_flags()) == (0, "OK\n", "")
    v = polka_porep_2kib()
    for change in ({"ticket": "0d" * 32}, {"seed": "0c" * 32}, {"sector_id": str(v.sector_number + 1)}):
        rc, out, err = run(capsys, "verify", proof, "--vk", vk, *polka_flags(**change))
        assert (rc, out) == (1, "INVALID\n") and "partition(s) 0 do not verify" in err, change


def test_verify_with_registered_proof_and_bellperson_vk(capsys, polka_files, tmp_path):
    proof, vk = polka_files
    # StackedDrg2KiBV1_1 has the same graph as polka's ApiVersion 1.2.0, but porep_id 5: give theirs
    flags = polka_flags(sector_size=None, api_version=None, porep_id=None)
    assert run(capsys, "verify", proof, "--vk", vk, "--registered-proof", "StackedDrg2KiBV1_1", "--porep-id", ZERO32,
               *flags)[:2] == (0, "OK\n")
    assert run(capsys, "verify", proof, "--vk", vk, "--registered-proof", "StackedDrg2KiBV1_1", *flags)[:2] == (
        1, "INVALID\n")
    bellperson_vk = tmp_path / "key.vk"  # the same key in bellperson's uncompressed .vk layout
    write_vk(bellperson_vk, polka_porep_2kib().vk)
    assert run(capsys, "verify", proof, "--vk", bellperson_vk, *polka_flags())[:2] == (0, "OK\n")
    raw = proof.read_bytes()
    swapped = piece(tmp_path, raw[144:] + raw[48:144] + raw[:48], "swapped.bin")  # A and C exchanged
    assert run(capsys, "verify", swapped, "--vk", bellperson_vk, *polka_flags())[:2] == (1, "INVALID\n")


def test_verify_refuses_keys_that_do_not_fit(capsys, polka_files, tmp_path):
    proof, vk = polka_files
    rc, _, err = run(capsys, "verify", proof, "--vk", vk, "--vk-layout", "bellperson", *polka_flags())
    assert rc == 2 and err.startswith(f"error: {vk}: ") and err.count("\n") == 1
    name = next(n for n, f in PUBLISHED_FILES.items() if f.sector_size == 2048 and n.endswith(".vk"))
    published = piece(tmp_path, vk.read_bytes(), name)  # a published name, not that file's digest
    rc, _, err = run(capsys, "verify", proof, "--vk", published, *polka_flags())
    assert rc == 2 and "does not match parameters.json's dc1ade9929ade1708238f155343044ac" in err
    name_32g = next(n for n, f in PUBLISHED_FILES.items() if f.sector_size == 32 << 30 and n.endswith(".vk"))
    rc, _, err = run(capsys, "verify", proof, "--vk", piece(tmp_path, b"", name_32g), *polka_flags())
    assert rc == 2 and "the published key of 34359738368-byte sectors, the sector has 2048 bytes" in err
    rc, _, err = run(capsys, "verify", proof, "--vk", vk, *polka_flags(), "--partition", "0")
    assert (rc, err) == (0, "")
    rc, _, err = run(capsys, "verify", piece(tmp_path, proof.read_bytes() * 2, "two.bin"), "--vk", vk,
                     *polka_flags())
    assert rc == 2 and "1 partition(s) need 192 bytes, the file has 384" in err


# --- the error rule, on real subprocesses -----------------------------------------------------


def cli(*args) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "cuzk_ray.cli", "filecoin", *map(str, args)], capture_output=True,
                          text=True, timeout=120, env=env)


def test_bad_input_is_one_line_and_exit_2(tmp_path, polka_files):
    proof, vk = polka_files
    too_big = piece(tmp_path, bytes(2033), "big.bin")
    cases = {
        "--ticket: 'zz' is not hex": ("verify", proof, "--vk", vk, *polka_flags(ticket="zz")),
        "--seed: need 32 bytes (64 hex digits), have 31": ("inputs", *polka_flags(seed="0d" * 31)),
        f"PROOF {tmp_path / 'missing.bin'}: cannot read: No such file or directory":
            ("verify", tmp_path / "missing.bin", "--vk", vk, *polka_flags()),
        f"PIECE {too_big}: 2033 bytes do not fit a 2048-byte sector, which holds 2032 bytes":
            ("comm-d", too_big, "--sector-size", "2KiB"),
        "the following arguments are required: --sector-size": ("comm-d", too_big),
    }
    for message, args in cases.items():
        res = cli(*args)
        assert res.returncode == 2 and res.stdout == "", (message, res.stdout, res.stderr)
        assert res.stderr.count("\n") == 1 and res.stderr.startswith("error: ") and message in res.stderr, res.stderr
    assert cli("comm-d", piece(tmp_path, bytes(2032), "fits.bin"), "--sector-size", "2KiB").returncode == 0
