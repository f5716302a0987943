"""The C1 file: a sector's SealCommitPhase1Output as the JSON lotus, curio and filecoin-ffi pass to C2.

Sources (read, not copied): rust-filecoin-proofs-api src/seal.rs (``SealCommitPhase1Output``,
``VanillaSealProof``), rust-fil-proofs storage-proofs-porep/src/stacked/vanilla/{params.rs
(``Proof``, ``ReplicaColumnProof``), column.rs, column_proof.rs, labeling_proof.rs,
encoding_proof.rs}, storage-proofs-core/src/merkle/proof.rs (``MerkleProof``, ``ProofData``,
``InclusionPath``, ``PathElement``); curio lib/proof/porep_vproof_types.go (its Go mirror with
JSON tags). filecoin-ffi writes it with ``serde_json::to_vec``: serde's derive, compact, keys in
declaration order, every 32-byte value (commitments, tickets, Fr as its 32 LE bytes, SHA-254
nodes) an array of 32 numbers:

    {"registered_proof": "StackedDrg2KiBV1_1",
     "vanilla_proofs": {"StackedDrg2KiBV1": [[Proof, ... C], ... partitions]},
     "comm_r": [32], "comm_d": [32], "replica_id": [32], "seed": [32], "ticket": [32]}
    Proof = {"comm_d_proofs": MerkleProof, "comm_r_last_proof": MerkleProof,
             "replica_column_proofs": {"c_x": ColumnProof, "drg_parents": [6], "exp_parents": [8]},
             "labeling_proofs": [{"parents": [37], "layer_index": L, "node": v}, ... layers],
             "encoding_proof": {"parents": [37], "layer_index": layers, "node": v}}
    ColumnProof = {"column": {"index": v, "rows": [layers], "_h": null}, "inclusion_proof": MerkleProof}
    MerkleProof = {"data": {"Single": {"root", "leaf", "path": {"path": [PathElement]}}}}
                | {"data": {"Sub": {"base_proof": {"path"}, "sub_proof": {"path"}, "root", "leaf"}}}
                | {"data": {"Top": {"base_proof", "sub_proof", "top_proof", "root", "leaf"}}}
    PathElement = {"hashes": [arity - 1 siblings], "index": position}

The vanilla variant is named after the sector size's V1 proof whatever the registered proof
(``StackedDrg32GiBV1`` for ``StackedDrg32GiBV1_1``). Merkle proofs are held flat here
(``merkle.InclusionPath``: base levels, then sub, then top); the writer splits them by the sector
shape and the reader checks the variant is the one the shape implies.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..field import R_MOD
from ..formats.snarkjs_json import write_bytes_atomic
from .fr32 import NODE_BYTES
from .labels import layer_parent_labels
from .merkle import InclusionPath, PathLevel
from .registry import SEAL_PROOFS, ApiVersion, RegisteredSealProof, registered_seal_proof, sector_shape


@dataclass(frozen=True)
class ColumnProof:
    """A node's labels over the layers (``rows``, layer 1 first) and the tree-C path of their hash."""

    index: int
    rows: tuple[bytes, ...]
    inclusion_proof: InclusionPath


@dataclass(frozen=True)
class LabelingProof:
    """The 37 parent labels a node's label at ``layer_index`` was hashed from. The encoding proof
    has the same fields (and serde shape): the last layer's parents, whose label is the encoding key."""

    parents: tuple[bytes, ...]
    layer_index: int
    node: int


def column_parent_labels(layer: int, drg: Sequence[ColumnProof], exp: Sequence[ColumnProof]) -> list[bytes]:
    """The 37 labels a node's label at ``layer`` is hashed from, read off its parents' columns."""
    return layer_parent_labels(layer, [c.rows[layer - 1] for c in drg],
                               [c.rows[layer - 2] for c in exp] if layer > 1 else [])


