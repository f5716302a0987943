"""The sector verbs of ``cuzk-ray filecoin``: ``comm-d``, ``inputs`` and ``verify`` (docs/FILECOIN.md).

- ``comm-d PIECE --sector-size 2KiB``: comm_d of a piece zero-filled to a sector (piece_comm_d.py).
- ``inputs SECTOR-FLAGS``: every partition's public inputs (or one's), replica_id and challenges, as JSON.
- ``verify PROOF --vk FILE SECTOR-FLAGS``: a 192-byte proof or a MultiProof against those inputs;
  ``OK`` (exit 0) or ``INVALID`` (exit 1). A .vk whose name is a published one is checked against
  parameters.json's digest first; polka-storage's compressed key layout is read too.

Registered in ``commands.VERBS`` as ``SECTOR_VERBS``; bad input raises ValueError (one line, exit 2).
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import sys
from dataclasses import dataclass
from pathlib import Path

from ..formats.snarkjs_json import write_bytes_atomic
from .challenges import porep_challenges
from .cid import comm_d_to_cid, comm_r_to_cid
from .parameters_json import authenticate, published_file
from .params import VK_POINTS, BellpersonVerifyingKey, read_vk
from .piece_comm_d import piece_comm_d
from .points import G1
from .polka_storage import vk_from_polka_bytes
from .proofs import PROOF_BYTES, multiproof_from_bytes, proof_from_bytes
from .public_inputs import porep_public_inputs, replica_id, seal_public_inputs
from .sector_args import Sector, add_sector_arguments, parse_size, sector_from_args
from .verifier import prepare_bellperson, verify_proof

INVALID = 1  # exit code of a proof that does not verify (bad input is 2)
VK_LAYOUTS = ("auto", "bellperson", "polka")

# --- comm-d -------------------------------------------------------------------------------------


def add_comm_d_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("piece", metavar="PIECE", help="the piece's data (unpadded bytes); zero-filled to the sector")
    ap.add_argument("--sector-size", required=True, metavar="SIZE", help="2KiB, 8MiB, 512MiB, 32GiB, 64GiB (or bytes)")
    ap.add_argument("--hex", action="store_true", help="print comm_d as 64 hex digits instead of its CID")


def run_comm_d(args: argparse.Namespace) -> int:
    """Print the comm_d CID (or hex) of PIECE placed at the start of a sector."""
    commitment = piece_comm_d(args.piece, parse_size(args.sector_size))
    print(commitment.comm_d.hex() if args.hex else commitment.cid)
    return 0


# --- inputs -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PartitionInputs:
    """One partition's challenged nodes and public inputs (Fr integers, ONE excluded)."""

    partition: int
    challenges: list[int]
    public_inputs: list[int]


def partition_inputs(sector: Sector) -> list[PartitionInputs]:
    """The public inputs of the sector's chosen partitions (one pass over the graph for all)."""
    config, data = sector.config, sector.data
    rid = sector_replica_id(sector)
    if sector.partition is None:
        inputs = seal_public_inputs(config, data)
    else:
        inputs = [porep_public_inputs(config, data, sector.partition)]
    return [PartitionInputs(k, porep_challenges(config, rid, data.comm_r, data.seed, k), xs)
            for k, xs in zip(sector.partitions, inputs)]


def sector_replica_id(sector: Sector) -> bytes:
    d = sector.data
    return replica_id(d.prover_id, d.sector_id, d.ticket, d.comm_d, sector.config.porep_id)


def inputs_document(sector: Sector, parts: list[PartitionInputs]) -> dict:
    """The JSON ``inputs`` prints: the config, the public data, replica_id, and per partition the
    challenges (node indices) and public inputs (decimal strings, bellperson's order)."""
    c, d = sector.config, sector.data
    rid = sector_replica_id(sector)
    return {
        "registered_proof": sector.registered_proof, "sector_size": c.sector_size,
        "api_version": c.api_version.value, "features": [f.value for f in c.features], "porep_id": c.porep_id.hex(),
        "partitions": c.partitions, "challenges_per_partition": c.challenges_per_partition,
        "comm_r": comm_r_to_cid(d.comm_r), "comm_d": comm_d_to_cid(d.comm_d), "prover_id": d.prover_id.hex(),
        "sector_id": d.sector_id, "ticket": d.ticket.hex(), "seed": d.seed.hex(),
        "replica_id": rid.hex(), "replica_id_fr": str(int.from_bytes(rid, "little")),
        "partition_inputs": [{"partition": p.partition, "challenges": p.challenges,
                              "public_inputs": [str(x) for x in p.public_inputs]} for p in parts],
    }


def add_inputs_arguments(ap: argparse.ArgumentParser) -> None:
    add_sector_arguments(ap)
    ap.add_argument("--out", metavar="FILE", help="write the JSON here (temporary name, then rename); default stdout")


