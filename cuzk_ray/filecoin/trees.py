"""Trees C and R_last: Poseidon Merkle trees of arity 8 with optional sub and top levels, and comm_r.

Filecoin names a shape base-sub-top: 8-0-0 is one oct-tree (2 KiB to 512 MiB sectors); 8-8-0 is 8
oct-trees whose roots are hashed 8 at a time (32 GiB); 8-8-2 adds a top level hashing 2 of those
(64 GiB). rust-fil-proofs builds the sub-trees over consecutive slices of the leaves, so a compound
tree is an ordinary tree whose top levels have arities sub and top: that is how it is built here,
and its paths are base levels, then the sub level, then the top level (``merkle.InclusionPath``).

Each node is neptune's MerkleTree Poseidon of its children (arity 8, 2 or the sub/top arity).
Tree C's leaves are column hashes: Poseidon of arity 11 over a node's labels in the 11 layers.
comm_r = Poseidon2(comm_c, comm_r_last).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .fr32 import NODE_BYTES, as_nodes, check_nodes
from .merkle import InclusionPath, path_from_levels, path_mismatch
from .poseidon import poseidon_hash_nodes
from .poseidon_batch import hash_node_groups


@dataclass(frozen=True)
class TreeShape:
    """Arities of a compound tree: base levels of ``base``, then one level of ``sub`` and one of ``top`` (0: none)."""

    base: int = 8
    sub: int = 0
    top: int = 0

    @property
    def name(self) -> str:
        return f"{self.base}-{self.sub}-{self.top}"

    def arities(self, leaves: int) -> list[int]:
        """The arity of each level, bottom up, for a tree of ``leaves`` leaves; ValueError if it does not fit."""
        tops = [a for a in (self.sub, self.top) if a]
        per_base = leaves // max(1, np.prod(tops, dtype=int))
        depth = 0
        while self.base**depth < per_base:
            depth += 1
        if leaves == 0 or self.base**depth * max(1, np.prod(tops, dtype=int)) != leaves:
            raise ValueError(f"a {self.name} tree cannot have {leaves} leaves")
        return [self.base] * depth + tops


SHAPE_8_0_0 = TreeShape(8, 0, 0)
SHAPE_8_8_0 = TreeShape(8, 8, 0)
SHAPE_8_8_2 = TreeShape(8, 8, 2)
# rust-fil-proofs filecoin-proofs/src/constants.rs: the tree shape of each production sector size.
SECTOR_SHAPES = {2 << 10: SHAPE_8_0_0, 8 << 20: SHAPE_8_0_0, 512 << 20: SHAPE_8_0_0,
                 32 << 30: SHAPE_8_8_0, 64 << 30: SHAPE_8_8_2}


def shape_for_sector_size(sector_size: int) -> TreeShape:
    """The tree C / R_last shape of a production sector size in bytes."""
    try:
        return SECTOR_SHAPES[sector_size]
    except KeyError:
        raise ValueError(f"no tree shape known for sector size {sector_size}; known: {sorted(SECTOR_SHAPES)}") from None


@dataclass(frozen=True)
class PoseidonTree:
    """Every level of a tree C or R_last, leaves first, the root last, and each level's arity."""

    shape: TreeShape
    levels: tuple[np.ndarray, ...]
    arities: tuple[int, ...]

    @property
    def root(self) -> bytes:
        return self.levels[-1][0].tobytes()

    def path(self, index: int) -> InclusionPath:
        """The inclusion path of leaf ``index`` (base levels, then sub, then top)."""
        return path_from_levels(self.levels, self.arities, index)


def build_tree(leaves, shape: TreeShape = SHAPE_8_0_0, threads: int | None = None) -> PoseidonTree:
    """The tree of ``shape`` over 32-byte Fr leaves (a leaf that is not < r is refused, naming it)."""
    nodes = as_nodes(leaves, "tree leaves")
    check_nodes(nodes, "tree leaves")
    arities = shape.arities(len(nodes))
    levels = [nodes]
    for arity in arities:
        levels.append(hash_node_groups(levels[-1], arity, threads))
    return PoseidonTree(shape, tuple(levels), tuple(arities))


def compound_root(sub_roots: list[bytes], shape: TreeShape) -> bytes:
    """The root of a compound tree from its base trees' roots (what ``p_aux``'s comm_r_last is made of)."""
    level = [bytes(r) for r in sub_roots]
    for arity in [a for a in (shape.sub, shape.top) if a]:
        if len(level) % arity:
            raise ValueError(f"{len(level)} roots do not split into groups of {arity} ({shape.name} tree)")
        level = [poseidon_hash_nodes(level[i : i + arity]) for i in range(0, len(level), arity)]
    if len(level) != 1:
        raise ValueError(f"{len(sub_roots)} base-tree roots do not make one {shape.name} root")
    return level[0]


def column_hashes(labels, threads: int | None = None) -> np.ndarray:
    """Tree C's leaves: ``uint8[n, 32]``, Poseidon (arity = layers) of each node's labels over the layers.
    ``labels``: ``uint8[layers, n, 32]``, layer 1 first."""
    labels = np.asarray(labels, dtype=np.uint8)
    if labels.ndim != 3 or labels.shape[2] != NODE_BYTES:
        raise ValueError(f"labels: need uint8[layers, nodes, {NODE_BYTES}], have shape {labels.shape}")
    columns = np.ascontiguousarray(labels.transpose(1, 0, 2)).reshape(-1, NODE_BYTES)
    return hash_node_groups(columns, labels.shape[0], threads)


def tree_path_error(path: InclusionPath, root: bytes | None = None) -> str | None:
    """None if a Poseidon-tree path hashes up to its root (and to ``root`` when given), else why not."""
    return path_mismatch(path, poseidon_hash_nodes, root)


def path_roots(paths: Sequence[InclusionPath], threads: int | None = None) -> list[bytes]:
    """The root each Poseidon-tree path hashes up to (``merkle.compute_root`` with the tree hash),
    every path's level k hashed in one batch per arity: C1 checks thousands of short paths. A level
    index outside its arity is refused (ValueError)."""
    current = [p.leaf for p in paths]
    for k in range(max((len(p.levels) for p in paths), default=0)):
        by_arity: dict[int, list[int]] = {}
        for i, p in enumerate(paths):
            if k < len(p.levels):
                by_arity.setdefault(p.levels[k].arity, []).append(i)
        for arity, members in by_arity.items():
            children = b"".join(b"".join(paths[i].levels[k].children(current[i])) for i in members)
            digests = hash_node_groups(np.frombuffer(children, dtype=np.uint8).reshape(-1, NODE_BYTES), arity, threads)
            for i, digest in zip(members, digests):
                current[i] = digest.tobytes()
    return current


def comm_r(comm_c: bytes, comm_r_last: bytes) -> bytes:
    """comm_r = Poseidon2(comm_c, comm_r_last), as 32 bytes."""
    return poseidon_hash_nodes([comm_c, comm_r_last])
