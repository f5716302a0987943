"""Fr in Filecoin's 32-byte form, and fr32 padding (127 bytes of data -> 128 bytes of nodes).

Filecoin stores a field element ("a node") as 32 bytes, little-endian. A sector's data is
*fr32-padded* before it becomes nodes: every 254 bits of data are followed by 2 zero bits, so
127 data bytes (1016 bits) become four 32-byte nodes whose top two bits are clear, each < 2^254 < r.
Bits are taken least-significant first within each byte (rust-fil-proofs `fr32`).

Node arrays here are ``uint8[n, 32]``; on a little-endian machine the same memory viewed as
``uint64[n, 4]`` is the project's Fr limb format (``nodes_as_limbs``).
"""

from __future__ import annotations

import numpy as np

from ..field import FR_LIMBS, R_MOD, first_not_below_r

NODE_BYTES = 32
UNPADDED_CHUNK = 127  # data bytes per fr32 chunk
PADDED_CHUNK = 128  # node bytes per fr32 chunk (four nodes of 254 data bits each)
NODE_DATA_BITS = 254
SAFE_TOP_MASK = 0x3F  # the last byte of a "safe" node: top two bits cleared, so the value is < 2^254 < r
_BLOCK_CHUNKS = 1 << 15  # chunks per vectorized step (~4 MiB): bounds the bit arrays' memory


def fr_from_bytes(data: bytes, what: str = "value") -> int:
    """A 32-byte little-endian Fr element; ValueError naming ``what`` if it is not 32 bytes or not < r."""
    if len(data) != NODE_BYTES:
        raise ValueError(f"{what}: need {NODE_BYTES} bytes for an Fr element, have {len(data)}")
    value = int.from_bytes(data, "little")
    if value >= R_MOD:
        raise ValueError(f"{what}: 0x{bytes(data)[::-1].hex()} is not a reduced Fr element (must be < r)")
    return value


def fr_to_bytes(value: int) -> bytes:
    """The 32-byte little-endian form of an Fr element (0 <= value < r)."""
    if not 0 <= value < R_MOD:
        raise ValueError(f"fr_to_bytes: {value:#x} is not in [0, r)")
    return value.to_bytes(NODE_BYTES, "little")


def fr_from_bytes_safe(data: bytes) -> int:
    """32 bytes read as Fr after clearing the top two bits (Filecoin's ``bytes_into_fr_repr_safe``):
    always valid, as used for hashes that become field elements (replica_id, SHA-254 outputs)."""
    if len(data) != NODE_BYTES:
        raise ValueError(f"need {NODE_BYTES} bytes for an Fr element, have {len(data)}")
    return int.from_bytes(bytes(data[:31]) + bytes([data[31] & SAFE_TOP_MASK]), "little")


def as_nodes(data, what: str = "nodes") -> np.ndarray:
    """``uint8[n, 32]`` view of bytes or an array whose size is a multiple of 32 (no copy if possible)."""
    return _bytes_array(data, NODE_BYTES, what).reshape(-1, NODE_BYTES)


def nodes_as_limbs(nodes: np.ndarray) -> np.ndarray:
    """The Fr limb view ``uint64[n, 4]`` of ``uint8[n, 32]`` nodes (little-endian bytes = LE limbs)."""
    return np.ascontiguousarray(nodes, dtype=np.uint8).view("<u8").reshape(-1, FR_LIMBS)


def limbs_as_nodes(limbs: np.ndarray) -> np.ndarray:
    """The node view ``uint8[n, 32]`` of Fr limbs ``uint64[n, 4]``."""
    return np.ascontiguousarray(limbs, dtype="<u8").view(np.uint8).reshape(-1, NODE_BYTES)


def check_nodes(nodes: np.ndarray, what: str = "nodes") -> None:
    """ValueError naming ``what`` and the first node (and its byte offset) that is not a reduced Fr."""
    bad = first_not_below_r(nodes_as_limbs(nodes))
    if bad >= 0:
        raise ValueError(f"{what}: node {bad} (byte offset {bad * NODE_BYTES}) is not a reduced Fr element "
                         "(must be < r)")


def pad(data) -> np.ndarray:
    """fr32-pad ``data`` (a multiple of 127 bytes): ``uint8[n * 128]``, every 32-byte node < 2^254."""
    raw = _bytes_array(data, UNPADDED_CHUNK, "fr32 pad input")
    chunks = raw.reshape(-1, UNPADDED_CHUNK)
    out = np.empty((chunks.shape[0], PADDED_CHUNK), dtype=np.uint8)
    for lo in range(0, chunks.shape[0], _BLOCK_CHUNKS):
        bits = np.unpackbits(chunks[lo : lo + _BLOCK_CHUNKS], axis=1, bitorder="little")
        nodes = np.zeros((bits.shape[0], 4, 8 * NODE_BYTES), dtype=np.uint8)
        nodes[:, :, :NODE_DATA_BITS] = bits.reshape(-1, 4, NODE_DATA_BITS)
        out[lo : lo + _BLOCK_CHUNKS] = np.packbits(nodes.reshape(bits.shape[0], -1), axis=1, bitorder="little")
    return out.reshape(-1)


def unpad(padded) -> np.ndarray:
    """Undo ``pad``: ``uint8[n * 127]`` from n * 128 padded bytes. A node with either top bit set
    is not fr32 padding: ValueError naming its byte offset."""
    raw = _bytes_array(padded, PADDED_CHUNK, "fr32 unpad input")
    top = raw.reshape(-1, NODE_BYTES)[:, -1] & ~np.uint8(SAFE_TOP_MASK)
    if top.any():
        bad = int(np.argmax(top != 0))
        raise ValueError(f"fr32 unpad input: node {bad} (byte offset {bad * NODE_BYTES}) has its top two bits set; "
                         "not fr32-padded data")
    chunks = raw.reshape(-1, PADDED_CHUNK)
    out = np.empty((chunks.shape[0], UNPADDED_CHUNK), dtype=np.uint8)
    for lo in range(0, chunks.shape[0], _BLOCK_CHUNKS):
        bits = np.unpackbits(chunks[lo : lo + _BLOCK_CHUNKS], axis=1, bitorder="little")
        data_bits = bits.reshape(-1, 4, 8 * NODE_BYTES)[:, :, :NODE_DATA_BITS].reshape(bits.shape[0], -1)
        out[lo : lo + _BLOCK_CHUNKS] = np.packbits(data_bits, axis=1, bitorder="little")
    return out.reshape(-1)


def unpadded_size(padded_size: int) -> int:
    """Data bytes that fill ``padded_size`` bytes of nodes (a sector of 2 KiB holds 2032 bytes)."""
    if padded_size % PADDED_CHUNK:
        raise ValueError(f"padded size {padded_size} is not a multiple of {PADDED_CHUNK}")
    return padded_size // PADDED_CHUNK * UNPADDED_CHUNK


def _bytes_array(data, multiple: int, what: str) -> np.ndarray:
    arr = np.frombuffer(data, dtype=np.uint8) if isinstance(data, bytes | bytearray | memoryview) else data
    arr = np.ascontiguousarray(arr, dtype=np.uint8).reshape(-1)
    if arr.size % multiple:
        raise ValueError(f"{what}: need a multiple of {multiple} bytes, have {arr.size}")
    return arr
