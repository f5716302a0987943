"""BLS12-381 G1/G2 affine point arrays and their bridge to py-arkworks-bls12381.

Layouts (standard form, DESIGN.md section 4): G1 affine ``uint64[n, 2, 6]`` (x, y); G2 affine
``uint64[n, 2, 2, 6]`` (x.c0, x.c1, y.c0, y.c1). The point at infinity is all zero.
These layouts are byte-for-byte py-arkworks' ``to_xy_bytes_le`` encoding, so converting an array
to arkworks points is a slice per point and no arithmetic.
"""

from __future__ import annotations

import numpy as np
from py_arkworks_bls12381 import G1Point, G2Point, Scalar

from .field import FP_LIMBS, Q_MOD, R_MOD

G1_BYTES = 2 * 8 * FP_LIMBS
G2_BYTES = 4 * 8 * FP_LIMBS

# Generators (standard form), from the BLS12-381 specification; tests check them against arkworks.
G1_GEN = (
    0x17F1D3A73197D7942695638C4FA9AC0FC3688C4F9774B905A14E3A3F171BAC586C55E83FF97A1AEFFB3AF00ADB22C6BB,
    0x08B3F481E3AAA0F1A09E30ED741D8AE4FCF5E095D5D00AF600DB18CB2C04B3EDD03CC744A2888AE40CAA232946C5E7E1,
)
G2_GEN = (
    0x024AA2B2F08F0A91260805272DC51051C6E47AD4FA403B02B4510B647AE3D1770BAC0326A805BBEFD48056C8C121BDB8,
    0x13E02B6052719F607DACD3A088274F65596BD0D09920B61AB5DA61BBDC7F5049334CF11213945D57E5AC7D055D042B7E,
    0x0CE5D527727D6E118CC9CDC6DA2E351AADFD9BAA8CBDD3A76D429A695160D12C923AC9CC3BACA289E193548608B82801,
    0x0606C4A02EA734CC32ACD2B02BC28B99CB3E287E85A763AF267492AB572E99AB3F370D275CEC1DA1AAA9075FF05F79BE,
)


def _points_from_array(arr: np.ndarray, cls, width: int) -> list:
    raw = np.ascontiguousarray(arr, dtype="<u8").tobytes()
    make = cls.from_xy_bytes_unchecked_le
    return [make(raw[i : i + width]) for i in range(0, len(raw), width)]


def g1_points(arr: np.ndarray) -> list[G1Point]:
    """``uint64[n, 2, 6]`` -> arkworks G1 points (no subgroup check: keys are trusted input)."""
    return _points_from_array(arr, G1Point, G1_BYTES)


def g2_points(arr: np.ndarray) -> list[G2Point]:
    """``uint64[n, 2, 2, 6]`` -> arkworks G2 points (no subgroup check)."""
    return _points_from_array(arr, G2Point, G2_BYTES)


def g1_array(points) -> np.ndarray:
    """arkworks G1 points -> ``uint64[n, 2, 6]`` (standard form, infinity all zero)."""
    buf = bytearray(b"".join(p.to_xy_bytes_le() for p in points))
    return np.frombuffer(buf, dtype="<u8").reshape(-1, 2, FP_LIMBS)


def g2_array(points) -> np.ndarray:
    """arkworks G2 points -> ``uint64[n, 2, 2, 6]``."""
    buf = bytearray(b"".join(p.to_xy_bytes_le() for p in points))
    return np.frombuffer(buf, dtype="<u8").reshape(-1, 2, 2, FP_LIMBS)


def g1_coords(p: G1Point) -> tuple[int, int] | None:
    """Affine (x, y) of a G1 point as ints, or None for infinity."""
    raw = p.to_xy_bytes_le()
    if not any(raw):
        return None
    return int.from_bytes(raw[:48], "little"), int.from_bytes(raw[48:], "little")


