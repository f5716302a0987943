"""The vanilla verifier of a C1 file: is every vanilla proof consistent with the sector's commitments?

What rust-fil-proofs' ``stacked::Proof::verify`` checks (storage-proofs-porep/src/stacked/vanilla/
params.rs), and what C2's circuit will rely on, made one check at a time with the field named:

- the challenges are the ones the seed (or the proof's features) and replica_id give, partition by
  partition; replica_id is SHA-254 of prover_id, sector_id, ticket, comm_d and porep_id (when the
  caller knows prover_id and sector_id: a C1 file does not hold them);
- comm_r = Poseidon2(comm_c, comm_r_last), the roots of partition 0's first proof (proof.rs takes
  them there), and every proof's paths reach those roots;
- the comm_d path (SHA-254, binary) proves the challenged node; the comm_r_last path proves it;
- each column (the challenge's, 6 DRG parents', 8 expander parents') hashes (Poseidon of arity
  layers) to its tree-C leaf, at the parent the graph gives, and its path reaches comm_c;
- each labeling proof's 37 parents are the parents' columns' labels (DRG at the layer, expander at
  the layer before) and hash to the challenge's label in its own column (stricter than rust, which
  takes the parents from the labeling proof as given: the circuit takes them from the columns);
- the encoding: the replica node (comm_r_last leaf) = the last label + the data node (comm_d leaf) in Fr.

``c1_error`` returns the first fault as one line, e.g.
``vanilla_proofs[1][3].labeling_proofs[1]: label does not match its parents (...)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..field import R_MOD
from .c1 import C1Output, ColumnProof, LabelingProof, VanillaProof, column_parent_labels
from .challenges import porep_challenges
from .fr32 import NODE_BYTES, fr_to_bytes
from .graph import StackedGraph
from .labels import label_from_parents
from .merkle import InclusionPath
from .poseidon_batch import hash_node_groups
from .public_inputs import replica_id as make_replica_id
from .public_inputs import tree_levels
from .registry import DRG_DEGREE, EXP_DEGREE, RegisteredSealProof
from .sha254 import tree_d_path_error
from .trees import comm_r as make_comm_r
from .trees import path_roots


@dataclass(frozen=True)
class SectorView:
    """What every proof of one C1 is checked against."""

    proof: RegisteredSealProof
    replica_id: bytes
    comm_d: bytes
    comm_c: bytes
    comm_r_last: bytes
    tree_d_arities: tuple[int, ...]
    tree_c_arities: tuple[int, ...]

    @property
    def layers(self) -> int:
        return self.proof.config.shape.layers

    @classmethod
    def of(cls, c1: C1Output) -> SectorView:
        config, first = c1.registered_proof.config, c1.vanilla_proofs[0][0]
        shape = config.shape
        return cls(c1.registered_proof, c1.replica_id, c1.comm_d, first.c_x.inclusion_proof.root,
                   first.comm_r_last_proof.root, tree_levels(config.nodes, 2),
                   tree_levels(config.nodes, shape.base_arity, shape.sub_arity, shape.top_arity))


def c1_error(c1: C1Output, prover_id: bytes | None = None, sector_id: int | None = None,
             complete: bool = True) -> str | None:
    """None if the C1 is consistent, else its first fault as one line naming the field.
    ``complete``: the C1 must hold every partition and challenge its proof type has; False accepts
    a prefix (fewer partitions, fewer challenges each), every challenge still derived from the seed."""
    fault = _top_error(c1, prover_id, sector_id, complete)
    if fault:
        return fault
    sector = SectorView.of(c1)
    if make_comm_r(sector.comm_c, sector.comm_r_last) != c1.comm_r:
        return (f"comm_r: {c1.comm_r.hex()} is not Poseidon2(comm_c, comm_r_last) of the vanilla proofs' roots "
                f"({sector.comm_c.hex()}, {sector.comm_r_last.hex()})")
    config = c1.registered_proof.config
    challenges = [porep_challenges(config, c1.replica_id, c1.comm_r, c1.seed, k)[: len(part)]
                  for k, part in enumerate(c1.vanilla_proofs)]
    graph = StackedGraph(config.nodes, config.porep_id, config.api_version)
    parents = iter(graph.parents_of([c for cs in challenges for c in cs]).tolist())
    for k, (part, cs) in enumerate(zip(c1.vanilla_proofs, challenges)):
        for i, (proof, challenge) in enumerate(zip(part, cs)):
            fault = proof_error(sector, proof, challenge, next(parents))
            if fault:
                return f"vanilla_proofs[{k}][{i}].{fault}"
    return None


def _top_error(c1: C1Output, prover_id: bytes | None, sector_id: int | None, complete: bool) -> str | None:
    """The sector-wide checks: partition and challenge counts, replica_id."""
    config = c1.registered_proof.config
    if not c1.vanilla_proofs or not c1.vanilla_proofs[0]:
        return "vanilla_proofs: no proofs"
    counts = [len(part) for part in c1.vanilla_proofs]
    want = config.challenges_per_partition
    if len(counts) > config.partitions or (complete and len(counts) != config.partitions):
        return (f"vanilla_proofs: {c1.registered_proof.name} has {config.partitions} partitions, "
                f"the C1 has {len(counts)}")
    bad = next((k for k, n in enumerate(counts) if n > want or (complete and n != want)), None)
    if bad is not None:
        return f"vanilla_proofs[{bad}]: a partition has {want} challenges, this one has {counts[bad]}"
    if prover_id is not None and sector_id is not None:
        expected = make_replica_id(prover_id, sector_id, c1.ticket, c1.comm_d, config.porep_id)
        if expected != c1.replica_id:
            return (f"replica_id: {c1.replica_id.hex()} is not the one prover_id, sector_id {sector_id}, ticket, "
                    f"comm_d and porep_id give ({expected.hex()})")
    return None


def proof_error(sector: SectorView, proof: VanillaProof, challenge: int, parents: Sequence[int]) -> str | None:
    """The first fault of one challenge's vanilla proof (field names relative to the proof), or None."""
    fault = tree_d_error(proof.comm_d_proof, challenge, sector)
    if fault:
        return f"comm_d_proofs: {fault}"
    return (_columns_error(sector, proof, challenge, parents) or _labels_error(sector, proof, challenge)
            or _encoding_error(sector, proof, challenge))


