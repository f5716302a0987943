"""eigerco/polka-storage's compressed verifying-key layout, so its published 2 KiB PoRep vector reads.

polka-storage keeps bellperson's VerifyingKey fields in bellperson's order but every point
compressed (``lib/polka-storage-proofs/src/groth16/mod.rs``, ``VerifyingKey::from_bytes``):
alpha_g1 (48), beta_g1 (48), beta_g2 (96), gamma_g2 (96), delta_g1 (48), delta_g2 (96), ``u32``
big-endian ic_len, then ic_len compressed G1 points; the buffer ends there. Its proofs are the
standard 192 bytes (proofs.py). 2,356 bytes for its 2 KiB PoRep key (40 IC points).
"""

from __future__ import annotations

import struct

from .params import VK_POINTS, BellpersonVerifyingKey, ParamsError
from .points import G1, PointError, Where, decode


def vk_from_polka_bytes(data: bytes, source: str = "polka-storage vk", check: bool = True) -> BellpersonVerifyingKey:
    """A verifying key from polka-storage's compressed layout; ParamsError naming the field and
    byte offset when the buffer is short, ic_len disagrees with its length, or a point is bad."""
    pos, out = 0, {}
    for name, g in VK_POINTS:
        out[name] = _decode(data, pos, 1, g, check, f"{source}: {name}")
        pos += g.compressed_size
    if pos + 4 > len(data):
        raise ParamsError(f"{source}: ic_len at byte {pos}: the buffer ends at byte {len(data)} (truncated)")
    (ic_len,) = struct.unpack_from(">I", data, pos)
    pos += 4
    if ic_len == 0 or pos + ic_len * G1.compressed_size != len(data):
        raise ParamsError(f"{source}: ic_len {ic_len} at byte {pos - 4} needs {pos + ic_len * G1.compressed_size} "
                          f"bytes in all (at least one IC point), the buffer has {len(data)}")
    out["ic"] = _decode(data, pos, ic_len, G1, check, f"{source}: ic")
    return BellpersonVerifyingKey(**out)


def _decode(data: bytes, pos: int, count: int, g, check: bool, what: str):
    chunk = data[pos : pos + count * g.compressed_size]
    if len(chunk) != count * g.compressed_size:
        raise ParamsError(f"{what}: needs {count * g.compressed_size} bytes at byte {pos}, the buffer ends at "
                          f"byte {len(data)} (truncated)")
    try:
        return decode(chunk, g, compressed=True, check=check, where=Where(what, pos))
    except PointError as e:
        raise ParamsError(str(e)) from None
