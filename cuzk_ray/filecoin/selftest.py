"""``cuzk-ray filecoin selftest --params DIR``: is this build compatible with Filecoin's published keys?

For a user who has Filecoin's parameter files (they cannot be downloaded here): the smallest
sector's published ``.params`` and ``.vk`` in DIR, under parameters.json's names, are checked
against its digests; a fresh 2 KiB sector is sealed and its C1 made (this project's sealer), its
partition proved with the published key (this build's circuit recording, witness and bellperson
H) and verified with the published ``.vk`` against the public inputs derived from the C1. Only a
circuit identical to Filecoin's (same constraints, order, variables and densities) gives a proof
that verifies. One line: ``compatible: ...`` (exit 0) or ``NOT compatible: why`` (exit 1).
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path

from .c2 import VARIANTS

SELFTEST_PROOF = "StackedDrg2KiBV1_1"  # the smallest published sector size (2 KiB)
SEAL_IDS = (bytes(31) + b"\x01", 1, bytes([1]) * 32, bytes([2]) * 32)  # prover_id, sector_id, ticket, seed


class Incompatible(Exception):
    """Why this build cannot prove with the given files (the line after ``NOT compatible: ``)."""


@dataclass(frozen=True)
class SelftestResult:
    params: Path
    vk: Path
    constraints: int

    def line(self) -> str:
        return (f"compatible: a fresh 2 KiB sector's partition ({self.constraints} constraints) proved with "
                f"{self.params.name} verifies with {self.vk.name}")


def published_files(params_dir) -> tuple[Path, Path]:
    """The 2 KiB .params and .vk in ``params_dir``, digest-checked (Incompatible otherwise)."""
    from .parameters_json import DigestMismatch, authenticate, published_key_names
    from .registry import registered_seal_proof

    paths = tuple(Path(params_dir).expanduser() / n
                  for n in published_key_names(registered_seal_proof(SELFTEST_PROOF).sector_size))
    for p in paths:
        if not p.is_file():
            raise Incompatible(f"{p}: missing (parameters.json's name for the 2 KiB PoRep {p.suffix})")
        try:
            authenticate(p)
        except DigestMismatch as e:
            raise Incompatible(str(e)) from None
    return paths


def run_selftest_check(params_dir, cache_dir, variant: str = "stacked", threads: int = 2) -> SelftestResult:
    """The whole check (see the module docstring); Incompatible naming the first step that fails."""
    from ..backends.cpu import CpuBackend
    from ..groth16.prover import prove, random_blinding
    from . import c2, fr32, seal
    from .params import BellpersonVerifyingKey, ParamsError, read_vk
    from .registry import registered_seal_proof

    params, vk_path = published_files(params_dir)
    proof = registered_seal_proof(SELFTEST_PROOF)
    setup = c2.circuit_setup(proof, cache_dir, variant)
    try:
        pk = c2.load_params(params, setup)
    except (ParamsError, ValueError) as e:
        raise Incompatible(f"the .params does not fit this build's circuit ({setup.name}): {e}") from None
    vk = read_vk(vk_path)
    if not BellpersonVerifyingKey.from_proving_key(pk).equals(vk):
        raise Incompatible(f"{vk_path.name} is not the verifying key inside {params.name}")
    prover_id, sector_id, ticket, seed = SEAL_IDS
    piece = os.urandom(fr32.unpadded_size(proof.sector_size))  # a fresh sector every run
    c1 = seal.commit_phase1(seal.seal_sector(piece, proof, prover_id, sector_id, ticket), seed)
    witness = c2.partition_witness(setup, c1, 0)
    r, s = random_blinding()
    partition = prove(pk, setup.recording.cs, witness, r, s, CpuBackend(threads=threads))
    try:
        c2.check_multiproof(vk, c1, [partition])
    except ValueError:
        raise Incompatible(f"the proof of a fresh 2 KiB sector does not verify with {vk_path.name}: this build's "
                           "circuit differs from the one the key was made for") from None
    return SelftestResult(params, vk_path, setup.recording.shape.num_constraints)


def add_selftest_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--params", required=True, metavar="DIR", help="the folder holding Filecoin's published "
                                                                   ".params/.vk (parameters.json's names)")
    ap.add_argument("--cache-dir", default=str(Path.home() / ".cache" / "cuzk-ray"), metavar="DIR",
                    help="where the circuit's recording is cached (default ~/.cache/cuzk-ray)")
    ap.add_argument("--variant", choices=VARIANTS, default="stacked", help=argparse.SUPPRESS)  # tests: the stand-in


def run_selftest(args: argparse.Namespace) -> int:
    """Print one line, compatible (exit 0) or NOT compatible: why (exit 1)."""
    if not Path(args.params).expanduser().is_dir():
        raise ValueError(f"--params {args.params}: not a directory")
    try:
        result = run_selftest_check(args.params, args.cache_dir, args.variant)
    except Incompatible as e:
        print(f"NOT compatible: {e}")
        return 1
    print(result.line())
    return 0


SELFTEST_VERBS = {
    "selftest": ("check this build against Filecoin's published 2 KiB .params/.vk: digests, then a fresh sector "
                 "proved and verified", add_selftest_arguments, run_selftest),
}
