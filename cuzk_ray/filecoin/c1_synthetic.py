"""A consistent C1 of any sector size (32 GiB above all) without sealing the sector.

A C1 opens a few hundred nodes of a sector; only they, their parents and the Merkle paths above
them are ever looked at. So (for interactive PoRep):

- the sector is committed capacity: its data is all zeros, so tree D is known without building it
  (level k's nodes are all z_k = SHA-254(z_{k-1} || z_{k-1})) and comm_d is the empty sector's.
  comm_d has to be fixed first: it goes into replica_id, which picks the challenges; a tree D made
  of random siblings could not be committed to before the challenges are known;
- replica_id and the challenges are derived as the real ones are, then the graph's parents;
- every parent's column (its label in each layer) is random; each challenged node's labels are
  computed from its parents' labels, layer by layer (a challenged node may be another's parent);
- trees C and R_last are sparse: the leaves known (column hashes; replica = last label + 0), every
  other sibling on their paths random, every node above computed. All challenges share the roots,
  so comm_c, comm_r_last and comm_r = Poseidon2(comm_c, comm_r_last) hold for the whole file.

The vanilla verifier (``vanilla.c1_error``) accepts the result: the hashes are all real, only the
labels of nodes nobody opens were never computed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .c1 import C1Output, ColumnProof, VanillaProof
from .challenges import interactive_challenges
from .fr32 import NODE_BYTES, SAFE_TOP_MASK
from .graph import StackedGraph
from .labels import label_from_parents, layer_parent_labels
from .merkle import InclusionPath, PathLevel
from .poseidon_batch import hash_node_groups
from .public_inputs import replica_id as make_replica_id
from .public_inputs import tree_levels
from .registry import DRG_DEGREE, RegisteredSealProof
from .sha254 import sha254
from .trees import comm_r as make_comm_r


def zero_tree_d_nodes(nodes: int) -> list[bytes]:
    """z_0 .. z_depth: the node of each level of tree D over ``nodes`` zero nodes (the last: comm_d)."""
    out = [bytes(NODE_BYTES)]
    while 1 << (len(out) - 1) < nodes:
        out.append(sha254(out[-1] + out[-1]))
    return out


def zero_tree_d_path(index: int, levels: list[bytes]) -> InclusionPath:
    """The tree-D path of leaf ``index`` in an all-zero sector."""
    path = tuple(PathLevel((levels[k],), (index >> k) & 1) for k in range(len(levels) - 1))
    return InclusionPath(levels[0], path, levels[-1])


def random_nodes(rng: np.random.Generator, count: int) -> np.ndarray:
    """``uint8[count, 32]`` random Fr nodes (top two bits clear, as labels and hashes are)."""
    out = rng.integers(0, 256, size=(count, NODE_BYTES), dtype=np.uint8)
    out[:, -1] &= SAFE_TOP_MASK
    return out


class SparseTree:
    """A Poseidon tree of which only the paths of some leaves exist: their siblings are random,
    their ancestors computed. ``arities``: per level, bottom up (base, then sub, then top)."""

    def __init__(self, leaves: dict[int, bytes], arities: tuple[int, ...], rng: np.random.Generator):
        self.arities = arities
        self.levels: list[dict[int, bytes]] = [dict(leaves)]
        for arity in arities:
            self.levels.append(self._level_up(self.levels[-1], arity, rng))

    @staticmethod
    def _level_up(level: dict[int, bytes], arity: int, rng: np.random.Generator) -> dict[int, bytes]:
        """Fill each touched group's missing children with random nodes, then hash the groups in one batch."""
        groups = sorted({i // arity for i in level})
        missing = [g * arity + j for g in groups for j in range(arity) if g * arity + j not in level]
        level.update(zip(missing, (n.tobytes() for n in random_nodes(rng, len(missing)))))
        children = b"".join(level[g * arity + j] for g in groups for j in range(arity))
        digests = hash_node_groups(np.frombuffer(children, dtype=np.uint8).reshape(-1, NODE_BYTES), arity)
        return {g: d.tobytes() for g, d in zip(groups, digests)}

    @property
    def root(self) -> bytes:
        (root,) = self.levels[-1].values()
        return root

    def path(self, index: int) -> InclusionPath:
        """The inclusion path of a known leaf."""
        leaf, levels = self.levels[0][index], []
        for k, arity in enumerate(self.arities):
            first = index - index % arity
            levels.append(PathLevel(tuple(self.levels[k][first + j] for j in range(arity) if first + j != index),
                                    index % arity))
            index //= arity
        return InclusionPath(leaf, tuple(levels), self.root)


@dataclass(frozen=True)
class SyntheticSector:
    """What the C1 is made from: the sector's identity, the challenges and the opened columns."""

    proof: RegisteredSealProof
    replica_id: bytes
    challenges: tuple[tuple[int, ...], ...]  # per partition
    parents: dict[int, tuple[int, ...]]  # challenged node -> its 14 parents
    columns: dict[int, tuple[bytes, ...]]  # opened node -> its labels, layer 1 first


def open_columns(proof: RegisteredSealProof, replica_id: bytes, challenges: tuple[tuple[int, ...], ...],
                 rng: np.random.Generator) -> SyntheticSector:
    """Random columns for the parents; the challenged nodes' labels computed from them, layer by layer."""
    config = proof.config
    layers = config.shape.layers
    graph = StackedGraph(config.nodes, proof.porep_id, proof.api_version)
    challenged = sorted({c for cs in challenges for c in cs})
    parents = {c: tuple(int(p) for p in row) for c, row in zip(challenged, graph.parents_of(challenged).tolist())}
    others = sorted({p for ps in parents.values() for p in ps} - set(challenged))
    randoms = random_nodes(rng, len(others) * layers).reshape(len(others), layers, NODE_BYTES)
    rows = {node: [r.tobytes() for r in column] for node, column in zip(others, randoms)}
    rows.update({c: [] for c in challenged})
    for layer in range(1, layers + 1):
        for c in challenged:  # ascending: a DRG parent (always smaller) that is challenged is done first
            drg = [rows[p][layer - 1] for p in parents[c][:DRG_DEGREE]]
            exp = [rows[p][layer - 2] for p in parents[c][DRG_DEGREE:]] if layer > 1 else []
            rows[c].append(label_from_parents(replica_id, layer, c, layer_parent_labels(layer, drg, exp)))
    return SyntheticSector(proof, replica_id, challenges, parents, {n: tuple(r) for n, r in rows.items()})


def synthetic_c1(proof: RegisteredSealProof, prover_id: bytes, sector_id: int, ticket: bytes, seed: bytes,
                 rng: np.random.Generator, partitions: int | None = None,
                 challenges: int | None = None) -> C1Output:
    """A consistent C1 of an empty (committed-capacity) sector of any size. ``partitions`` and
    ``challenges`` (per partition) below the proof's give a smaller file: the first ones of each."""
    config = proof.config
    if config.synthetic or config.non_interactive:
        raise ValueError(f"registered proof: {proof.name} draws its challenges from comm_r; only interactive "
                         "PoRep can be generated without sealing")
    zeros = zero_tree_d_nodes(config.nodes)
    rid = make_replica_id(prover_id, sector_id, ticket, zeros[-1], proof.porep_id)
    per = min(challenges or config.challenges_per_partition, config.challenges_per_partition)
    chosen = tuple(tuple(interactive_challenges(rid, seed, config.nodes, config.challenges_per_partition, k)[:per])
                   for k in range(min(partitions or config.partitions, config.partitions)))
    sector = open_columns(proof, rid, chosen, rng)
    return assemble_c1(sector, zeros, ticket, seed, rng)


def assemble_c1(sector: SyntheticSector, zeros: list[bytes], ticket: bytes, seed: bytes,
                rng: np.random.Generator) -> C1Output:
    """Build the sparse trees C and R_last over the opened nodes, then every vanilla proof."""
    config = sector.proof.config
    shape = config.shape
    arities = tree_levels(config.nodes, shape.base_arity, shape.sub_arity, shape.top_arity)
    nodes = sorted(sector.columns)
    flat = np.frombuffer(b"".join(b"".join(sector.columns[n]) for n in nodes), dtype=np.uint8)
    hashes = hash_node_groups(flat.reshape(-1, NODE_BYTES), shape.layers)
    tree_c = SparseTree({n: h.tobytes() for n, h in zip(nodes, hashes)}, arities, rng)
    tree_r = SparseTree({c: sector.columns[c][-1] for c in sector.parents}, arities, rng)  # data 0: replica = key

    def column(node: int) -> ColumnProof:
        return ColumnProof(node, sector.columns[node], tree_c.path(node))

    def proof_of(c: int) -> VanillaProof:
        ps = sector.parents[c]
        return VanillaProof.from_parts(zero_tree_d_path(c, zeros), tree_r.path(c), column(c),
                                       [column(p) for p in ps[:DRG_DEGREE]], [column(p) for p in ps[DRG_DEGREE:]])

    proofs = tuple(tuple(proof_of(c) for c in cs) for cs in sector.challenges)
    return C1Output(sector.proof, proofs, make_comm_r(tree_c.root, tree_r.root), zeros[-1], sector.replica_id,
                    seed, ticket)
