"""WindowPoSt vanilla proofs in rust-fil-proofs' bincode form: reading them, and checking their
tree-R paths up to comm_r_last and comm_r = Poseidon2(comm_c, comm_r_last).

Layout (serde + bincode, little-endian, lengths as u64; curio `lib/proof/post_vproof_bin_decode.go`):

    FallbackPoStSectorProof = sector_id u64, comm_r [32], sectors: Vec<SectorProof>
    SectorProof             = inclusion_proofs: Vec<MerkleProof>, comm_c [32], comm_r_last [32]
    MerkleProof             = u32 variant, then
                              0 Single: root, leaf, path
                              1 Sub:    base path, sub path, root, leaf
                              2 Top:    base path, sub path, top path, root, leaf
    path                    = Vec<PathElement>; PathElement = hashes: Vec<[32]>, index u64

The check is the one curio's Go verifier makes (``post_vproof_verify.go``): it does not derive
the challenged leaves from the randomness.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from .fr32 import NODE_BYTES
from .merkle import InclusionPath, PathLevel
from .trees import comm_r as compute_comm_r
from .trees import tree_path_error

MAX_ITEMS = 1 << 20  # a length above this is a corrupt file, not a proof


class BincodeReader:
    """Sequential little-endian reads from bytes; a short read names the file, field and offset."""

    def __init__(self, data: bytes, what: str):
        self.data, self.what, self.offset = bytes(data), what, 0

    def take(self, n: int, field: str) -> bytes:
        if self.offset + n > len(self.data):
            raise ValueError(f"{self.what}: offset {self.offset}: need {n} bytes for {field}, "
                             f"have {len(self.data) - self.offset}")
        out = self.data[self.offset : self.offset + n]
        self.offset += n
        return out

    def u32(self, field: str) -> int:
        return struct.unpack("<I", self.take(4, field))[0]

    def u64(self, field: str) -> int:
        return struct.unpack("<Q", self.take(8, field))[0]

    def length(self, field: str) -> int:
        at, n = self.offset, self.u64(f"{field} length")
        if n > MAX_ITEMS:
            raise ValueError(f"{self.what}: offset {at}: {field} length {n} is implausible (> {MAX_ITEMS})")
        return n

    def node(self, field: str) -> bytes:
        return self.take(NODE_BYTES, field)


@dataclass(frozen=True)
class SectorProof:
    """One sector's challenged tree-R paths, with the sector's comm_c and comm_r_last."""

    inclusion_proofs: tuple[InclusionPath, ...]
    comm_c: bytes
    comm_r_last: bytes


@dataclass(frozen=True)
class FallbackPoStSectorProof:
    """A sector's WindowPoSt/WinningPoSt vanilla proof."""

    sector_id: int
    comm_r: bytes
    sectors: tuple[SectorProof, ...]


def _read_levels(r: BincodeReader, field: str) -> list[PathLevel]:
    levels = []
    for k in range(r.length(field)):
        hashes = tuple(r.node(f"{field}[{k}] hash") for _ in range(r.length(f"{field}[{k}] hashes")))
        levels.append(PathLevel(hashes, r.u64(f"{field}[{k}] index")))
    return levels


def read_merkle_proof(r: BincodeReader, field: str) -> InclusionPath:
    """One MerkleProof (single, sub or top) as a flat path: base levels, then sub, then top."""
    at, variant = r.offset, r.u32(f"{field} variant")
    if variant == 0:
        root, leaf = r.node(f"{field} root"), r.node(f"{field} leaf")
        return InclusionPath(leaf, tuple(_read_levels(r, f"{field} path")), root)
    if variant not in (1, 2):
        raise ValueError(f"{r.what}: offset {at}: {field} variant {variant}, expected 0 (single), 1 (sub) or 2 (top)")
    parts = ("base", "sub", "top")[: variant + 1]
    levels = [lvl for part in parts for lvl in _read_levels(r, f"{field} {part} path")]
    root, leaf = r.node(f"{field} root"), r.node(f"{field} leaf")
    return InclusionPath(leaf, tuple(levels), root)


def read_fallback_post_sector_proof(data: bytes, what: str = "vanilla PoSt proof") -> FallbackPoStSectorProof:
    """Decode one bincode FallbackPoStSectorProof (the whole of ``data``; trailing bytes are an error)."""
    r = BincodeReader(data, what)
    sector_id, comm_r = r.u64("sector_id"), r.node("comm_r")
    sectors = []
    for s in range(r.length("sectors")):
        paths = tuple(read_merkle_proof(r, f"sectors[{s}].inclusion_proofs[{i}]")
                      for i in range(r.length(f"sectors[{s}].inclusion_proofs")))
        sectors.append(SectorProof(paths, r.node(f"sectors[{s}].comm_c"), r.node(f"sectors[{s}].comm_r_last")))
    if r.offset != len(r.data):
        raise ValueError(f"{what}: {len(r.data) - r.offset} trailing bytes after the proof at offset {r.offset}")
    return FallbackPoStSectorProof(sector_id, comm_r, tuple(sectors))


def post_proof_error(proof: FallbackPoStSectorProof, comm_r: bytes) -> str | None:
    """None if the proof is for ``comm_r`` and every path reaches its sector's comm_r_last, else the first fault."""
    if proof.comm_r != comm_r:
        return f"sector {proof.sector_id}: proof's comm_r {proof.comm_r.hex()} is not {comm_r.hex()}"
    for s, sector in enumerate(proof.sectors):
        if compute_comm_r(sector.comm_c, sector.comm_r_last) != comm_r:
            return f"sectors[{s}]: Poseidon2(comm_c, comm_r_last) is not comm_r"
        for i, path in enumerate(sector.inclusion_proofs):
            fault = tree_path_error(path, sector.comm_r_last)
            if fault:
                return f"sectors[{s}].inclusion_proofs[{i}]: {fault}"
    return None