@dataclass(frozen=True)
class VanillaProof:
    """One challenge's vanilla proof (rust-fil-proofs ``stacked::Proof``)."""

    comm_d_proof: InclusionPath
    comm_r_last_proof: InclusionPath
    c_x: ColumnProof
    drg_parents: tuple[ColumnProof, ...]
    exp_parents: tuple[ColumnProof, ...]
    labeling_proofs: tuple[LabelingProof, ...]
    encoding_proof: LabelingProof

    @classmethod
    def from_parts(cls, comm_d_proof: InclusionPath, comm_r_last_proof: InclusionPath, c_x: ColumnProof,
                   drg_parents: Sequence[ColumnProof], exp_parents: Sequence[ColumnProof]) -> VanillaProof:
        """The proof whose labeling and encoding proofs are taken from the columns (params.rs
        ``Proof::from_parts``): the challenge is ``c_x.index``, one labeling proof per row."""
        layers = len(c_x.rows)
        labeling = tuple(LabelingProof(tuple(column_parent_labels(layer, drg_parents, exp_parents)), layer, c_x.index)
                         for layer in range(1, layers + 1))
        encoding = LabelingProof(labeling[-1].parents, layers, c_x.index)
        return cls(comm_d_proof, comm_r_last_proof, c_x, tuple(drg_parents), tuple(exp_parents), labeling, encoding)


@dataclass(frozen=True)
class C1Output:
    """SealCommitPhase1Output: per partition, per challenge, a vanilla proof; the sector's values."""

    registered_proof: RegisteredSealProof
    vanilla_proofs: tuple[tuple[VanillaProof, ...], ...]
    comm_r: bytes
    comm_d: bytes
    replica_id: bytes
    seed: bytes
    ticket: bytes

    def partition_share(self, k: int) -> C1Output:
        """This output with partition ``k``'s vanilla proofs alone (the others empty, the indices
        kept): what partition k's circuit reads (stacked_circuit_from_c1(share, k)). Why: a 32 GiB
        C1 is 38.6 MB of JSON and ~1.7 s to parse; a synthesis task handed its share does not
        parse the other nine partitions (circuits.filecoin.split_c1)."""
        if not 0 <= k < len(self.vanilla_proofs):
            raise ValueError(f"partition {k}: the C1 output has partitions 0..{len(self.vanilla_proofs) - 1}")
        kept = tuple(p if i == k else () for i, p in enumerate(self.vanilla_proofs))
        return dataclasses.replace(self, vanilla_proofs=kept)


class C1FormatError(ValueError):
    """A C1 file that cannot be read as a SealCommitPhase1Output; the message names the field."""


def vanilla_variant(proof: RegisteredSealProof) -> str:
    """The ``VanillaSealProof`` variant of a registered proof: its sector size's V1 name."""
    return next(p.name for p in SEAL_PROOFS
                if p.sector_size == proof.sector_size and p.api_version is ApiVersion.V1_0 and not p.features)


def tree_variant(proof: RegisteredSealProof) -> tuple[str, int]:
    """The ProofData variant of tree C / R_last paths ('Single', 'Sub' or 'Top') and how many
    levels at the top are not base levels."""
    shape = sector_shape(proof.sector_size)
    if shape.top_arity:
        return "Top", 2
    return ("Sub", 1) if shape.sub_arity else ("Single", 0)


# --- writing ----------------------------------------------------------------------------------


def _path_json(levels) -> dict:
    return {"path": [{"hashes": [list(h) for h in lvl.siblings], "index": lvl.index} for lvl in levels]}


def merkle_proof_json(path: InclusionPath, variant: str = "Single", upper: int = 0) -> dict:
    """A MerkleProof as serde writes it: base levels, then ``upper`` sub/top levels (one each)."""
    root, leaf = list(path.root), list(path.leaf)
    base = path.levels[: len(path.levels) - upper]
    if variant == "Single":
        return {"data": {"Single": {"root": root, "leaf": leaf, "path": _path_json(base)}}}
    parts = {"base_proof": _path_json(base), "sub_proof": _path_json(path.levels[len(base) : len(base) + 1])}
    if variant == "Top":
        parts["top_proof"] = _path_json(path.levels[len(base) + 1 :])
    return {"data": {variant: {**parts, "root": root, "leaf": leaf}}}


def _layer_proof_json(p: LabelingProof) -> dict:
    return {"parents": [list(x) for x in p.parents], "layer_index": p.layer_index, "node": p.node}


def vanilla_proof_json(p: VanillaProof, proof: RegisteredSealProof) -> dict:
    """One ``stacked::Proof`` as serde writes it."""
    variant, upper = tree_variant(proof)

    def column(c: ColumnProof) -> dict:
        return {"column": {"index": c.index, "rows": [list(r) for r in c.rows], "_h": None},
                "inclusion_proof": merkle_proof_json(c.inclusion_proof, variant, upper)}

    return {"comm_d_proofs": merkle_proof_json(p.comm_d_proof),
            "comm_r_last_proof": merkle_proof_json(p.comm_r_last_proof, variant, upper),
            "replica_column_proofs": {"c_x": column(p.c_x), "drg_parents": [column(c) for c in p.drg_parents],
                                      "exp_parents": [column(c) for c in p.exp_parents]},
            "labeling_proofs": [_layer_proof_json(x) for x in p.labeling_proofs],
            "encoding_proof": _layer_proof_json(p.encoding_proof)}