def g2_coords(p: G2Point) -> tuple[int, int, int, int] | None:
    """Affine (x.c0, x.c1, y.c0, y.c1) of a G2 point as ints, or None for infinity."""
    raw = p.to_xy_bytes_le()
    if not any(raw):
        return None
    return tuple(int.from_bytes(raw[i : i + 48], "little") for i in range(0, 192, 48))


def g1_from_coords(x: int, y: int) -> G1Point:
    """G1 point from affine ints, checked to lie on the curve and in the subgroup."""
    if x == 0 and y == 0:
        return G1Point.identity()
    return G1Point.from_xy_bytes_le(x.to_bytes(48, "little") + y.to_bytes(48, "little"))


def g2_from_coords(x0: int, x1: int, y0: int, y1: int) -> G2Point:
    if not (x0 or x1 or y0 or y1):
        return G2Point.identity()
    return G2Point.from_xy_bytes_le(b"".join(v.to_bytes(48, "little") for v in (x0, x1, y0, y1)))


def scalars(values) -> list[Scalar]:
    """Fr ints (reduced) or standard-form ``uint64[n, 4]`` limbs -> arkworks scalars."""
    if isinstance(values, np.ndarray) and values.dtype == np.uint64:
        raw = np.ascontiguousarray(values, dtype="<u8").tobytes()
        return [Scalar.from_le_bytes(raw[i : i + 32]) for i in range(0, len(raw), 32)]
    return [Scalar.from_le_bytes(int(v).to_bytes(32, "little")) for v in values]




__all__ = [
    "G1_GEN", "G2_GEN", "Q_MOD", "R_MOD", "g1_points", "g2_points", "g1_array", "g2_array",
    "g1_coords", "g2_coords", "g1_from_coords", "g2_from_coords", "scalars", "first_invalid_point",
]


def g1_point_checked(arr: np.ndarray) -> G1Point:
    """One G1 point from a ``uint64[1, 2, 6]`` (or ``[2, 6]``) array, checked on curve and in the
    subgroup (arkworks raises on a bad point). For untrusted input such as proofs."""
    raw = np.ascontiguousarray(arr, dtype="<u8").reshape(-1).tobytes()
    return G1Point.from_xy_bytes_le(raw) if any(raw) else G1Point.identity()


def g2_point_checked(arr: np.ndarray) -> G2Point:
    raw = np.ascontiguousarray(arr, dtype="<u8").reshape(-1).tobytes()
    return G2Point.from_xy_bytes_le(raw) if any(raw) else G2Point.identity()


def first_invalid_point(arr: np.ndarray, chunk: int = 1 << 16) -> tuple[int, str] | None:
    """(index, reason) of the first point of a standard-form G1 ``uint64[n, 2, 6]`` or G2
    ``uint64[n, 2, 2, 6]`` array that is off the curve or outside the subgroup of order r; None
    when every point is valid (infinity, all zero, is). For keys read from files (zkeys): a point
    of the wrong order would not fail until a proof does not verify, blaming the witness.

    Through arkworks' checked constructor: its on-curve test and its subgroup test (ark-bls12-381's
    endomorphism tests; the timings fit them: about a 128-bit scalar multiplication per point,
    not a 255-bit multiplication by r). Measured on one
    shared core: ~65 us per G1 point, ~125 us per G2 point, the Python loop's share small (the
    unchecked constructor takes ~1 us). The constructor holds the GIL, so threads do not help.
    """
    g2 = arr.ndim == 4
    cls, width = (G2Point, G2_BYTES) if g2 else (G1Point, G1_BYTES)
    flat = np.ascontiguousarray(arr, dtype="<u8").reshape(len(arr), -1)
    make = cls.from_xy_bytes_le
    for lo in range(0, len(flat), chunk):  # a chunk's bytes at a time: no copy of a whole query
        part = flat[lo : lo + chunk]
        raw = part.tobytes()
        for i in np.flatnonzero(part.any(axis=1)).tolist():  # infinity (all zero) needs no check
            try:
                make(raw[i * width : (i + 1) * width])
            except ValueError as e:
                return lo + i, str(e)
    return None
