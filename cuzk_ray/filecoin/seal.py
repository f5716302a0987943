"""Sealing a small sector for test data: PC1 (labels), PC2 (trees C and R_last, comm_r) and C1
(the challenged nodes' vanilla proofs), as rust-fil-proofs' StackedDrg does it.

Sources (read, not copied): rust-fil-proofs storage-proofs-porep/src/stacked/vanilla/proof.rs
(``transform_and_replicate_layers``, ``prove_layers_generate``), encode.rs (replica = data +
key in Fr), filecoin-proofs/src/api/seal.rs (the piece's fr32 padding, comm_d over tree D).

The sector's data is the piece, zero-filled to the sector's capacity (what filling the rest of the
sector with zero pieces gives), fr32-padded. Everything is held in memory: 2 KiB and 8 MiB take
seconds; 512 MiB is allowed but slow (minutes, a few GiB); larger sectors are refused.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..field import FR_LIMBS, R_MOD, ints_to_limbs, limbs_to_ints
from .c1 import C1Output, ColumnProof, VanillaProof
from .challenges import porep_challenges
from .fr32 import NODE_BYTES, limbs_as_nodes, nodes_as_limbs, pad, unpadded_size
from .graph import StackedGraph
from .labels import sdr_labels
from .public_inputs import replica_id as make_replica_id
from .registry import DRG_DEGREE, RegisteredSealProof
from .sha254 import TreeD, build_tree_d
from .trees import PoseidonTree, build_tree, column_hashes, comm_r, shape_for_sector_size

MAX_SEAL_BYTES = 512 << 20  # larger sectors are sealed by Filecoin's own tools, never here


def sector_data(piece: bytes, sector_size: int) -> np.ndarray:
    """The sector's fr32-padded nodes ``uint8[n, 32]`` for a piece placed at offset 0, the rest zeros."""
    capacity = unpadded_size(sector_size)
    if len(piece) > capacity:
        raise ValueError(f"piece: a {sector_size}-byte sector holds {capacity} bytes of data, "
                         f"the piece has {len(piece)}")
    raw = np.zeros(capacity, dtype=np.uint8)
    raw[: len(piece)] = np.frombuffer(piece, dtype=np.uint8)
    return pad(raw).reshape(-1, NODE_BYTES)


def encode_replica(data: np.ndarray, key: np.ndarray) -> np.ndarray:
    """The replica's nodes: data + key in Fr, node by node (encode.rs ``encode``)."""
    total = (limbs_to_ints(nodes_as_limbs(data)) + limbs_to_ints(nodes_as_limbs(key))) % R_MOD
    return limbs_as_nodes(ints_to_limbs(total, FR_LIMBS))


def replica_trees(data: np.ndarray, labels: np.ndarray, sector_size: int) -> tuple[PoseidonTree, PoseidonTree]:
    """PC2: tree C over the column hashes of ``labels`` and tree R_last over the replica."""
    shape = shape_for_sector_size(sector_size)
    return build_tree(column_hashes(labels), shape), build_tree(encode_replica(data, labels[-1]), shape)


@dataclass(frozen=True)
class SealedSector:
    """A sealed sector with everything C1 reads: its identity, labels and trees D, C and R_last."""

    proof: RegisteredSealProof
    prover_id: bytes
    sector_id: int
    ticket: bytes
    replica_id: bytes
    parents: np.ndarray  # uint32[nodes, 14]: DRG then expander parents
    labels: np.ndarray  # uint8[layers, nodes, 32]
    tree_d: TreeD
    tree_c: PoseidonTree
    tree_r: PoseidonTree

    @property
    def comm_d(self) -> bytes:
        return self.tree_d.root

    @property
    def comm_c(self) -> bytes:
        return self.tree_c.root

    @property
    def comm_r_last(self) -> bytes:
        return self.tree_r.root

    @property
    def comm_r(self) -> bytes:
        return comm_r(self.comm_c, self.comm_r_last)

    def with_labels(self, labels: np.ndarray) -> SealedSector:
        """The same sector with other labels and the trees PC2 builds from them (a faulty sealer, for tests)."""
        tree_c, tree_r = replica_trees(self.tree_d.levels[0], labels, self.proof.sector_size)
        return SealedSector(self.proof, self.prover_id, self.sector_id, self.ticket, self.replica_id, self.parents,
                            labels, self.tree_d, tree_c, tree_r)

    def column(self, node: int) -> ColumnProof:
        """Node's labels over the layers and its tree-C path."""
        return ColumnProof(node, tuple(row.tobytes() for row in self.labels[:, node]), self.tree_c.path(node))

    def vanilla_proof(self, challenge: int) -> VanillaProof:
        """The vanilla proof of one challenged node (proof.rs ``prove_layers_generate``)."""
        parents = [int(p) for p in self.parents[challenge]]
        return VanillaProof.from_parts(
            self.tree_d.path(challenge), self.tree_r.path(challenge), self.column(challenge),
            [self.column(p) for p in parents[:DRG_DEGREE]], [self.column(p) for p in parents[DRG_DEGREE:]])


def seal_sector(piece: bytes, proof: RegisteredSealProof, prover_id: bytes, sector_id: int,
                ticket: bytes) -> SealedSector:
    """PC1 and PC2 of a small sector holding ``piece`` (at most 512 MiB)."""
    if proof.sector_size > MAX_SEAL_BYTES:
        raise ValueError(f"sector size: {proof.sector_size} bytes is over the {MAX_SEAL_BYTES >> 20} MiB this "
                         "test sealer handles; a 32 GiB C1 comes from c1_synthetic")
    data = sector_data(piece, proof.sector_size)
    tree_d = build_tree_d(data)
    rid = make_replica_id(prover_id, sector_id, ticket, tree_d.root, proof.porep_id)
    config = proof.config
    graph = StackedGraph(config.nodes, proof.porep_id, proof.api_version)
    parents = graph.all_parents()
    labels = sdr_labels(graph, rid, config.shape.layers, parents)
    tree_c, tree_r = replica_trees(data, labels, proof.sector_size)
    return SealedSector(proof, prover_id, sector_id, ticket, rid, parents, labels, tree_d, tree_c, tree_r)


def commit_phase1(sector: SealedSector, seed: bytes) -> C1Output:
    """C1: every partition's challenges (from the seed, or per the proof's features) and their proofs."""
    config = sector.proof.config
    partitions = tuple(
        tuple(sector.vanilla_proof(c) for c in porep_challenges(config, sector.replica_id, sector.comm_r, seed, k))
        for k in range(config.partitions))
    return C1Output(sector.proof, partitions, sector.comm_r, sector.comm_d, sector.replica_id, seed, sector.ticket)
