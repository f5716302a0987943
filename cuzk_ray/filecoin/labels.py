"""SDR labels (PC1): every node of every layer is SHA-254 over the replica_id, the layer, the node
and its parents' labels.

Sources (read, not copied): rust-fil-proofs storage-proofs-porep/src/stacked/vanilla/
create_label/single.rs (``create_label``, ``create_label_exp``), graph.rs
(``copy_parents_data_inner``, ``copy_parents_data_inner_exp``) and labeling_proof.rs.

The message hashed for node v of layer L (1-based) is 64 bytes of head, then 37 parent labels:

    replica_id (32) || u32_be(L) || u64_be(v) || 20 zero bytes || 37 x label (32 each)

Layer 1 takes the 6 DRG parents' labels from layer 1 itself, cycled to 37 (6 x 6, then parent 0).
Layers > 1 take the 6 DRG parents from the same layer and the 8 expander parents from layer L - 1,
cycled to 37 (14, 14, then the first 9). Node 0 has no parents: its message is the head alone.
The label is the digest with its top two bits cleared (an Fr element). The predecessor v - 1 is
always a DRG parent, so a layer is computed node after node: one hashlib call per node.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from .fr32 import NODE_BYTES, SAFE_TOP_MASK
from .graph import StackedGraph
from .registry import DRG_DEGREE, EXP_DEGREE
from .sha254 import sha254

TOTAL_PARENTS = 37  # storage-proofs-porep vanilla/proof.rs TOTAL_PARENTS
HEAD_BYTES = 64
_EXP_CHUNK = 1 << 16  # nodes whose expander parents' labels are gathered at once (bounds memory)


def label_head(replica_id: bytes, layer: int, node: int) -> bytes:
    """The 64-byte head of a label's message: replica_id, u32_be(layer), u64_be(node), zeros."""
    if len(replica_id) != NODE_BYTES:
        raise ValueError(f"replica_id: need {NODE_BYTES} bytes, have {len(replica_id)}")
    head = bytes(replica_id) + layer.to_bytes(4, "big") + node.to_bytes(8, "big")
    return head + bytes(HEAD_BYTES - len(head))


def repeat_parents(parent_labels: Sequence[bytes], total: int = TOTAL_PARENTS) -> list[bytes]:
    """The parents' labels cycled to ``total`` entries, as the hash and the circuit take them."""
    if not parent_labels:
        raise ValueError("repeat_parents: no parents")
    return [parent_labels[i % len(parent_labels)] for i in range(total)]


def label_from_parents(replica_id: bytes, layer: int, node: int, parents: Sequence[bytes]) -> bytes:
    """A label from its (already repeated) parent labels; ``parents`` is empty for node 0."""
    return sha254(label_head(replica_id, layer, node) + b"".join(parents))


def layer_parent_labels(layer: int, drg: Sequence[bytes], exp: Sequence[bytes]) -> list[bytes]:
    """The 37 parent labels of a node of ``layer``: DRG parents' labels of that layer (``drg``, 6),
    and for layers > 1 the expander parents' labels of the layer before (``exp``, 8), repeated."""
    if len(drg) != DRG_DEGREE or (layer > 1 and len(exp) != EXP_DEGREE):
        raise ValueError(f"layer {layer}: need {DRG_DEGREE} DRG and {EXP_DEGREE} expander parent labels, "
                         f"have {len(drg)} and {len(exp)}")
    return repeat_parents(list(drg) if layer == 1 else [*drg, *exp])


def sdr_labels(graph: StackedGraph, replica_id: bytes, layers: int, parents: np.ndarray | None = None) -> np.ndarray:
    """Every label of a sector: ``uint8[layers, nodes, 32]``, layer 1 first. ``parents``:
    ``graph.all_parents()`` when already computed (it is the slow part below 8 MiB)."""
    n = graph.nodes
    parents = graph.all_parents() if parents is None else np.asarray(parents)
    if parents.shape != (n, DRG_DEGREE + EXP_DEGREE):
        raise ValueError(f"parents: need shape {(n, DRG_DEGREE + EXP_DEGREE)}, have {parents.shape}")
    out = np.empty((layers, n, NODE_BYTES), dtype=np.uint8)
    for layer in range(1, layers + 1):
        previous = out[layer - 2] if layer > 1 else None
        out[layer - 1] = _layer(replica_id, layer, parents, previous)
    return out


def _layer(replica_id: bytes, layer: int, parents: np.ndarray, previous: np.ndarray | None) -> np.ndarray:
    """One layer's labels, node after node (each depends on its predecessor's)."""
    n, step, sha = len(parents), NODE_BYTES, hashlib.sha256
    base = label_head(replica_id, layer, 0)[:36]
    pad = bytes(HEAD_BYTES - 44)
    cur = bytearray(n * step)
    cur[:step] = sha254(label_head(replica_id, layer, 0))
    drg = parents[:, :DRG_DEGREE].astype(np.int64) * step
    for lo in range(1, n, _EXP_CHUNK):
        hi = min(n, lo + _EXP_CHUNK)
        exp = None if previous is None else previous[parents[lo:hi, DRG_DEGREE:]].reshape(hi - lo, -1)
        for v, offsets in zip(range(lo, hi), drg[lo:hi].tolist()):
            six = b"".join([cur[o : o + step] for o in offsets])
            if exp is None:
                body = six * 6 + six[:step]
            else:
                fourteen = six + exp[v - lo].tobytes()
                body = fourteen * 2 + fourteen[: 9 * step]
            digest = sha(base + v.to_bytes(8, "big") + pad + body).digest()
            cur[v * step : v * step + step - 1] = digest[:-1]
            cur[v * step + step - 1] = digest[-1] & SAFE_TOP_MASK
    return np.frombuffer(bytes(cur), dtype=np.uint8).reshape(n, step)
