"""One SDR label in a circuit, as rust-fil-proofs' ``storage-proofs-porep/src/stacked/circuit/
create_label.rs`` (``create_label_circuit``): the circuit form of ``labels.label_from_parents``.

The message is the replica_id's bits (padded to 256 with constant zeros), the layer as a u32 and
the node as a u64 (both big-endian), constant zeros to 512 bits, then the 37 parents, each padded
to 256 bits: 1,248 bytes, hashed with SHA-256 in namespace ``hash`` (20 compressions with the
padding). The digest's bits are put back in little-endian order (``reverse_bit_numbering``) and the
first 254 packed into one number (``result_num``): SHA-256 with the top two bits cleared.
"""

from __future__ import annotations

from ..labels import TOTAL_PARENTS
from .bit_numbering import reverse_bit_numbering
from .boolean import FALSE, Boolean
from .multieq import CAPACITY
from .multipack import pack_bits
from .num import AllocatedNum
from .sha256 import sha256
from .uint32 import UInt32
from .uint64 import UInt64


def _pad_to(bits: list[Boolean], multiple: int) -> None:
    bits += [FALSE] * (-len(bits) % multiple)


def create_label_circuit(cs, replica_id: list[Boolean], parents: list[list[Boolean]], layer_index: UInt32,
                         node: UInt64) -> AllocatedNum:
    """The label of ``node`` at ``layer_index`` from the replica_id's bits and the 37 parents' bits
    (each byte most significant bit first, as ``reverse_bit_numbering`` gives them)."""
    if not 32 <= len(replica_id) <= 256:
        raise ValueError(f"create_label_circuit: replica_id has {len(replica_id)} bits, need 32..256")
    if len(parents) != TOTAL_PARENTS:
        raise ValueError(f"create_label_circuit: {len(parents)} parents, need {TOTAL_PARENTS}")
    message = list(replica_id)
    _pad_to(message, 256)
    message += layer_index.into_bits_be() + node.to_bits_be()
    _pad_to(message, 512)
    for parent in parents:
        message += parent
        _pad_to(message, 256)
    if len(message) != (2 + TOTAL_PARENTS) * 256:
        raise ValueError(f"create_label_circuit: a parent is over 256 bits ({len(message)} message bits)")
    with cs.namespace("hash"):
        digest = sha256(cs, message)
    with cs.namespace("result_num"):
        return pack_bits(cs, reverse_bit_numbering(digest)[:CAPACITY])
