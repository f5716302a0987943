"""Filecoin's C2 of the REAL 2 KiB partition circuit on the GPU, end to end (issue 30): a sealed
2 KiB sector -> C1 -> ``cuzk-ray filecoin c2 ... --backend cuda`` (the partition cache recorded,
a development .params made by the GPU setup and streamed to disk, the fast witness in the
synthesis task) -> ``cuzk-ray filecoin verify`` says OK; with another comm_r it says INVALID.

Run on a GPU machine: ``pytest -m gpu tests/test_filecoin_c2_gpu.py`` (~80 s on an H200: the
2.69M-constraint circuit, a 2^22 bellperson domain; the same key on two CPU cores takes ~20 min,
which is why CI proves the stand-in instead, tests/test_filecoin_c2.py).
"""

from __future__ import annotations

import pytest
from gpu import require_gpu

cp = require_gpu()

from cuzk_ray.filecoin import c2, fr32, registry, seal  # noqa: E402
from cuzk_ray.filecoin.c1 import read_c1, write_c1  # noqa: E402
from cuzk_ray.filecoin.commands import main  # noqa: E402
from cuzk_ray.filecoin.params import read_vk  # noqa: E402

pytestmark = pytest.mark.gpu

PROVER_ID, SECTOR_ID, TICKET, SEED = bytes(31) + b"\x07", 77, bytes([12]) * 32, bytes([13]) * 32
PROOF = "StackedDrg2KiBV1_1"


@pytest.fixture(scope="module")
def proved(tmp_path_factory):
    """(C1 path, MultiProof path, dev .vk) of a sealed 2 KiB sector proved on the GPU."""
    root = tmp_path_factory.mktemp("c2-gpu")
    piece = bytearray(fr32.unpadded_size(2048))
    piece[0] = 5
    sector = seal.seal_sector(bytes(piece), registry.registered_seal_proof(PROOF), PROVER_ID, SECTOR_ID, TICKET)
    c1_path, cache, out = root / "c1.json", root / "cache", root / "proof.bin"
    write_c1(seal.commit_phase1(sector, SEED), c1_path)
    assert main(["c2", str(c1_path), "--backend", "cuda", "--cache-dir", str(cache), "-o", str(out)]) == 0
    setup = c2.circuit_setup(registry.registered_seal_proof(PROOF), cache, "stacked")
    params, vk = c2.dev_key_files(setup, cache)
    bundle = params.with_suffix(".bundle")
    assert (bundle / "manifest.json").is_file() and not params.exists()  # made straight into a bundle
    assert read_vk(vk).n_inputs == setup.recording.shape.num_inputs - 1 == 39  # of the real circuit
    return c1_path, out, vk


def verify_args(c1_path, proof, vk, comm_r: bytes | None = None) -> list[str]:
    c1 = read_c1(c1_path)
    return ["verify", str(proof), "--vk", str(vk), "--registered-proof", PROOF, "--comm-r", (comm_r or c1.comm_r).hex(),
            "--comm-d", c1.comm_d.hex(), "--prover-id", PROVER_ID.hex(), "--sector-id", str(SECTOR_ID),
            "--ticket", TICKET.hex(), "--seed", SEED.hex()]


def test_real_2k_c2_on_the_gpu_verifies(proved, capsys):
    c1, proof, vk = proved
    assert proof.stat().st_size == 192
    capsys.readouterr()
    assert main(verify_args(c1, proof, vk)) == 0
    assert capsys.readouterr().out.strip() == "OK"


def test_real_2k_c2_on_the_gpu_fails_with_another_comm_r(proved, capsys):
    c1, proof, vk = proved
    comm_r = bytearray(read_c1(c1).comm_r)
    comm_r[0] ^= 1
    capsys.readouterr()
    assert main(verify_args(c1, proof, vk, bytes(comm_r))) == 1
    assert capsys.readouterr().out.strip() == "INVALID"


def test_real_2k_c2_on_the_gpu_fails_with_a_tampered_input(proved, capsys):
    c1, proof, vk = proved
    seed = bytes([14]) * 32  # other challenges: other public inputs
    args = verify_args(c1, proof, vk)
    args[args.index("--seed") + 1] = seed.hex()
    capsys.readouterr()
    assert main(args) == 1
    assert capsys.readouterr().out.strip() == "INVALID"
