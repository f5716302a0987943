"""SDR's stacked graph: 6 DRG parents (bucket sampling, ChaCha8) and 8 expander parents (Feistel).

Sources (read, not copied): rust-fil-proofs storage-proofs-core/src/drgraph.rs (``BucketGraph::
parents``), storage-proofs-porep/src/stacked/vanilla/graph.rs (``correspondent``,
``derive_feistel_keys``), storage-proofs-core/src/crypto/mod.rs (domain separation tags); the
independent port in eigerco/polka-storage pallets/proofs/src/graphs/{bucket,stacked}.rs.

DRG parents of node v >= 2: seed a ChaCha8 generator with ``seed28 || u32_le(v)``; in the
metagraph of ``m' = 5`` copies per node, draw 5 parents by picking a bucket
``b = u64 % ceil(log2(v m')) + 1`` and a distance in ``[max(2, min(v m', 2^b) / 2), min(v m', 2^b)]``;
map back by ``// m'`` (a parent that maps onto v itself becomes v - 1). The predecessor v - 1 is
added last (ApiVersion 1.0.0) or first (1.1.0 and 1.2.0). Nodes 0 and 1 have six parents 0.

Expander parent i of node v: ``permute(8 v + i) // 8`` over 8 * nodes elements; ApiVersion 1.0.0
truncates the permuted value to u32 before dividing (it matters only past 2^32 / 8 nodes).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from .chacha import rng_u64
from .feistel import FeistelShape, permute
from .registry import DRG_DEGREE, EXP_DEGREE, ApiVersion

DRSAMPLE_TAG = b"Filecoin_DRSample"
FEISTEL_TAG = b"Filecoin_Feistel"
PARENTS = DRG_DEGREE + EXP_DEGREE
_CHUNK = 1 << 16  # nodes per vectorized step: bounds the ChaCha state arrays to a few MiB


def domain_seed(tag: bytes, porep_id: bytes) -> bytes:
    """crypto/mod.rs ``derive_porep_domain_seed``: SHA-256(tag || porep_id)."""
    if len(porep_id) != 32:
        raise ValueError(f"porep_id: need 32 bytes, have {len(porep_id)}")
    return hashlib.sha256(tag + porep_id).digest()


def drg_seed(porep_id: bytes) -> bytes:
    """The 28-byte DRG seed: the first 28 bytes of SHA-256("Filecoin_DRSample" || porep_id)."""
    return domain_seed(DRSAMPLE_TAG, porep_id)[:28]


def feistel_keys(porep_id: bytes) -> tuple[int, int, int, int]:
    """SHA-256("Filecoin_Feistel" || porep_id) read as four little-endian u64 keys."""
    raw = domain_seed(FEISTEL_TAG, porep_id)
    return tuple(int.from_bytes(raw[8 * i:8 * i + 8], "little") for i in range(4))


def _ceil_log2(x: np.ndarray) -> np.ndarray:
    """ceil(log2(x)) for 2 <= x < 2^54, as rust's ``(x as f64).log2().ceil()`` gives there: exact,
    since log2 of a non-power of two stays a whole ulp away from the integer below 2^46."""
    bits = np.zeros_like(x)
    y = x - np.uint64(1)
    while (y > 0).any():
        bits += (y > 0).astype(np.uint64)
        y >>= np.uint64(1)
    return bits


@dataclass(frozen=True)
class StackedGraph:
    """The parent graph of one sector: ``nodes``, the porep_id that seeds it and the ApiVersion
    that orders it. ``parents(v)`` for one node; ``parents_of(vs)`` / ``all_parents()`` vectorized."""

    nodes: int
    porep_id: bytes
    api_version: ApiVersion
    _seed: bytes = field(init=False, repr=False)
    _keys: tuple[int, ...] = field(init=False, repr=False)

    def __post_init__(self):
        if not 2 <= self.nodes <= 1 << 32 or self.nodes * (DRG_DEGREE - 1) > 1 << 54:
            raise ValueError(f"graph: {self.nodes} nodes is outside what SDR supports (2 .. 2^32)")
        object.__setattr__(self, "_seed", drg_seed(self.porep_id))
        object.__setattr__(self, "_keys", feistel_keys(self.porep_id))

    def _nodes_array(self, nodes) -> np.ndarray:
        v = np.atleast_1d(np.asarray(nodes, dtype=np.int64))
        if v.size and (v.min() < 0 or v.max() >= self.nodes):
            bad = int(v[(v < 0) | (v >= self.nodes)][0])
            raise ValueError(f"graph: node {bad} is outside 0..{self.nodes - 1}")
        return v.astype(np.uint64)

    def drg_parents_of(self, nodes) -> np.ndarray:
        """(len, 6) uint32: the DRG parents of each node, in the order the circuit takes them."""
        v = self._nodes_array(nodes)
        out = np.zeros((v.size, DRG_DEGREE), dtype=np.uint32)
        for start in range(0, v.size, _CHUNK):
            out[start:start + _CHUNK] = self._drg_chunk(v[start:start + _CHUNK])
        return out

    def _drg_chunk(self, v: np.ndarray) -> np.ndarray:
        m_prime = np.uint64(DRG_DEGREE - 1)
        out = np.zeros((v.size, DRG_DEGREE), dtype=np.uint32)
        live = v >= 2  # nodes 0 and 1: all parents 0
        if not live.any():
            return out
        node = v[live]
        seeds = np.empty((node.size, 32), dtype=np.uint8)
        seeds[:, :28] = np.frombuffer(self._seed, np.uint8)
        seeds[:, 28:] = node.astype("<u4").view(np.uint8).reshape(-1, 4)
        draws = rng_u64(seeds, 2 * (DRG_DEGREE - 1))
        meta = node * m_prime
        n_buckets = _ceil_log2(meta)
        random_parents = np.empty((node.size, DRG_DEGREE - 1), dtype=np.uint64)
        for j in range(DRG_DEGREE - 1):
            bucket = draws[:, 2 * j] % n_buckets + np.uint64(1)
            largest = np.minimum(meta, np.uint64(1) << bucket)
            smallest = np.maximum(np.uint64(2), largest >> np.uint64(1))
            distance = smallest + draws[:, 2 * j + 1] % (largest - smallest + np.uint64(1))
            mapped = (meta - distance) // m_prime
            random_parents[:, j] = np.where(mapped == node, node - np.uint64(1), mapped)
        if self.api_version is ApiVersion.V1_0:
            ordered = np.concatenate([random_parents, (node - np.uint64(1))[:, None]], axis=1)
        else:
            ordered = np.concatenate([(node - np.uint64(1))[:, None], random_parents], axis=1)
        out[live] = ordered.astype(np.uint32)
        return out

    def exp_parents_of(self, nodes) -> np.ndarray:
        """(len, 8) uint32: the expander parents of each node, in order i = 0..7."""
        v = self._nodes_array(nodes)
        degree = np.uint64(EXP_DEGREE)
        shape = FeistelShape.for_elements(self.nodes * EXP_DEGREE)
        a = (v[:, None] * degree + np.arange(EXP_DEGREE, dtype=np.uint64)[None, :]).ravel()
        transformed = permute(a, self._keys, shape)
        if self.api_version is ApiVersion.V1_0:
            transformed = transformed & np.uint64(0xFFFFFFFF)  # rust: `transformed as u32 / 8`
        return (transformed // degree).astype(np.uint32).reshape(v.size, EXP_DEGREE)

    def parents_of(self, nodes) -> np.ndarray:
        """(len, 14) uint32: DRG parents then expander parents, as the C1 columns list them."""
        return np.concatenate([self.drg_parents_of(nodes), self.exp_parents_of(nodes)], axis=1)

    def parents(self, node: int) -> list[int]:
        """The 14 parents of one node."""
        return [int(p) for p in self.parents_of([node])[0]]

    def all_parents(self) -> np.ndarray:
        """(nodes, 14) uint32 for every node: for small sectors (8 MiB is 2^18 nodes, ~15 MiB)."""
        if self.nodes > 1 << 24:
            raise ValueError(f"graph: all_parents of {self.nodes} nodes would take "
                             f"{self.nodes * PARENTS * 4 >> 20} MiB; ask for the nodes needed instead")
        return self.parents_of(np.arange(self.nodes))
