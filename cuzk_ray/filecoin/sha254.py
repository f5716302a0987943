"""SHA-254 and tree D: Filecoin's binary Merkle tree over a sector's fr32-padded data; comm_d is its root.

SHA-254 is SHA-256 with the top two bits of the digest's last byte cleared, so every node is a
valid Fr element (< 2^254). A parent is SHA-254(left || right) (rust-fil-proofs
`filecoin-hashers/src/sha256.rs`). hashlib does each node; a level is one Python loop over a
contiguous buffer: about 0.3 s for the 2^18 leaves of an 8 MiB sector (see the tests' timing).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .fr32 import NODE_BYTES, SAFE_TOP_MASK, as_nodes
from .merkle import InclusionPath, path_from_levels, path_mismatch


def sha254(data: bytes) -> bytes:
    """SHA-256 of ``data`` with the last byte's top two bits cleared."""
    digest = bytearray(hashlib.sha256(data).digest())
    digest[-1] &= SAFE_TOP_MASK
    return bytes(digest)


def hash_pair(children: Sequence[bytes]) -> bytes:
    """A tree-D parent from its two children."""
    if len(children) != 2:
        raise ValueError(f"tree D is binary: need 2 children, have {len(children)}")
    return sha254(children[0] + children[1])


def hash_level(nodes: np.ndarray) -> np.ndarray:
    """The parents ``uint8[n/2, 32]`` of a level ``uint8[n, 32]`` (n even)."""
    if len(nodes) % 2:
        raise ValueError(f"a tree-D level needs an even number of nodes, has {len(nodes)}")
    buf = memoryview(np.ascontiguousarray(nodes, dtype=np.uint8).reshape(-1))
    sha = hashlib.sha256
    step = 2 * NODE_BYTES
    out = np.frombuffer(bytearray(b"".join(sha(buf[i : i + step]).digest() for i in range(0, len(buf), step))),
                        dtype=np.uint8).reshape(-1, NODE_BYTES)
    out[:, -1] &= SAFE_TOP_MASK
    return out


@dataclass(frozen=True)
class TreeD:
    """Every level of a tree D, leaves first, the root (comm_d) last."""

    levels: tuple[np.ndarray, ...]

    @property
    def root(self) -> bytes:
        return self.levels[-1][0].tobytes()

    def path(self, index: int) -> InclusionPath:
        """The inclusion path of leaf ``index``."""
        return path_from_levels(self.levels, [2] * (len(self.levels) - 1), index)


def build_tree_d(padded) -> TreeD:
    """Tree D over fr32-padded sector data (bytes or ``uint8``; a power-of-two number of 32-byte nodes)."""
    leaves = as_nodes(padded, "tree D leaves")
    n = len(leaves)
    if n == 0 or n & (n - 1):
        raise ValueError(f"tree D needs a power-of-two number of leaves, has {n}")
    levels = [leaves]
    while len(levels[-1]) > 1:
        levels.append(hash_level(levels[-1]))
    return TreeD(tuple(levels))


def comm_d(padded) -> bytes:
    """comm_d: the root of tree D over fr32-padded data."""
    return build_tree_d(padded).root


def tree_d_path_error(path: InclusionPath, root: bytes | None = None) -> str | None:
    """None if a tree-D path hashes up to its root (and to ``root`` when given), else why not."""
    if any(level.arity != 2 for level in path.levels):
        return "tree D path has a level whose arity is not 2"
    return path_mismatch(path, hash_pair, root)
