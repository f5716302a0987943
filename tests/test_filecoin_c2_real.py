"""Issue 30 end to end on the CPU with the REAL 2 KiB PoRep partition circuit (variant ``stacked``:
2.69M constraints, domain 2^22): a sealed 2 KiB sector -> C1 -> ``cuzk-ray filecoin c2`` with a
development .params made here (~10.2M G1 + 0.69M G2 points: fast/fixed_base.py) -> a MultiProof
that ``cuzk-ray filecoin verify`` accepts, and refuses with another comm_r or another seed (the
public inputs the verifier derives from the sector, not the prover's).

The expensive part (seal, key, proof: ~3.5 minutes on the 2-core dev box) is one module fixture;
the checks after it take well under a second each. The partition cache c2 reads is a copy of the
session's (conftest.partition_cache_2k: c2.circuit_setup on an empty dir, the cache-miss path;
tests/test_filecoin_partition_cache.py checks it). tests/test_filecoin_c2.py covers the command's
other paths on the ~400-constraint stand-in.
"""

from __future__ import annotations

import pytest
from conftest import copy_partition_cache

from cuzk_ray.filecoin import c2, fr32, registry, seal
from cuzk_ray.filecoin.c1 import read_c1, write_c1
from cuzk_ray.filecoin.commands import main

PROVER_ID, SECTOR_ID, TICKET, SEED = bytes(31) + b"\x05", 1234, bytes([21]) * 32, bytes([22]) * 32
PROOF = "StackedDrg2KiBV1_1"


@pytest.fixture(scope="module")
def proved(tmp_path_factory, partition_cache_2k):
    """(C1 path, MultiProof path, dev .vk path) of a sealed 2 KiB sector proved by ``filecoin c2``
    with the real partition circuit (a copy of the session's partition cache) and a development key
    made in this module's tmp dir."""
    root = tmp_path_factory.mktemp("c2-real")
    piece = bytearray(fr32.unpadded_size(2048))
    piece[:4] = b"cuzk"
    proof = registry.registered_seal_proof(PROOF)
    sector = seal.seal_sector(bytes(piece), proof, PROVER_ID, SECTOR_ID, TICKET)
    write_c1(seal.commit_phase1(sector, SEED), root / "c1.json")
    cache, out = copy_partition_cache(partition_cache_2k, root / "cache"), root / "proof.bin"
    assert main(["c2", str(root / "c1.json"), "--variant", "stacked", "--cache-dir", str(cache), "--backend", "cpu",
                 "-o", str(out)]) == 0
    setup = c2.circuit_setup(proof, cache, "stacked")
    assert setup.recording.shape.num_constraints > 2_600_000  # the real circuit, not the stand-in
    return root / "c1.json", out, c2.dev_key_files(setup, cache)[1]


def verify(capsys, c1_path, proof, vk, comm_r: bytes | None = None, seed: bytes | None = None) -> tuple[int, str]:
    c1 = read_c1(c1_path)
    capsys.readouterr()
    code = main(["verify", str(proof), "--vk", str(vk), "--registered-proof", PROOF,
                 "--comm-r", (comm_r or c1.comm_r).hex(), "--comm-d", c1.comm_d.hex(), "--prover-id", PROVER_ID.hex(),
                 "--sector-id", str(SECTOR_ID), "--ticket", TICKET.hex(), "--seed", (seed or SEED).hex()])
    return code, capsys.readouterr().out.strip()


def test_the_real_2kib_multiproof_verifies(proved, capsys):
    c1, proof, vk = proved
    assert proof.stat().st_size == 192
    assert verify(capsys, c1, proof, vk) == (0, "OK")


def test_it_fails_with_another_comm_r(proved, capsys):
    c1, proof, vk = proved
    comm_r = bytearray(read_c1(c1).comm_r)
    comm_r[0] ^= 1  # still a field element: another sector's comm_r
    assert verify(capsys, c1, proof, vk, comm_r=bytes(comm_r)) == (1, "INVALID")


def test_it_fails_with_another_seed(proved, capsys):
    c1, proof, vk = proved
    assert verify(capsys, c1, proof, vk, seed=bytes([23]) * 32) == (1, "INVALID")  # other challenges
