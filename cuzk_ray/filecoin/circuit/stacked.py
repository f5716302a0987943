"""The StackedDRG PoRep circuit of one partition, as rust-fil-proofs' ``storage-proofs-porep/src/
stacked/circuit/``: ``proof.rs`` (``StackedCircuit::synthesize``, ``StackedCompound::circuit`` and
``blank_circuit``), ``params.rs`` (the per-challenge ``Proof``: its ``synthesize``, ``empty`` and
the conversion from a vanilla proof), ``column.rs`` and ``column_proof.rs``.

Top level: replica_id (made an input, then its 255 bits once, shared by every label), comm_d and
comm_r (inputs), comm_r_last and comm_c (private), ``comm_r == Poseidon2(comm_c, comm_r_last)``;
then each challenge in namespace ``challenge_i``:

1. the data leaf and its tree D (SHA-256, binary) inclusion;
2. the 6 DRG, then 8 expander parents' columns: rows allocated, column hash, tree C inclusion;
3. the challenge as a UInt64, packed into one input;
4. per layer its label: the parents' rows at that layer (expander parents: the layer before) as
   bits, repeated to 37 (layer 1: 6 x 6 + the first; layers > 1: 14 + 14 + the first 9), and
   ``create_label_circuit`` with the challenge's bits as the node;
5. encoding (last label + data leaf) and its tree R_last inclusion;
6. the hash of the challenge's own column (the labels just computed) and its tree C inclusion.

Every inclusion is a private-root ``por_circuit``: its path bits are the challenge's inputs, so the
inputs come out in ``public_inputs.porep_public_inputs``' order. Values are Fr ints, or None when
the circuit is synthesized for its shape only (``blank_stacked_circuit``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..c1 import C1Output, VanillaProof
from ..c1 import ColumnProof as VanillaColumnProof
from ..labels import TOTAL_PARENTS
from ..merkle import InclusionPath
from ..public_inputs import fr_from_le, tree_levels
from ..registry import DRG_DEGREE, EXP_DEGREE, PoRepConfig
from . import constraint, poseidon, sha256_hasher
from .bit_numbering import reverse_bit_numbering
from .boolean import Boolean
from .create_label import create_label_circuit
from .encode import encode
from .num import AllocatedNum
from .por import AuthPath, auth_path, blank_auth_path, por_circuit
from .uint32 import UInt32
from .uint64 import UInt64


@dataclass(frozen=True)
class TreeShape:
    """The arities of trees C and R_last (base / sub / top; 0 = no such level) over ``nodes`` leaves."""

    nodes: int
    base: int
    sub: int = 0
    top: int = 0

    @property
    def base_levels(self) -> int:
        """``base_path_length``: the levels of base arity."""
        return len(tree_levels(self.nodes, self.base, self.sub, self.top)) - bool(self.sub) - bool(self.top)


@dataclass(frozen=True)
class ColumnProof:
    """A parent's column (its label at every layer, layer 1 first) and its tree C path."""

    rows: tuple[int | None, ...]
    inclusion_path: AuthPath


@dataclass(frozen=True)
class ChallengeProof:
    """One challenge's private witness (params.rs ``Proof``)."""

    comm_d_path: AuthPath
    data_leaf: int | None
    challenge: int | None
    comm_r_last_path: AuthPath
    comm_c_path: AuthPath
    drg_parents_proofs: tuple[ColumnProof, ...]
    exp_parents_proofs: tuple[ColumnProof, ...]


@dataclass(frozen=True)
class StackedCircuit:
    """One partition's circuit: the sector's values and a proof per challenge."""

    replica_id: int | None
    comm_d: int | None
    comm_r: int | None
    comm_r_last: int | None
    comm_c: int | None
    proofs: tuple[ChallengeProof, ...]


# --- from vanilla proofs (params.rs ``From<VanillaProof>``, proof.rs ``StackedCompound::circuit``) --------


def _fr(value: bytes) -> int:
    return int.from_bytes(value, "little")


def path_from_inclusion(path: InclusionPath, shape: TreeShape) -> AuthPath:
    """A Merkle proof's levels as the circuit's ``AuthPath`` (``as_options().into()``)."""
    return auth_path([(tuple(_fr(s) for s in lvl.siblings), lvl.index) for lvl in path.levels],
                     shape.base, shape.sub, shape.top)


def column_proof_from_vanilla(proof: VanillaColumnProof, shape: TreeShape) -> ColumnProof:
    """A C1 column (rows as 32 LE bytes) as the circuit's witness (column_proof.rs ``From``)."""
    return ColumnProof(tuple(_fr(r) for r in proof.rows), path_from_inclusion(proof.inclusion_proof, shape))


