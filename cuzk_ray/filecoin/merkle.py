"""Merkle inclusion paths shared by every Filecoin tree: records, extraction from built levels, and
recomputing the root with a given node hash (SHA-254 for tree D, Poseidon for trees C and R).

A path climbs from a leaf to the root. Each level holds the current node's siblings in order and
the current node's position among them (0 <= index < arity); arity = len(siblings) + 1, so one path
type covers binary trees and compound oct-trees (base levels of 8, then sub and top levels).
Nodes are 32-byte little-endian values throughout.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

HashChildren = Callable[[Sequence[bytes]], bytes]  # the arity children of a node, in order -> the node


@dataclass(frozen=True)
class PathLevel:
    """One level of a path: the siblings (in order, current node left out) and the current node's position."""

    siblings: tuple[bytes, ...]
    index: int

    @property
    def arity(self) -> int:
        return len(self.siblings) + 1

    def children(self, current: bytes) -> list[bytes]:
        """The level's children with ``current`` put back at ``index``."""
        if not 0 <= self.index < self.arity:
            raise ValueError(f"path level index {self.index} is outside [0, {self.arity})")
        return [*self.siblings[: self.index], current, *self.siblings[self.index :]]


@dataclass(frozen=True)
class InclusionPath:
    """A leaf, its path levels from the bottom up, and the root the path claims."""

    leaf: bytes
    levels: tuple[PathLevel, ...]
    root: bytes

    @property
    def leaf_index(self) -> int:
        """The leaf's position in the tree, read from the levels' indices (mixed radix, bottom level lowest)."""
        index, scale = 0, 1
        for level in self.levels:
            index += level.index * scale
            scale *= level.arity
        return index


def compute_root(leaf: bytes, levels: Sequence[PathLevel], hash_children: HashChildren) -> bytes:
    """The root reached by hashing ``leaf`` up through ``levels``."""
    node = leaf
    for level in levels:
        node = hash_children(level.children(node))
    return node


def path_mismatch(path: InclusionPath, hash_children: HashChildren, root: bytes | None = None) -> str | None:
    """None if ``path`` hashes up to its root (and to ``root`` when given), else a one-line reason."""
    try:
        computed = compute_root(path.leaf, path.levels, hash_children)
    except ValueError as e:  # a bad index, or a node the hash refuses (not a field element)
        return f"path of leaf {path.leaf_index}: {e}"
    if computed != path.root:
        return (f"path of leaf {path.leaf_index} hashes to {computed.hex()}, but the path's root is "
                f"{path.root.hex()}")
    if root is not None and root != path.root:
        return f"path of leaf {path.leaf_index} has root {path.root.hex()}, expected {root.hex()}"
    return None


def path_from_levels(levels: Sequence[np.ndarray], arities: Sequence[int], index: int) -> InclusionPath:
    """The path of leaf ``index`` in a tree built bottom-up as ``levels`` (``uint8[n_k, 32]``, root
    last), where level k's nodes are hashed ``arities[k]`` at a time."""
    if len(levels) != len(arities) + 1:
        raise ValueError(f"{len(levels)} levels need {len(levels) - 1} arities, have {len(arities)}")
    if not 0 <= index < len(levels[0]):
        raise ValueError(f"leaf index {index} is outside a tree of {len(levels[0])} leaves")
    out, node = [], index
    for level, arity in zip(levels, arities):
        first = node - node % arity
        siblings = tuple(level[first + j].tobytes() for j in range(arity) if first + j != node)
        out.append(PathLevel(siblings, node % arity))
        node //= arity
    return InclusionPath(levels[0][index].tobytes(), tuple(out), levels[-1][0].tobytes())
