"""BLS12-381 points in the zcash/blstrs byte encoding that bellperson and Filecoin files use.

Encoding (zcash ``serialization.md``, as blstrs and bellperson write it):
- Coordinates are big-endian Fp, 48 bytes each. G2 coordinates are written ``c1 || c0``, so an
  uncompressed G2 point is ``x.c1 || x.c0 || y.c1 || y.c0`` (192 bytes) and a compressed one
  ``x.c1 || x.c0`` (96 bytes). G1: ``x || y`` (96 bytes) or ``x`` (48 bytes).
- The top three bits of byte 0 are flags: compression (0x80), infinity (0x40: every other bit
  zero), and, in a compressed point only, the sign of y (0x20: y is the larger of y and -y; for G2
  compare c1 first, c0 when c1 = 0).

In memory points are the project's standard-form limb arrays (cuzk_ray.curve): G1 ``uint64[n, 2, 6]``
(x, y), G2 ``uint64[n, 2, 2, 6]`` (x.c0, x.c1, y.c0, y.c1), infinity all zero. Uncompressed points
convert both ways with numpy alone (a byte reversal and a swap of c0/c1), so a query of millions of
points is one vectorized pass; the curve and subgroup check is optional there (``check=False`` for
bulk reads of a file already authenticated by its digest, as bellperson's unchecked reads). The
compressed form is for the few points of proofs and keys and takes a square root per point.

Every problem is a ``PointError`` whose one-line message names the source, the point's byte
offset and what is wrong (bad flags, a coordinate >= p, not on the curve, not in the subgroup).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from py_arkworks_bls12381 import G1Point, G2Point

from ..field import FP_BYTES, FP_LIMBS, Q_MOD, limbs_below
from ..ref import g2 as fp2

FLAG_COMPRESSED = 0x80
FLAG_INFINITY = 0x40
FLAG_SIGN = 0x20
FLAG_MASK = FLAG_COMPRESSED | FLAG_INFINITY | FLAG_SIGN
HALF_Q = (Q_MOD - 1) // 2  # y is "larger" (sign flag set) when y > (q - 1) / 2


class PointError(ValueError):
    """A point in a file or buffer is malformed, off the curve or outside the subgroup."""


@dataclass(frozen=True)
class Group:
    """One of the two groups: how many Fp coordinates a point has and its array shape."""

    name: str
    coords: int  # Fp elements of an affine point: 2 (G1) or 4 (G2)
    shape: tuple  # per-point array shape in the project's layout
    ark: type  # the arkworks point class

    @property
    def uncompressed_size(self) -> int:
        return self.coords * FP_BYTES

    @property
    def compressed_size(self) -> int:
        return self.coords * FP_BYTES // 2

    def size(self, compressed: bool) -> int:
        return self.compressed_size if compressed else self.uncompressed_size


G1 = Group("G1", 2, (2, FP_LIMBS), G1Point)
G2 = Group("G2", 4, (2, 2, FP_LIMBS), G2Point)


def group_of(points: np.ndarray) -> Group:
    """G1 or G2 from an array's shape (``[n, 2, 6]`` or ``[n, 2, 2, 6]``)."""
    for g in (G1, G2):
        if points.shape[1:] == g.shape:
            return g
    raise ValueError(f"points: shape {points.shape} is neither G1 [n, 2, 6] nor G2 [n, 2, 2, 6]")


def _file_order(le_bytes: np.ndarray, g: Group) -> np.ndarray:
    """uint8[n, coords, 48] between the project's coordinate order and the file's: G2 swaps c0
    and c1 of x and of y (an involution, so the same call goes both ways); G1 is unchanged."""
    if g is G2:
        return le_bytes.reshape(-1, 2, 2, FP_BYTES)[:, :, ::-1, :].reshape(le_bytes.shape)
    return le_bytes


