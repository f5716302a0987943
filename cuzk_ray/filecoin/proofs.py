"""Groth16 proofs as bellperson writes them: 192 bytes per proof, a MultiProof their concatenation.

``Proof::write`` is A (compressed G1, 48 bytes) || B (compressed G2, 96) || C (compressed G1, 48)
(bellperson ``src/groth16/proof.rs``); a seal proof is the partitions' proofs in order, 1,920 bytes
for the 10 partitions of a 32 GiB sector (``storage-proofs-core/src/multi_proof.rs``). Reading
refuses, as bellperson's ``read`` does, a point at infinity and a point outside the subgroup.
"""

from __future__ import annotations

import numpy as np

from ..groth16.keys import Proof
from .points import G1, G2, PointError, Where, decode, encode

PROOF_PARTS = (("A", G1), ("B", G2), ("C", G1))
PROOF_BYTES = sum(g.compressed_size for _, g in PROOF_PARTS)  # 192


def proof_to_bytes(proof: Proof) -> bytes:
    """The 192-byte encoding of one proof."""
    return b"".join(encode(arr, compressed=True).tobytes() for arr in (proof.a, proof.b, proof.c))


def proof_from_bytes(data: bytes, source: str = "proof", offset: int = 0) -> Proof:
    """One proof from its 192 bytes; PointError naming ``source``, the byte offset and the part
    (A, B or C) when a point is malformed, at infinity, off the curve or outside the subgroup."""
    if len(data) != PROOF_BYTES:
        raise PointError(f"{source}: a Groth16 proof is {PROOF_BYTES} bytes, got {len(data)}")
    parts, pos = [], 0
    for name, g in PROOF_PARTS:
        chunk = data[pos : pos + g.compressed_size]
        where = Where(f"{source}: proof {name}", offset + pos)
        point = decode(chunk, g, compressed=True, check=True, where=where)
        if not point.any():
            raise where.fail(g, 0, g.compressed_size, "the point at infinity (a proof never holds it)")
        parts.append(point)
        pos += g.compressed_size
    return Proof(a=parts[0], b=parts[1], c=parts[2])


def multiproof_to_bytes(proofs: list[Proof]) -> bytes:
    """A MultiProof: the partitions' 192-byte proofs concatenated in partition order."""
    return b"".join(proof_to_bytes(p) for p in proofs)


def multiproof_from_bytes(data: bytes, partitions: int | None = None, source: str = "seal proof") -> list[Proof]:
    """The partition proofs of a MultiProof. ``partitions``: the count the proof type has (10 for
    32 GiB); the length must then be exactly that many proofs."""
    n, rest = divmod(len(data), PROOF_BYTES)
    if rest or n == 0:
        raise PointError(f"{source}: {len(data)} bytes is not a whole number (> 0) of {PROOF_BYTES}-byte proofs")
    if partitions is not None and n != partitions:
        raise PointError(f"{source}: {partitions} partitions need {partitions * PROOF_BYTES} bytes, got "
                         f"{len(data)} ({n} proofs)")
    view = memoryview(bytes(data))
    return [proof_from_bytes(bytes(view[k * PROOF_BYTES : (k + 1) * PROOF_BYTES]), f"{source} partition {k}",
                             k * PROOF_BYTES) for k in range(n)]


def proofs_equal(x: Proof, y: Proof) -> bool:
    """Same three points (for tests and round trips)."""
    return all(np.array_equal(getattr(x, f), getattr(y, f)) for f in ("a", "b", "c"))
