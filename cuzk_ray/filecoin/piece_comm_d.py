"""comm_d of a piece file placed at the start of a sector: fr32-padded, zero-filled, tree D streamed.

The sector holds ``unpadded_size(sector_size)`` data bytes (127 of every 128); the piece fills its
start and zeros the rest, so comm_d is the tree-D root over ``fr32.pad(piece + zeros)``. A sector
of 32 GiB does not fit in memory: the file is read ``chunk_leaves`` nodes at a time, each chunk's
subtree root computed (sha254.py), and the roots hashed up to comm_d. fr32 padding maps zero bytes
to zero nodes, so an all-zero chunk (the zero fill, or zeros inside the piece) has a root known in
advance and is not hashed: an empty 32 GiB sector takes no time, a full one about 1 us per node.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from . import fr32
from .cid import comm_d_to_cid
from .sha254 import build_tree_d, hash_level, hash_pair

STREAM_LEAVES = 1 << 18  # tree-D leaves per chunk: 8 MiB of nodes, ~0.3 s of hashing, ~24 MiB of memory
MIN_SECTOR_BYTES = fr32.PADDED_CHUNK  # one fr32 chunk: four nodes


@dataclass(frozen=True)
class PieceCommitment:
    """comm_d of a piece in a sector of ``sector_size`` bytes (the piece's data bytes recorded)."""

    comm_d: bytes
    piece_bytes: int
    sector_size: int

    @property
    def cid(self) -> str:
        return comm_d_to_cid(self.comm_d)


def zero_roots(height: int) -> list[bytes]:
    """Roots of all-zero tree-D subtrees of heights 0..height (height 0: one zero node)."""
    roots = [bytes(fr32.NODE_BYTES)]
    for _ in range(height):
        roots.append(hash_pair((roots[-1], roots[-1])))
    return roots


def check_sector_size(sector_size: int) -> int:
    """``sector_size`` when it is a power of two of at least 128 bytes (a tree D of whole fr32 chunks)."""
    if sector_size < MIN_SECTOR_BYTES or sector_size & (sector_size - 1):
        raise ValueError(f"--sector-size: {sector_size} bytes is not a power of two of at least {MIN_SECTOR_BYTES}")
    return sector_size


def piece_comm_d(path, sector_size: int, chunk_leaves: int = STREAM_LEAVES) -> PieceCommitment:
    """comm_d of the file at ``path`` zero-filled to a sector; ValueError naming the file when it is
    larger than the sector's data capacity or cannot be read."""
    nodes = check_sector_size(sector_size) // fr32.NODE_BYTES
    chunk_leaves = min(chunk_leaves, nodes)
    if chunk_leaves < 4 or chunk_leaves & (chunk_leaves - 1):
        raise ValueError(f"chunk_leaves: {chunk_leaves} is not a power of two of at least 4")
    capacity = fr32.unpadded_size(sector_size)
    name = os.fspath(path)
    try:
        with open(name, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > capacity:
                raise ValueError(f"PIECE {name}: {size} bytes do not fit a {sector_size}-byte sector, which holds "
                                 f"{capacity} bytes of data (fr32: 127 of every 128 bytes)")
            roots = _chunk_roots(f, nodes // chunk_leaves, chunk_leaves)
    except OSError as e:
        raise ValueError(f"PIECE {name}: cannot read: {e.strerror}") from None
    level = fr32.as_nodes(b"".join(roots))
    while len(level) > 1:
        level = hash_level(level)
    return PieceCommitment(level[0].tobytes(), size, sector_size)


def _chunk_roots(f, chunks: int, chunk_leaves: int) -> list[bytes]:
    """The subtree root of each chunk of ``chunk_leaves`` nodes, reading the data each one holds."""
    zero_root = zero_roots(chunk_leaves.bit_length() - 1)[-1]
    block = np.zeros(fr32.unpadded_size(chunk_leaves * fr32.NODE_BYTES), dtype=np.uint8)
    roots = []
    while len(roots) < chunks:
        got = f.readinto(memoryview(block)) or 0
        if got == 0:  # the piece has ended: the rest of the sector is zero fill
            return roots + [zero_root] * (chunks - len(roots))
        block[got:] = 0
        roots.append(build_tree_d(fr32.pad(block)).root if block.any() else zero_root)
    return roots
