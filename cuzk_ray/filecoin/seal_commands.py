"""``cuzk-ray filecoin seal`` and ``cuzk-ray filecoin verify-c1``: a small sector's C1 file, and the
vanilla check of any C1 file (registered in ``commands.VERBS``).

    cuzk-ray filecoin seal PIECE --sector-size 2KiB --prover-id HEX --sector-id N --ticket HEX
                           --seed HEX [--api-version 1.1.0] -o C1.json
    cuzk-ray filecoin verify-c1 C1.json [--prover-id HEX --sector-id N]

verify-c1 exits 0 (``OK ...``) when the C1 is consistent, 1 with one line naming the field when it
is not, 2 when the file cannot be read as a C1 (one line ``error: ...``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ..engines.admission import format_bytes, parse_bytes
from .c1 import read_c1, write_c1
from .cid import comm_d_to_cid, comm_r_to_cid
from .registry import SEAL_PROOFS, ApiVersion, RegisteredSealProof
from .seal import MAX_SEAL_BYTES, commit_phase1, seal_sector
from .sector_args import parse_hex
from .vanilla import c1_error


def seal_proof_for(sector_size: int, api_version: ApiVersion) -> RegisteredSealProof:
    """The interactive registered proof of a sector size and ApiVersion (V1 for 1.0.0, V1_1 for 1.1.0)."""
    for p in SEAL_PROOFS:
        if p.sector_size == sector_size and p.api_version is api_version and not p.features:
            return p
    sizes = sorted({p.sector_size for p in SEAL_PROOFS})
    if sector_size not in sizes:
        raise ValueError(f"--sector-size: {sector_size} bytes is not a Filecoin sector size ({sizes})")
    raise ValueError(f"--api-version: {api_version.value} has no interactive PoRep (use 1.0.0 or 1.1.0)")


def add_seal_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("piece", metavar="PIECE", help="the data (at most the sector's capacity; zero-filled)")
    ap.add_argument("--sector-size", required=True, help="2KiB, 8MiB or 512MiB (larger sectors are refused)")
    ap.add_argument("--prover-id", required=True, help="32 bytes, hex")
    ap.add_argument("--sector-id", required=True, type=int)
    ap.add_argument("--ticket", required=True, help="32 bytes, hex")
    ap.add_argument("--seed", required=True, help="32 bytes, hex (the interactive randomness)")
    ap.add_argument("--api-version", default="1.1.0", help="1.0.0 or 1.1.0 (default 1.1.0)")
    ap.add_argument("-o", "--output", required=True, help="the C1 JSON file to write")


def run_seal(args: argparse.Namespace) -> int:
    """Seal a small sector and write its C1 file; prints the commitments and the time taken."""
    size = parse_bytes(args.sector_size, "--sector-size")
    if size > MAX_SEAL_BYTES:
        raise ValueError(f"--sector-size: {args.sector_size} is over the {format_bytes(MAX_SEAL_BYTES)} this test "
                         "sealer handles (jobs/make_c1_32g.py makes a consistent 32 GiB C1 without sealing)")
    proof = seal_proof_for(size, ApiVersion.parse(args.api_version))
    prover_id, ticket = parse_hex(args.prover_id, "--prover-id"), parse_hex(args.ticket, "--ticket")
    seed = parse_hex(args.seed, "--seed")
    if not 0 <= args.sector_id < 1 << 64:
        raise ValueError(f"--sector-id: {args.sector_id} is not a u64")
    start = time.perf_counter()
    sector = seal_sector(Path(args.piece).read_bytes(), proof, prover_id, args.sector_id, ticket)
    written = write_c1(commit_phase1(sector, seed), args.output)
    print(f"{proof.name}: comm_d {comm_d_to_cid(sector.comm_d)} comm_r {comm_r_to_cid(sector.comm_r)}; "
          f"{args.output} ({format_bytes(written)}) in {time.perf_counter() - start:.1f} s")
    return 0


def add_verify_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("c1", metavar="C1.json")
    ap.add_argument("--prover-id", help="32 bytes, hex: with --sector-id, replica_id is checked too")
    ap.add_argument("--sector-id", type=int)


def run_verify_c1(args: argparse.Namespace) -> int:
    """0 and ``OK`` for a consistent C1; 1 and one line naming the fault otherwise."""
    c1 = read_c1(args.c1)
    prover_id = parse_hex(args.prover_id, "--prover-id") if args.prover_id else None
    fault = c1_error(c1, prover_id, args.sector_id)
    if fault:
        print(f"{args.c1}: {fault}", file=sys.stderr)
        return 1
    challenges = sum(len(part) for part in c1.vanilla_proofs)
    replica = "checked" if prover_id is not None and args.sector_id is not None else "not checked (no prover/sector id)"
    print(f"OK {args.c1}: {c1.registered_proof.name}, {len(c1.vanilla_proofs)} partitions, {challenges} challenges "
          f"consistent with comm_r {comm_r_to_cid(c1.comm_r)}; replica_id {replica}")
    return 0


SEAL_VERBS = {
    "seal": ("seal a small sector (2KiB, 8MiB, 512MiB) and write its C1 JSON", add_seal_arguments, run_seal),
    "verify-c1": ("check every vanilla proof of a C1 JSON file", add_verify_arguments, run_verify_c1),
}