def c1_json(c1: C1Output) -> dict:
    """The SealCommitPhase1Output as serde_json would write it (keys in declaration order)."""
    proofs = [[vanilla_proof_json(p, c1.registered_proof) for p in part] for part in c1.vanilla_proofs]
    return {"registered_proof": c1.registered_proof.name,
            "vanilla_proofs": {vanilla_variant(c1.registered_proof): proofs},
            "comm_r": list(c1.comm_r), "comm_d": list(c1.comm_d), "replica_id": list(c1.replica_id),
            "seed": list(c1.seed), "ticket": list(c1.ticket)}


def c1_bytes(c1: C1Output) -> bytes:
    """The file's bytes: compact JSON, as ``serde_json::to_vec`` writes it."""
    return json.dumps(c1_json(c1), separators=(",", ":")).encode()


def write_c1(c1: C1Output, path) -> int:
    """Write the C1 JSON to a temporary name beside ``path``, then rename it; returns its size."""
    data = c1_bytes(c1)
    write_bytes_atomic(path, data)
    return len(data)


# --- reading ----------------------------------------------------------------------------------


def _fail(where: str, what: str):
    raise C1FormatError(f"{where}: {what}")


def _field(obj, key: str, where: str):
    if not isinstance(obj, dict):
        _fail(where, f"need a JSON object, have {type(obj).__name__}")
    if key not in obj:
        _fail(where, f"missing field {key!r}")
    return obj[key]


def _list(value, where: str, length: int | None = None) -> list:
    if not isinstance(value, list):
        _fail(where, f"need a JSON array, have {type(value).__name__}")
    if length is not None and len(value) != length:
        _fail(where, f"need {length} entries, have {len(value)}")
    return value


