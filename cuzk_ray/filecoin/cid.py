"""Commitment CIDs: comm_d and comm_r as the CIDs lotus, curio and the chain print.

A commitment CID is a CIDv1: varint version 1, varint codec, varint multihash code, varint digest
length 32, then the 32-byte commitment; written in base32 lowercase without padding behind the
multibase prefix 'b' (go-fil-commcid):

- comm_d: codec fil-commitment-unsealed (0xf101), hash sha2-256-trunc254-padded (0x1012): "baga6ea4sea...";
- comm_r: codec fil-commitment-sealed (0xf102), hash poseidon-bls12_381-a2-fc1 (0xb401): "bagboea4b5abc...".
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

CID_VERSION = 1
COMMITMENT_BYTES = 32


@dataclass(frozen=True)
class CommitmentKind:
    """The multicodec pair that marks one kind of commitment."""

    name: str
    codec: int
    hash_code: int


UNSEALED = CommitmentKind("comm_d", 0xF101, 0x1012)  # fil-commitment-unsealed, sha2-256-trunc254-padded
SEALED = CommitmentKind("comm_r", 0xF102, 0xB401)  # fil-commitment-sealed, poseidon-bls12_381-a2-fc1
KINDS = (UNSEALED, SEALED)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _read_varint(data: bytes, offset: int, what: str, cid: str) -> tuple[int, int]:
    value = shift = 0
    for pos in range(offset, min(len(data), offset + 9)):
        value |= (data[pos] & 0x7F) << shift
        shift += 7
        if not data[pos] & 0x80:
            return value, pos + 1
    raise ValueError(f"CID {cid!r}: truncated or overlong varint ({what}) at byte {offset}")


def commitment_to_cid(commitment: bytes, kind: CommitmentKind) -> str:
    """The CID string of a 32-byte commitment of ``kind`` (UNSEALED for comm_d, SEALED for comm_r)."""
    if len(commitment) != COMMITMENT_BYTES:
        raise ValueError(f"{kind.name}: need {COMMITMENT_BYTES} bytes, have {len(commitment)}")
    raw = (_varint(CID_VERSION) + _varint(kind.codec) + _varint(kind.hash_code) + _varint(COMMITMENT_BYTES)
           + bytes(commitment))
    return "b" + base64.b32encode(raw).decode().rstrip("=").lower()


def cid_to_commitment(cid: str, kind: CommitmentKind) -> bytes:
    """The 32-byte commitment inside a CID of ``kind``; ValueError in one line for a wrong prefix, codec,
    hash or length."""
    if not cid.startswith("b"):
        raise ValueError(f"CID {cid!r}: multibase prefix {cid[:1]!r}, expected 'b' (base32 lowercase)")
    body = cid[1:].upper()
    try:
        raw = base64.b32decode(body + "=" * (-len(body) % 8))
    except ValueError:
        raise ValueError(f"CID {cid!r}: not valid base32") from None
    fields, offset = [], 0
    for what in ("version", "codec", "multihash code", "digest length"):
        value, offset = _read_varint(raw, offset, what, cid)
        fields.append(value)
    length = fields[3]
    expected = (CID_VERSION, kind.codec, kind.hash_code, COMMITMENT_BYTES)
    for what, have, need in zip(("version", "codec", "multihash code", "digest length"), fields, expected):
        if have != need:
            raise ValueError(f"CID {cid!r}: {what} {have:#x}, expected {need:#x} for {kind.name}")
    if len(raw) - offset != length:
        raise ValueError(f"CID {cid!r}: digest of {len(raw) - offset} bytes, expected {length}")
    return raw[offset:]


def comm_d_to_cid(comm_d: bytes) -> str:
    """comm_d as a "baga6ea4sea..." CID."""
    return commitment_to_cid(comm_d, UNSEALED)


def comm_r_to_cid(comm_r: bytes) -> str:
    """comm_r as a "bagboea4b5abc..." CID."""
    return commitment_to_cid(comm_r, SEALED)


def cid_to_comm_d(cid: str) -> bytes:
    """comm_d from its CID (refused if the CID is not an unsealed-commitment CID)."""
    return cid_to_commitment(cid, UNSEALED)


def cid_to_comm_r(cid: str) -> bytes:
    """comm_r from its CID (refused if the CID is not a sealed-commitment CID)."""
    return cid_to_commitment(cid, SEALED)