def challenge_proof_from_vanilla(proof: VanillaProof, shape: TreeShape) -> ChallengeProof:
    """The circuit's witness of one vanilla proof: the challenge from the first labeling proof, the
    data leaf from the tree D proof, paths and columns as they are."""
    return ChallengeProof(
        comm_d_path=path_from_inclusion(proof.comm_d_proof, TreeShape(shape.nodes, 2)),
        data_leaf=_fr(proof.comm_d_proof.leaf),
        challenge=proof.labeling_proofs[0].node,
        comm_r_last_path=path_from_inclusion(proof.comm_r_last_proof, shape),
        comm_c_path=path_from_inclusion(proof.c_x.inclusion_proof, shape),
        drg_parents_proofs=tuple(column_proof_from_vanilla(c, shape) for c in proof.drg_parents),
        exp_parents_proofs=tuple(column_proof_from_vanilla(c, shape) for c in proof.exp_parents))


def tree_shape(config: PoRepConfig) -> TreeShape:
    """Trees C and R_last of a registered proof's sector."""
    s = config.shape
    return TreeShape(config.nodes, s.base_arity, s.sub_arity, s.top_arity)


def stacked_circuit_from_c1(c1: C1Output, k: int) -> StackedCircuit:
    """Partition ``k`` of a C1 output; comm_c and comm_r_last are read from its first proof and must
    be the same in every proof (``StackedCompound::circuit``)."""
    if not 0 <= k < len(c1.vanilla_proofs):
        raise ValueError(f"partition {k}: the C1 output has partitions 0..{len(c1.vanilla_proofs) - 1}")
    proofs = c1.vanilla_proofs[k]
    if not proofs:
        raise ValueError(f"vanilla_proofs[{k}]: no vanilla proofs, cannot make a circuit")
    comm_r_last, comm_c = proofs[0].comm_r_last_proof.root, proofs[0].c_x.inclusion_proof.root
    for i, p in enumerate(proofs):
        if p.comm_r_last_proof.root != comm_r_last:
            raise ValueError(f"vanilla_proofs[{k}][{i}].comm_r_last_proof: root differs from proof 0's (comm_r_last)")
        if p.c_x.inclusion_proof.root != comm_c:
            raise ValueError(f"vanilla_proofs[{k}][{i}].c_x: root differs from proof 0's (comm_c)")
    shape = tree_shape(c1.registered_proof.config)
    return StackedCircuit(_fr(c1.replica_id), fr_from_le(c1.comm_d, "comm_d"), fr_from_le(c1.comm_r, "comm_r"),
                          _fr(comm_r_last), _fr(comm_c),
                          tuple(challenge_proof_from_vanilla(p, shape) for p in proofs))


# --- without a witness (``Proof::empty``, ``blank_circuit``) --------------------------------------------


def blank_tree_path(shape: TreeShape) -> AuthPath:
    """``AuthPath::blank(nodes)`` for a tree of this shape."""
    return blank_auth_path(shape.base_levels, shape.base, shape.sub, shape.top)


def blank_challenge_proof(shape: TreeShape, layers: int) -> ChallengeProof:
    """One challenge's shape: paths of ``AuthPath::blank(nodes)``, columns of ``layers`` rows."""
    column = ColumnProof((None,) * layers, blank_tree_path(shape))
    return ChallengeProof(blank_tree_path(TreeShape(shape.nodes, 2)), None, None, blank_tree_path(shape),
                          blank_tree_path(shape), (column,) * DRG_DEGREE, (column,) * EXP_DEGREE)


def blank_stacked_circuit(shape: TreeShape, layers: int, challenges: int) -> StackedCircuit:
    """The circuit with no witness: what the parameters are generated from."""
    return StackedCircuit(None, None, None, None, None, (blank_challenge_proof(shape, layers),) * challenges)


# --- synthesis --------------------------------------------------------------------------------------------


def _alloc_column(cs, rows: Sequence[int | None]) -> list[AllocatedNum]:
    """column.rs ``Column::alloc``: one number per row (``column/column_num_row_i``)."""
    out = []
    with cs.namespace("column"):
        for i, row in enumerate(rows):
            with cs.namespace(f"column_num_row_{i}"):
                out.append(AllocatedNum.alloc_witness(cs, row))
    return out


def enforce_inclusion(cs, path: AuthPath, root: AllocatedNum, leaf: AllocatedNum, hash_fn=None) -> None:
    """params.rs ``enforce_inclusion``: a private-root PoR of ``leaf`` up to ``root`` (Poseidon by default)."""
    por_circuit(cs, leaf, path, root, private=True, hash_fn=hash_fn or poseidon.hash_multi_leaf_circuit)


def _parent_columns(cs, kind: str, proofs: Sequence[ColumnProof], comm_c: AllocatedNum) -> list[list[AllocatedNum]]:
    """Each parent's column allocated, hashed and proven in tree C."""
    columns = []
    for i, proof in enumerate(proofs):
        with cs.namespace(f"{kind}_parent_{i}_num"):
            column = _alloc_column(cs, proof.rows)
        with cs.namespace(f"{kind}_parent_{i}_constraint"):
            value = poseidon.hash_single_column(cs, column)
        with cs.namespace(f"{kind}_parent_{i}_inclusion"):
            enforce_inclusion(cs, proof.inclusion_path, comm_c, value)
        columns.append(column)
    return columns