def tree_d_error(path: InclusionPath, challenge: int, sector: SectorView) -> str | None:
    """None if a comm_d path proves the challenged node up to comm_d."""
    return (_shape_error(path, sector.tree_d_arities, challenge)
            or tree_d_path_error(path, sector.comm_d))


def _shape_error(path: InclusionPath, arities: tuple[int, ...], node: int) -> str | None:
    """The path's levels have the tree's arities and positions that spell ``node``."""
    have = tuple(level.arity for level in path.levels)
    if have != arities:
        return f"path has {len(have)} levels of arities {list(have)}, this sector's tree has {list(arities)}"
    bad = next((k for k, level in enumerate(path.levels) if level.index >= level.arity), None)
    if bad is not None:
        return f"path level {bad}: index {path.levels[bad].index} is not below its arity {path.levels[bad].arity}"
    if path.leaf_index != node:
        return f"path proves leaf {path.leaf_index}, the challenged node is {node}"
    return None


def _columns_error(sector: SectorView, proof: VanillaProof, challenge: int, parents: Sequence[int]) -> str | None:
    """The comm_r_last path and the 15 column proofs (shapes first, then every hash in one batch)."""
    named = _named_columns(proof)
    if len(proof.drg_parents) != DRG_DEGREE or len(proof.exp_parents) != EXP_DEGREE:
        return (f"replica_column_proofs: need {DRG_DEGREE} drg_parents and {EXP_DEGREE} exp_parents, have "
                f"{len(proof.drg_parents)} and {len(proof.exp_parents)}")
    for (field, column), node in zip(named, [challenge, *parents]):
        fault = _column_shape_error(sector, column, node)
        if fault:
            return f"{field}: {fault}"
    fault = _shape_error(proof.comm_r_last_proof, sector.tree_c_arities, challenge)
    if fault:
        return f"comm_r_last_proof: {fault}"
    hashes = _column_hashes([c for _, c in named], sector.layers)
    roots = path_roots([proof.comm_r_last_proof] + [c.inclusion_proof for _, c in named])
    fault = _root_error(proof.comm_r_last_proof, roots[0], sector.comm_r_last, "comm_r_last")
    if fault:
        return f"comm_r_last_proof: {fault}"
    for (field, column), digest, root in zip(named, hashes, roots[1:]):
        if digest != column.inclusion_proof.leaf:
            return (f"{field}: the column hashes to {digest.hex()}, its inclusion_proof leaf is "
                    f"{column.inclusion_proof.leaf.hex()}")
        fault = _root_error(column.inclusion_proof, root, sector.comm_c, "comm_c")
        if fault:
            return f"{field}.inclusion_proof: {fault}"
    return None


def _named_columns(proof: VanillaProof) -> list[tuple[str, ColumnProof]]:
    at = "replica_column_proofs"
    return ([(f"{at}.c_x", proof.c_x)] + [(f"{at}.drg_parents[{j}]", c) for j, c in enumerate(proof.drg_parents)]
            + [(f"{at}.exp_parents[{j}]", c) for j, c in enumerate(proof.exp_parents)])