def run_inputs(args: argparse.Namespace) -> int:
    """Print (or write) the sector's public inputs as JSON."""
    sector = sector_from_args(args)
    text = json.dumps(inputs_document(sector, partition_inputs(sector)), indent=1) + "\n"
    if args.out is None:
        sys.stdout.write(text)
    else:
        write_bytes_atomic(args.out, text.encode())
    return 0


# --- verify -------------------------------------------------------------------------------------


def add_verify_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("proof", metavar="PROOF", help="192 bytes per partition (a MultiProof), or one 192-byte "
                                                   "proof with --partition K")
    ap.add_argument("--vk", required=True, metavar="FILE", help="the verifying key (.vk)")
    ap.add_argument("--vk-layout", choices=VK_LAYOUTS, default="auto",
                    help="bellperson's .vk (uncompressed points) or polka-storage's compressed layout; "
                         "auto: whichever the file's length fits")
    add_sector_arguments(ap)


def vk_layout_of(data: bytes) -> str | None:
    """'bellperson' or 'polka' when the buffer's ic_len and length fit that layout, else None."""
    for layout, compressed in (("bellperson", False), ("polka", True)):
        size = G1.compressed_size if compressed else G1.uncompressed_size
        head = sum(g.compressed_size if compressed else g.uncompressed_size for _, g in VK_POINTS)
        if len(data) >= head + 4 and len(data) == head + 4 + size * struct.unpack_from(">I", data, head)[0]:
            return layout
    return None


def load_vk(path: str, layout: str = "auto") -> BellpersonVerifyingKey:
    """A verifying key in either layout; a file under a published name is authenticated first."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise ValueError(f"--vk {path}: cannot read: {e.strerror}") from None
    if layout == "auto":
        layout = vk_layout_of(data) or "bellperson"  # the bellperson reader names what does not fit
    if layout == "bellperson":
        return read_vk(path)
    authenticate(path)
    return vk_from_polka_bytes(data, path)


def read_proofs(path: str, sector: Sector) -> list:
    """The partition proofs the file holds: one per chosen partition, 192 bytes each."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise ValueError(f"PROOF {path}: cannot read: {e.strerror}") from None
    want = len(sector.partitions)
    if len(data) != want * PROOF_BYTES:
        which = f"partition {sector.partition}" if sector.partition is not None else f"{want} partition(s)"
        raise ValueError(f"PROOF {path}: {which} need {want * PROOF_BYTES} bytes, the file has {len(data)}"
                         + (" (give --partition K for one proof of a MultiProof)" if len(data) == PROOF_BYTES else ""))
    if sector.partition is not None:
        return [proof_from_bytes(data, f"PROOF {path} (partition {sector.partition})")]
    return multiproof_from_bytes(data, want, f"PROOF {path}")


def run_verify(args: argparse.Namespace) -> int:
    """Print OK (exit 0) when every chosen partition's proof verifies, else INVALID (exit 1)."""
    sector = sector_from_args(args)
    if sector.config.non_interactive:
        raise ValueError("NonInteractivePoRep seal proofs are SnarkPack aggregates, which verify does not read")
    entry = published_file(args.vk)
    if entry is not None and entry.sector_size != sector.config.sector_size:
        raise ValueError(f"--vk {args.vk}: the published key of {entry.sector_size}-byte sectors, the sector has "
                         f"{sector.config.sector_size} bytes")
    vk = load_vk(args.vk, args.vk_layout)
    proofs = read_proofs(args.proof, sector)
    parts = partition_inputs(sector)
    if vk.n_inputs != len(parts[0].public_inputs):
        raise ValueError(f"--vk {args.vk}: the key takes {vk.n_inputs} public inputs, a partition of this sector "
                         f"has {len(parts[0].public_inputs)} (a key for another sector size?)")
    pvk = prepare_bellperson(vk)
    failed = [p.partition for p, proof in zip(parts, proofs) if not verify_proof(pvk, proof, p.public_inputs)]
    if failed:
        print("INVALID")
        print(f"{os.fspath(args.proof)}: partition(s) {', '.join(map(str, failed))} do not verify", file=sys.stderr)
        return INVALID
    print("OK")
    return 0


# verb -> (help, add_arguments, run), merged into commands.VERBS
SECTOR_VERBS = {
    "comm-d": ("comm_d (CID) of a piece file zero-filled to a sector", add_comm_d_arguments, run_comm_d),
    "inputs": ("a sector's PoRep public inputs, replica_id and challenges as JSON", add_inputs_arguments, run_inputs),
    "verify": ("verify a seal proof (192 bytes per partition) against a sector's public data and a .vk",
               add_verify_arguments, run_verify),
}
