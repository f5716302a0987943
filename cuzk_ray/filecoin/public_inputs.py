"""The public inputs of one PoRep partition, as bellperson's verifier takes them.

Sources (read, not copied): rust-fil-proofs storage-proofs-porep/src/stacked/circuit/proof.rs
``generate_public_inputs``, storage-proofs-core/src/gadgets/por.rs (path bits packed with
``multipack::pack_into_inputs``), storage-proofs-porep/src/stacked/vanilla/params.rs
``generate_replica_id``, fr32/src/convert.rs (``bytes_into_fr_repr_safe``), filecoin-proofs
api/seal.rs ``verify_seal`` (comm_r and comm_d must already be field elements).

Order: replica_id, comm_d, comm_r, then per challenge 18 inputs: the comm_d path index, the 6 DRG
parents' tree C path indices, the 8 expander parents', the challenge as a u64, the comm_r_last
path index, the comm_c path index. ONE (bellperson's input 0) is **not** included: the list is
what a Groth16 verifier pairs with IC[1..], IC[0] being ONE's (3 + 18 C values, C challenges).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from ..field import R_MOD
from .challenges import porep_challenges
from .graph import StackedGraph
from .registry import PoRepConfig

CAPACITY = 254  # bits one Fr holds for packing (BLS12-381's Fr is 255 bits)
INPUTS_PER_CHALLENGE = 18


def fr_from_le(value: bytes, what: str) -> int:
    """32 little-endian bytes as a field element; a one-line error naming ``what`` when the value
    is not below r (rust's ``bytes_into_fr`` refuses it too)."""
    if len(value) != 32:
        raise ValueError(f"{what}: need 32 bytes, have {len(value)}")
    x = int.from_bytes(value, "little")
    if x >= R_MOD:
        raise ValueError(f"{what}: 0x{value[::-1].hex()} (little-endian bytes read as an integer) is not below the "
                         f"BLS12-381 scalar modulus r")
    return x


def safe_fr_bytes(digest: bytes) -> bytes:
    """fr32 ``bytes_into_fr_repr_safe``: clear the top two bits so any 32 bytes become an Fr."""
    return digest[:31] + bytes([digest[31] & 0x3F])


def replica_id(prover_id: bytes, sector_id: int, ticket: bytes, comm_d: bytes, porep_id: bytes) -> bytes:
    """SHA-256(prover_id || u64_be(sector_id) || ticket || comm_d || porep_id), made a safe Fr;
    returned as its 32 little-endian bytes."""
    for name, value in (("prover_id", prover_id), ("ticket", ticket), ("comm_d", comm_d), ("porep_id", porep_id)):
        if len(value) != 32:
            raise ValueError(f"{name}: need 32 bytes, have {len(value)}")
    if not 0 <= sector_id < 1 << 64:
        raise ValueError(f"sector_id: {sector_id} is not a u64")
    digest = hashlib.sha256(prover_id + sector_id.to_bytes(8, "big") + ticket + comm_d + porep_id).digest()
    return safe_fr_bytes(digest)


def pack_bits_le(bits: list[bool]) -> list[int]:
    """multipack ``pack_into_inputs``: little-endian bits, CAPACITY per field element."""
    return [sum(1 << i for i, b in enumerate(bits[s:s + CAPACITY]) if b) for s in range(0, len(bits), CAPACITY)]


def path_bits(leaf: int, leaves: int, arities: tuple[int, ...]) -> list[bool]:
    """The index bits a PoR circuit allocates for ``leaf``: per level, bottom up, log2(arity)
    bits of the position among its siblings, least significant first. ``arities`` holds one
    entry per level (the base arity repeated, then sub and top)."""
    bits, rest, width = [], leaf, 1
    for arity in arities:
        step = arity.bit_length() - 1
        if arity != 1 << step:
            raise ValueError(f"tree: arity {arity} is not a power of two")
        bits += [bool((rest >> i) & 1) for i in range(step)]
        rest >>= step
        width *= arity
    if width != leaves or not 0 <= leaf < leaves:
        raise ValueError(f"tree: leaf {leaf} of {leaves} does not fit levels of arities {arities}")
    return bits


def tree_levels(leaves: int, base: int, sub: int = 0, top: int = 0) -> tuple[int, ...]:
    """Per-level arities of an LCTree<base, sub, top> with ``leaves`` leaves (binary tree D:
    ``tree_levels(n, 2)``)."""
    base_leaves = leaves // (sub or 1) // (top or 1)
    levels = []
    while base_leaves > 1:
        levels.append(base)
        base_leaves //= base
    return tuple(levels) + ((sub,) if sub else ()) + ((top,) if top else ())


def path_index_input(leaf: int, leaves: int, arities: tuple[int, ...]) -> int:
    """The one public input a private PoR contributes: its packed path bits (== the leaf index)."""
    (packed,) = pack_bits_le(path_bits(leaf, leaves, arities))
    return packed


@dataclass(frozen=True)
class SealPublicData:
    """What a seal proof is checked against, besides the config (filecoin-proofs ``verify_seal``)."""

    comm_r: bytes
    comm_d: bytes
    prover_id: bytes
    sector_id: int
    ticket: bytes
    seed: bytes


def porep_public_inputs(config: PoRepConfig, data: SealPublicData, k: int,
                        graph: StackedGraph | None = None) -> list[int]:
    """The 3 + 18 C public inputs of partition k (ONE excluded), as field elements."""
    return _partitions_inputs(config, data, [k], graph)[0]


def seal_public_inputs(config: PoRepConfig, data: SealPublicData) -> list[list[int]]:
    """The public inputs of every partition of a seal proof (one list per 192-byte proof); the
    parents of all partitions' challenges are computed in one vectorized pass."""
    return _partitions_inputs(config, data, list(range(config.partitions)), None)


def _partitions_inputs(config: PoRepConfig, data: SealPublicData, ks: list[int],
                       graph: StackedGraph | None) -> list[list[int]]:
    rid = replica_id(data.prover_id, data.sector_id, data.ticket, data.comm_d, config.porep_id)
    return replica_partitions_inputs(config, rid, data.comm_d, data.comm_r, data.seed, ks, graph)


def replica_partitions_inputs(config: PoRepConfig, rid: bytes, comm_d_bytes: bytes, comm_r_bytes: bytes, seed: bytes,
                              ks: list[int], graph: StackedGraph | None = None) -> list[list[int]]:
    """The public inputs of partitions ``ks`` from the replica_id itself (what a C1 file holds in
    place of prover_id, sector_id and ticket), comm_d, comm_r and the seed."""
    comm_r = fr_from_le(comm_r_bytes, "comm_r")
    comm_d = fr_from_le(comm_d_bytes, "comm_d")
    if len(seed) != 32:
        raise ValueError(f"seed: need 32 bytes, have {len(seed)}")
    graph = graph or StackedGraph(config.nodes, config.porep_id, config.api_version)
    nodes, shape = config.nodes, config.shape
    tree_d = tree_levels(nodes, 2)
    tree_c = tree_levels(nodes, shape.base_arity, shape.sub_arity, shape.top_arity)
    challenges = [porep_challenges(config, rid, comm_r_bytes, seed, k) for k in ks]
    rows = iter(graph.parents_of([c for cs in challenges for c in cs]).tolist())
    out = []
    for cs in challenges:
        inputs = [int.from_bytes(rid, "little"), comm_d, comm_r]
        for challenge in cs:
            inputs.append(path_index_input(challenge, nodes, tree_d))
            inputs += [path_index_input(p, nodes, tree_c) for p in next(rows)]
            inputs.append(challenge)  # u64_into_fr
            inputs.append(path_index_input(challenge, nodes, tree_c))  # tree R_last: tree C's shape
            inputs.append(path_index_input(challenge, nodes, tree_c))
        out.append(inputs)
    return out
