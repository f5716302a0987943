"""Filecoin test vectors committed under tests/fixtures/filecoin, with loaders for the tests.

polka_storage_porep_2kib.json: a real 2 KiB PoRep proof (StackedDRG2KiBV1P1, porep_id [0; 32],
ApiVersion 1.2.0) with its verifying key in polka-storage's compressed layout and the public data
(sector 77, prover_id [0; 32], ticket [12; 32], seed [13; 32], comm_r, comm_d). Copied from
eigerco/polka-storage ``pallets/proofs/src/tests/porep.rs`` at commit
ce0aa7ff8f4e0c0028542882779cd82ff481dd9d (the file's ``source`` field says which functions).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cuzk_ray.filecoin.params import BellpersonVerifyingKey
from cuzk_ray.filecoin.polka_storage import vk_from_polka_bytes
from cuzk_ray.filecoin.proofs import proof_from_bytes
from cuzk_ray.filecoin.verifier import verify_proof
from cuzk_ray.groth16.keys import Proof

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "filecoin"
POLKA_POREP_2KIB = FIXTURES / "polka_storage_porep_2kib.json"


@dataclass(frozen=True)
class PolkaPorepVector:
    """The polka-storage 2 KiB PoRep vector, decoded (32-byte values as bytes)."""

    vk_bytes: bytes
    proof_bytes: bytes
    sector_number: int
    prover_id: bytes
    ticket: bytes
    seed: bytes
    porep_id: bytes
    api_version: str
    comm_r: bytes
    comm_d: bytes

    @property
    def vk(self) -> BellpersonVerifyingKey:
        return vk_from_polka_bytes(self.vk_bytes, str(POLKA_POREP_2KIB) + " vk")

    @property
    def proof(self) -> Proof:
        return proof_from_bytes(self.proof_bytes, str(POLKA_POREP_2KIB) + " proof")


def polka_porep_2kib() -> PolkaPorepVector:
    d = json.loads(POLKA_POREP_2KIB.read_text())
    raw = {k: bytes.fromhex(d[k]) for k in ("vk", "proof", "prover_id", "ticket", "seed", "porep_id", "comm_r",
                                            "comm_d")}
    return PolkaPorepVector(vk_bytes=raw["vk"], proof_bytes=raw["proof"], sector_number=d["sector_number"],
                            prover_id=raw["prover_id"], ticket=raw["ticket"], seed=raw["seed"],
                            porep_id=raw["porep_id"], api_version=d["api_version"], comm_r=raw["comm_r"],
                            comm_d=raw["comm_d"])


def polka_porep_verifies(inputs: Sequence[int]) -> bool:
    """Does polka-storage's real 2 KiB PoRep proof verify under its key for these 39 public inputs
    (Fr ints, no leading ONE, in bellperson's packing order)? The public-input engineer wires this
    up: True for the inputs computed from the vector's public data, False with any one changed."""
    v = polka_porep_2kib()
    return verify_proof(v.vk, v.proof, inputs)