def _uint(value, where: str, bits: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 1 << bits:
        _fail(where, f"need an unsigned {bits}-bit integer, have {value!r}")
    return value


def _bytes32(value, where: str) -> bytes:
    """32 bytes from a JSON array of 32 numbers 0..255."""
    if not isinstance(value, list) or len(value) != NODE_BYTES:
        _fail(where, f"need an array of {NODE_BYTES} bytes, have {_describe(value)}")
    try:
        return bytes(value)
    except (TypeError, ValueError):
        _fail(where, "need numbers 0..255 in the byte array")


def _fr(value, where: str) -> bytes:
    """A Poseidon-domain value: 32 LE bytes that are a reduced Fr element."""
    out = _bytes32(value, where)
    if int.from_bytes(out, "little") >= R_MOD:
        _fail(where, f"0x{out[::-1].hex()} is not a reduced Fr element (must be < r)")
    return out


def _describe(value) -> str:
    return f"an array of {len(value)}" if isinstance(value, list) else type(value).__name__


def _levels(obj, where: str, node) -> list[PathLevel]:
    elements = _list(_field(obj, "path", where), f"{where}.path")
    levels = []
    for k, element in enumerate(elements):
        at = f"{where}.path[{k}]"
        hashes = _list(_field(element, "hashes", at), f"{at}.hashes")
        siblings = tuple(node(h, f"{at}.hashes[{j}]") for j, h in enumerate(hashes))
        levels.append(PathLevel(siblings, _uint(_field(element, "index", at), f"{at}.index", 64)))
    return levels


def read_merkle_proof(obj, where: str, variant: str, node=_fr) -> InclusionPath:
    """A serde MerkleProof of the expected ``variant``, flattened (base, then sub, then top levels)."""
    data = _field(obj, "data", where)
    if not isinstance(data, dict) or len(data) != 1:
        _fail(f"{where}.data", "need an object with one of 'Single', 'Sub', 'Top'")
    (have,) = data
    if have != variant:
        _fail(f"{where}.data", f"this sector's tree proofs are {variant!r}, have {have!r}")
    body, at = data[have], f"{where}.data.{have}"
    if variant == "Single":
        levels = _levels(_field(body, "path", at), f"{at}.path", node)
    else:
        parts = ("base_proof", "sub_proof", "top_proof")[: 3 if variant == "Top" else 2]
        levels = [lvl for part in parts for lvl in _levels(_field(body, part, at), f"{at}.{part}", node)]
    root = node(_field(body, "root", at), f"{at}.root")
    return InclusionPath(node(_field(body, "leaf", at), f"{at}.leaf"), tuple(levels), root)


def _column_proof(obj, where: str, variant: str) -> ColumnProof:
    column = _field(obj, "column", where)
    rows = _list(_field(column, "rows", f"{where}.column"), f"{where}.column.rows")
    return ColumnProof(_uint(_field(column, "index", f"{where}.column"), f"{where}.column.index", 32),
                       tuple(_fr(r, f"{where}.column.rows[{i}]") for i, r in enumerate(rows)),
                       read_merkle_proof(_field(obj, "inclusion_proof", where), f"{where}.inclusion_proof", variant))


def _layer_proof(obj, where: str) -> LabelingProof:
    parents = _list(_field(obj, "parents", where), f"{where}.parents")
    return LabelingProof(tuple(_fr(p, f"{where}.parents[{i}]") for i, p in enumerate(parents)),
                         _uint(_field(obj, "layer_index", where), f"{where}.layer_index", 32),
                         _uint(_field(obj, "node", where), f"{where}.node", 64))


def read_vanilla_proof(obj, where: str, proof: RegisteredSealProof) -> VanillaProof:
    """One ``stacked::Proof`` from its JSON object."""
    variant, _upper = tree_variant(proof)
    rcp = _field(obj, "replica_column_proofs", where)
    at = f"{where}.replica_column_proofs"

    def columns(key: str) -> tuple[ColumnProof, ...]:
        items = _list(_field(rcp, key, at), f"{at}.{key}")
        return tuple(_column_proof(c, f"{at}.{key}[{i}]", variant) for i, c in enumerate(items))

    labeling = _list(_field(obj, "labeling_proofs", where), f"{where}.labeling_proofs")
    return VanillaProof(
        read_merkle_proof(_field(obj, "comm_d_proofs", where), f"{where}.comm_d_proofs", "Single", _bytes32),
        read_merkle_proof(_field(obj, "comm_r_last_proof", where), f"{where}.comm_r_last_proof", variant),
        _column_proof(_field(rcp, "c_x", at), f"{at}.c_x", variant), columns("drg_parents"), columns("exp_parents"),
        tuple(_layer_proof(x, f"{where}.labeling_proofs[{i}]") for i, x in enumerate(labeling)),
        _layer_proof(_field(obj, "encoding_proof", where), f"{where}.encoding_proof"))


def parse_c1(obj) -> C1Output:
    """A C1Output from the decoded JSON; C1FormatError naming the field for anything malformed."""
    name = _field(obj, "registered_proof", "top level")
    try:
        proof = registered_seal_proof(name if isinstance(name, str) else str(name))
    except ValueError as e:
        raise C1FormatError(f"registered_proof: {e}") from None
    vanilla = _field(obj, "vanilla_proofs", "top level")
    variant = vanilla_variant(proof)
    if not isinstance(vanilla, dict) or list(vanilla) != [variant]:
        have = list(vanilla) if isinstance(vanilla, dict) else type(vanilla).__name__
        _fail("vanilla_proofs", f"{proof.name} needs one variant {variant!r}, have {have}")
    partitions = _list(vanilla[variant], "vanilla_proofs")
    proofs = tuple(
        tuple(read_vanilla_proof(p, f"vanilla_proofs[{k}][{i}]", proof)
              for i, p in enumerate(_list(part, f"vanilla_proofs[{k}]")))
        for k, part in enumerate(partitions))
    values = {key: _bytes32(_field(obj, key, "top level"), key) for key in ("comm_r", "comm_d", "seed", "ticket")}
    return C1Output(proof, proofs, replica_id=_fr(_field(obj, "replica_id", "top level"), "replica_id"), **values)


def read_c1(path) -> C1Output:
    """Read a C1 JSON file; a one-line C1FormatError naming the file and the field when it is malformed."""
    path = Path(path)
    try:
        obj = json.loads(path.read_bytes())
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise C1FormatError(f"{path}: not JSON: {e}") from None
    try:
        return parse_c1(obj)
    except C1FormatError as e:
        raise C1FormatError(f"{path}: {e}") from None
