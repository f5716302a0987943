"""Encoding a node in a circuit, as rust-fil-proofs' ``storage-proofs-core/src/gadgets/encode.rs``:
the replica node is the data node plus the key (the last layer's label) in Fr.
"""

from __future__ import annotations

from . import constraint
from .num import AllocatedNum


def encode(cs, key: AllocatedNum, value: AllocatedNum) -> AllocatedNum:
    """key + value, a new number (namespace ``encode_add``, one constraint)."""
    with cs.namespace("encode_add"):
        return constraint.add(cs, key, value)


def decode(cs, key: AllocatedNum, value: AllocatedNum) -> AllocatedNum:
    """value - key, a new number (namespace ``decode_sub``, one constraint)."""
    with cs.namespace("decode_sub"):
        return constraint.sub(cs, value, key)