def encode(points: np.ndarray, compressed: bool = False) -> np.ndarray:
    """``uint8[n, size]``: the zcash encoding of each point of a G1 or G2 array (size 96/192
    uncompressed, 48/96 compressed). Vectorized; compressed points take the sign of y per point."""
    g = group_of(points)
    n = len(points)
    le = np.ascontiguousarray(points, dtype="<u8").view(np.uint8).reshape(n, g.coords, FP_BYTES)
    be = _file_order(le, g)[:, :, ::-1]  # each coordinate big-endian, G2 as c1 || c0
    if compressed:
        be = be[:, : g.coords // 2]
    out = np.ascontiguousarray(be).reshape(n, g.size(compressed))
    infinity = ~points.reshape(n, -1).any(axis=1)
    out[infinity, 0] = FLAG_INFINITY | (FLAG_COMPRESSED if compressed else 0)
    if compressed:
        out[:, 0] |= FLAG_COMPRESSED
        out[~infinity & _y_is_larger(points, g), 0] |= FLAG_SIGN
    return out


def _y_is_larger(points: np.ndarray, g: Group) -> np.ndarray:
    """bool[n]: y > (q - 1) / 2, lexicographically (G2: c1 decides unless it is zero, then c0)."""
    n = len(points)
    y = points.reshape(n, 2, -1, FP_LIMBS)[:, 1]  # [n, 1 or 2, 6]: y (G1) or y.c0, y.c1 (G2)
    larger = ~limbs_below(y[:, -1], HALF_Q + 1)
    if g is G2:
        c1_zero = ~y[:, 1].any(axis=1)
        larger = np.where(c1_zero, ~limbs_below(y[:, 0], HALF_Q + 1), larger)
    return larger


@dataclass(frozen=True)
class Where:
    """Where encoded points came from, for error messages: a file name (or "proof", ...) and the
    byte offset of the first point in it."""

    source: str
    offset: int = 0

    def fail(self, g: Group, index: int, size: int, what: str) -> PointError:
        return PointError(f"{self.source}: {g.name} point {index} at byte {self.offset + index * size}: {what}")


def decode(data, g: Group, compressed: bool = False, check: bool = True, where: Where | None = None) -> np.ndarray:
    """The points of ``data`` (bytes, or ``uint8`` of n * size bytes) as a G1/G2 limb array.
    Flags, coordinates < q and (0, 0) without the infinity flag are always checked (vectorized);
    ``check`` adds the on-curve and subgroup checks (through arkworks; ~65 us per G1 point,
    ~125 us per G2 point). A compressed point is always on the curve (a square root is taken)."""
    where = where or Where("points")
    size = g.size(compressed)
    raw = np.frombuffer(data, dtype=np.uint8) if isinstance(data, (bytes, bytearray, memoryview)) else data
    if raw.size % size:
        raise PointError(f"{where.source}: {raw.size} bytes at byte {where.offset} is not a whole number of "
                         f"{g.name} points of {size} bytes")
    raw = raw.reshape(-1, size)
    infinity = _check_flags(raw, g, compressed, where)
    body = raw.copy()
    body[:, 0] &= ~np.uint8(FLAG_MASK)
    ncoord = g.coords // 2 if compressed else g.coords
    coords = body.reshape(-1, ncoord, FP_BYTES)[:, :, ::-1]  # each coordinate little-endian
    # compressed G2 holds x.c1 || x.c0 only: reversing the coordinates gives (x.c0, x.c1)
    le = coords[:, ::-1] if compressed else _file_order(coords, g)
    limbs = np.ascontiguousarray(le).view("<u8").reshape(len(raw), ncoord, FP_LIMBS)
    _check_below_q(limbs, g, size, where)
    if compressed:
        return _decompress(limbs, raw[:, 0], infinity, g, check, where)
    points = limbs.reshape(len(raw), *g.shape)
    zero = ~points.reshape(len(raw), -1).any(axis=1) & ~infinity
    if zero.any():
        raise where.fail(g, int(np.argmax(zero)), size,
                         "coordinates (0, 0) without the infinity flag: not on the curve")
    if check:
        check_points(points, where, size)
    return points


def _check_flags(raw: np.ndarray, g: Group, compressed: bool, where: Where) -> np.ndarray:
    """bool[n] of the points at infinity, after refusing a wrong compression flag, a sign flag on an
    uncompressed point or at infinity, and an infinity flag with nonzero bits elsewhere."""
    size = raw.shape[1]
    flags = raw[:, 0] & FLAG_MASK
    infinity = (flags & FLAG_INFINITY) != 0
    want = FLAG_COMPRESSED if compressed else 0
    rules = [
        ((flags & FLAG_COMPRESSED) != want,
         lambda f: f"flags 0x{f:02x}: compression flag {'not set' if compressed else 'set'}, "
                   f"expected {'a compressed' if compressed else 'an uncompressed'} point"),
        (((flags & FLAG_SIGN) != 0) & (infinity | (not compressed)),
         lambda f: f"flags 0x{f:02x}: sign flag set on "
                   f"{'a point at infinity' if f & FLAG_INFINITY else 'an uncompressed point'}"),
        (infinity & (((raw[:, 0] & ~np.uint8(FLAG_MASK)) != 0) | raw[:, 1:].any(axis=1)),
         lambda f: f"flags 0x{f:02x}: infinity flag set but the coordinates are not all zero"),
    ]
    for bad, say in rules:
        if bad.any():
            i = int(np.argmax(bad))
            raise where.fail(g, i, size, say(int(raw[i, 0])))
    return infinity


def _check_below_q(limbs: np.ndarray, g: Group, size: int, where: Where) -> None:
    """Every coordinate (G2: every c0 and c1) must be < q: a reader never reduces silently."""
    n, k = limbs.shape[:2]
    ok = limbs_below(limbs.reshape(n * k, FP_LIMBS), Q_MOD).reshape(n, k)
    if not ok.all():
        i, j = divmod(int(np.argmin(ok.reshape(-1))), k)
        names = ("x", "y") if g is G1 else ("x.c0", "x.c1", "y.c0", "y.c1")
        value = int.from_bytes(limbs[i, j].tobytes(), "little")
        raise where.fail(g, i, size, f"{names[j]} = 0x{value:x} is not below the field modulus q (need < q)")


def check_points(points: np.ndarray, where: Where, size: int | None = None) -> None:
    """Refuse the first point of a G1/G2 array that is off the curve or outside the subgroup of
    order r (infinity passes). ``size``: bytes per encoded point, for the offset in the message."""
    g = group_of(points)
    size = size or g.uncompressed_size
    flat = np.ascontiguousarray(points, dtype="<u8").reshape(len(points), -1)
    width = flat.shape[1] * 8
    raw = flat.tobytes()
    for i in np.flatnonzero(flat.any(axis=1)).tolist():
        try:
            p = g.ark.from_xy_bytes_unchecked_le(raw[i * width : (i + 1) * width])
        except ValueError:
            raise where.fail(g, i, size, "not on the curve") from None
        if not p.is_in_subgroup():
            raise where.fail(g, i, size, "on the curve but not in the subgroup of order r")


# ---------------------------------------------------------------------------------------------
# Compressed points: recover y from x with a square root (G1: q = 3 mod 4; G2: Fp2 = Fp[u]/(u^2+1)).

G1_B = 4


def _sqrt_fp(a: int) -> int | None:
    y = pow(a, (Q_MOD + 1) // 4, Q_MOD)
    return y if y * y % Q_MOD == a % Q_MOD else None


def _fp2_pow(a, e: int):
    out = fp2.ONE
    for bit in bin(e)[2:]:
        out = fp2.sqr(out)
        if bit == "1":
            out = fp2.mul(out, a)
    return out


def _sqrt_fp2(a) -> tuple | None:
    """A square root in Fp2 for q = 3 mod 4 (Adj and Rodriguez-Henriquez 2012, algorithm 9), or
    None when a is not a square. The result is checked by squaring it."""
    if fp2.is_zero(a):
        return fp2.ZERO
    a1 = _fp2_pow(a, (Q_MOD - 3) // 4)
    alpha = fp2.mul(fp2.sqr(a1), a)  # a^((q-1)/2)
    x0 = fp2.mul(a1, a)
    if alpha == (Q_MOD - 1, 0):
        x = (-x0[1] % Q_MOD, x0[0])  # u * x0
    else:
        x = fp2.mul(_fp2_pow(fp2.add(fp2.ONE, alpha), (Q_MOD - 1) // 2), x0)
    return x if fp2.sqr(x) == (a[0] % Q_MOD, a[1] % Q_MOD) else None


def _larger(v: int) -> bool:
    return v > HALF_Q


def _decompress_one(coords: list[int], sign: bool, g: Group) -> list[int] | None:
    """(x..., y...) in the project's coordinate order, or None when x is not on the curve."""
    if g is G1:
        (x,) = coords
        y = _sqrt_fp((x * x * x + G1_B) % Q_MOD)
        if y is None:
            return None
        return [x, Q_MOD - y if y and _larger(y) != sign else y]
    x = (coords[0], coords[1])
    y = _sqrt_fp2(fp2.add(fp2.mul(fp2.sqr(x), x), fp2.B))
    if y is None:
        return None
    larger = _larger(y[1]) if y[1] else _larger(y[0])
    if not fp2.is_zero(y) and larger != sign:
        y = fp2.neg(y)
    return [x[0], x[1], y[0], y[1]]


def _decompress(limbs: np.ndarray, byte0: np.ndarray, infinity: np.ndarray, g: Group, check: bool,
                where: Where) -> np.ndarray:
    n = len(limbs)
    size = g.compressed_size
    out = np.zeros((n, g.coords, FP_LIMBS), dtype=np.uint64)
    for i in np.flatnonzero(~infinity).tolist():
        coords = [int.from_bytes(limbs[i, j].tobytes(), "little") for j in range(limbs.shape[1])]
        point = _decompress_one(coords, bool(byte0[i] & FLAG_SIGN), g)
        if point is None:
            raise where.fail(g, i, size, "x is not the x-coordinate of a point on the curve")
        out[i] = np.frombuffer(b"".join(v.to_bytes(FP_BYTES, "little") for v in point), dtype="<u8").reshape(-1, 6)
    points = out.reshape(n, *g.shape)
    if check:
        check_points(points, where, size)
    return points