def _column_shape_error(sector: SectorView, column: ColumnProof, node: int) -> str | None:
    if column.index != node:
        return f"column.index is {column.index}, the graph gives node {node}"
    if len(column.rows) != sector.layers:
        return f"column.rows: need {sector.layers} labels (one per layer), have {len(column.rows)}"
    fault = _shape_error(column.inclusion_proof, sector.tree_c_arities, node)
    return f"inclusion_proof: {fault}" if fault else None


def _column_hashes(columns: Sequence[ColumnProof], layers: int) -> list[bytes]:
    """Poseidon (arity = layers) of each column's rows, in one batch."""
    rows = np.frombuffer(b"".join(b"".join(c.rows) for c in columns), dtype=np.uint8).reshape(-1, NODE_BYTES)
    return [digest.tobytes() for digest in hash_node_groups(rows, layers)]


def _root_error(path: InclusionPath, computed: bytes, expected: bytes, name: str) -> str | None:
    if computed != path.root:
        return f"path hashes to {computed.hex()}, but its root is {path.root.hex()}"
    if path.root != expected:
        return f"root {path.root.hex()} is not the sector's {name} {expected.hex()}"
    return None


def _labels_error(sector: SectorView, proof: VanillaProof, challenge: int) -> str | None:
    """Every layer's labeling proof: its parents are the columns' labels and hash to the label."""
    if len(proof.labeling_proofs) != sector.layers:
        return f"labeling_proofs: need {sector.layers} (one per layer), have {len(proof.labeling_proofs)}"
    for layer, lp in enumerate(proof.labeling_proofs, start=1):
        where = f"labeling_proofs[{layer - 1}]"
        fault = (_layer_proof_error(lp, layer, challenge)
                 or _parents_error(lp, column_parent_labels(layer, proof.drg_parents, proof.exp_parents), layer))
        if fault:
            return f"{where}{fault}"
        label = label_from_parents(sector.replica_id, layer, challenge, lp.parents)
        if label != proof.c_x.rows[layer - 1]:
            return (f"{where}: label does not match its parents (replica_column_proofs.c_x.column.rows[{layer - 1}] "
                    f"is {proof.c_x.rows[layer - 1].hex()}, the parents hash to {label.hex()})")
    return None


def _layer_proof_error(lp: LabelingProof, layer: int, challenge: int) -> str | None:
    if lp.layer_index != layer:
        return f".layer_index: is {lp.layer_index}, expected {layer}"
    if lp.node != challenge:
        return f".node: is {lp.node}, the challenged node is {challenge}"
    return None


def _parents_error(lp: LabelingProof, expected: list[bytes], layer: int) -> str | None:
    if len(lp.parents) != len(expected):
        return f".parents: need {len(expected)}, have {len(lp.parents)}"
    bad = next((j for j, (a, b) in enumerate(zip(lp.parents, expected)) if a != b), None)
    if bad is None:
        return None
    k = bad % (DRG_DEGREE if layer == 1 else DRG_DEGREE + EXP_DEGREE)
    source = (f"drg_parents[{k}] at layer {layer}" if k < DRG_DEGREE
              else f"exp_parents[{k - DRG_DEGREE}] at layer {layer - 1}")
    return f".parents[{bad}]: is not the label in the parent's column (replica_column_proofs.{source})"


def _encoding_error(sector: SectorView, proof: VanillaProof, challenge: int) -> str | None:
    """replica node = key + data node in Fr, the key being the last layer's label from its parents."""
    ep, last = proof.encoding_proof, proof.labeling_proofs[-1]
    fault = _layer_proof_error(ep, sector.layers, challenge)
    if fault:
        return f"encoding_proof{fault}"
    if ep.parents != last.parents:
        return f"encoding_proof.parents: differ from labeling_proofs[{sector.layers - 1}].parents"
    data = int.from_bytes(proof.comm_d_proof.leaf, "little")
    if data >= R_MOD:
        return "comm_d_proofs: the data node (leaf) is not an Fr element"
    key = int.from_bytes(label_from_parents(sector.replica_id, sector.layers, challenge, ep.parents), "little")
    encoded = fr_to_bytes((key + data) % R_MOD)
    if encoded != proof.comm_r_last_proof.leaf:
        return (f"encoding_proof: the replica node (comm_r_last_proof leaf) {proof.comm_r_last_proof.leaf.hex()} is "
                f"not key + data = {encoded.hex()}")
    return None