def _label_parents(cs, layer: int, drg: list[list[AllocatedNum]], exp: list[list[AllocatedNum]]
                   ) -> list[list[Boolean]]:
    """The 37 parents' bits of a label: DRG rows at ``layer``, expander rows at ``layer - 1``."""
    rows = [(f"drg_parent_{i}_bits", col[layer - 1]) for i, col in enumerate(drg)]
    if layer > 1:
        rows += [(f"exp_parent_{len(drg) + i}_bits", col[layer - 2]) for i, col in enumerate(exp)]
    parents = []
    for name, num in rows:
        with cs.namespace(name):
            parents.append(reverse_bit_numbering(num.to_bits_le(cs)))
    if layer > 1:
        return parents + parents + parents[: TOTAL_PARENTS - 2 * len(parents)]
    return parents * 6 + parents[:1]


def synthesize_challenge(cs, proof: ChallengeProof, comm_d: AllocatedNum, comm_c: AllocatedNum,
                         comm_r_last: AllocatedNum, replica_id: list[Boolean]) -> None:
    """params.rs ``Proof::synthesize``: one challenge's gadgets, in the Rust order."""
    if not proof.drg_parents_proofs or not proof.exp_parents_proofs:
        raise ValueError("synthesize_challenge: the proof has no DRG or no expander parents")
    with cs.namespace("data_leaf"):
        data_leaf = AllocatedNum.alloc_witness(cs, proof.data_leaf)
    with cs.namespace("comm_d_inclusion"):
        enforce_inclusion(cs, proof.comm_d_path, comm_d, data_leaf, sha256_hasher.hash_multi_leaf_circuit)
    drg = _parent_columns(cs, "drg", proof.drg_parents_proofs, comm_c)
    exp = _parent_columns(cs, "exp", proof.exp_parents_proofs, comm_c)
    layers = len(drg[0])
    if any(len(col) != layers for col in drg + exp):
        raise ValueError(f"synthesize_challenge: parent columns differ in length (need {layers} rows each)")
    with cs.namespace("challenge"):
        challenge = UInt64.alloc(cs, proof.challenge)
    with cs.namespace("challenge input"):
        challenge.pack_into_input(cs)
    labels = []
    for layer in range(1, layers + 1):
        with cs.namespace(f"labeling_{layer}"):
            parents = _label_parents(cs, layer, drg, exp)
            with cs.namespace("create_label"):
                labels.append(create_label_circuit(cs, replica_id, parents, UInt32.constant(layer), challenge))
    with cs.namespace("encode_node"):
        encoded = encode(cs, labels[-1], data_leaf)
    with cs.namespace("comm_r_last_data_inclusion"):
        enforce_inclusion(cs, proof.comm_r_last_path, comm_r_last, encoded)
    with cs.namespace("c_x_column_hash"):
        column_hash = poseidon.hash_single_column(cs, labels)
    with cs.namespace("c_x_inclusion"):
        enforce_inclusion(cs, proof.comm_c_path, comm_c, column_hash)


def _alloc_named(cs, name: str, value: int | None, public: bool) -> AllocatedNum:
    """A number in namespace ``name``, made an input in ``{name}_input`` when ``public``."""
    with cs.namespace(name):
        num = AllocatedNum.alloc_witness(cs, value)
    if public:
        with cs.namespace(f"{name}_input"):
            num.inputize(cs)
    return num


def synthesize_stacked(cs, circuit: StackedCircuit) -> None:
    """proof.rs ``StackedCircuit::synthesize``: the partition's inputs and every challenge."""
    replica_id = _alloc_named(cs, "replica_id", circuit.replica_id, public=True)
    with cs.namespace("replica_id_bits"):
        replica_id_bits = reverse_bit_numbering(replica_id.to_bits_le(cs))
    comm_d = _alloc_named(cs, "comm_d", circuit.comm_d, public=True)
    comm_r = _alloc_named(cs, "comm_r", circuit.comm_r, public=True)
    comm_r_last = _alloc_named(cs, "comm_r_last", circuit.comm_r_last, public=False)
    comm_c = _alloc_named(cs, "comm_c", circuit.comm_c, public=False)
    with cs.namespace("H_comm_c_comm_r_last"):
        hashed = poseidon.hash2_circuit(cs, comm_c, comm_r_last)
    constraint.equal(cs, "enforce comm_r = H(comm_c || comm_r_last)", comm_r, hashed)
    for i, proof in enumerate(circuit.proofs):
        with cs.namespace(f"challenge_{i}"):
            synthesize_challenge(cs, proof, comm_d, comm_c, comm_r_last, replica_id_bits)
