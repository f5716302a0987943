"""Pure-Python BLS12-381 G1 arithmetic (Python ints, no arkworks): the oracle for the GPU MSM
and the host-side tail of it (combining per-window results).

Points: affine ``(x, y)`` tuples of ints in standard form, ``None`` for infinity; or XYZZ
``(X, Y, ZZ, ZZZ)`` with x = X/ZZ, y = Y/ZZZ (ZZ^3 = ZZZ^2), infinity when ZZ = 0. The curve is
y^2 = x^3 + 4. Formulas: EFD, shortw/xyzz (add-2008-s, madd-2008-s, dbl-2008-s-1).
"""

from __future__ import annotations

from ..field import Q_MOD as P

B = 4
# Same generator as cuzk_ray.curve.G1_GEN (kept here so this module needs no arkworks; a CPU
# test checks the two agree).
G1_GEN = (
    0x17F1D3A73197D7942695638C4FA9AC0FC3688C4F9774B905A14E3A3F171BAC586C55E83FF97A1AEFFB3AF00ADB22C6BB,
    0x08B3F481E3AAA0F1A09E30ED741D8AE4FCF5E095D5D00AF600DB18CB2C04B3EDD03CC744A2888AE40CAA232946C5E7E1,
)
INF_XYZZ = (0, 0, 0, 0)


def on_curve(p) -> bool:
    return p is None or (p[1] * p[1] - p[0] ** 3 - B) % P == 0


def affine_add(p, q):
    """Textbook affine addition (the plainest possible reference)."""
    if p is None:
        return q
    if q is None:
        return p
    (x1, y1), (x2, y2) = p, q
    if x1 == x2:
        if (y1 + y2) % P == 0:
            return None
        lam = 3 * x1 * x1 * pow(2 * y1, -1, P) % P
    else:
        lam = (y2 - y1) * pow(x2 - x1, -1, P) % P
    x3 = (lam * lam - x1 - x2) % P
    return x3, (lam * (x1 - x3) - y1) % P


def double_and_add(k: int, p, add):
    """k * p by double-and-add with the affine addition ``add`` (slow, obviously right; None is
    infinity). Shared by the G1 and G2 oracles."""
    acc, addend = None, p
    while k:
        if k & 1:
            acc = add(acc, addend)
        addend = add(addend, addend)
        k >>= 1
    return acc


def affine_mul(k: int, p):
    """k * p on affine G1 points."""
    return double_and_add(k, p, affine_add)


def msm_naive(scalars, points):
    """sum_i s_i P_i with affine arithmetic."""
    acc = None
    for s, p in zip(scalars, points):
        acc = affine_add(acc, affine_mul(int(s), p))
    return acc


# --------------------------------------------------------------------------------------- XYZZ


def xyzz_from_affine(p):
    return INF_XYZZ if p is None else (p[0], p[1], 1, 1)


def xyzz_to_affine(p):
    X, Y, ZZ, ZZZ = p
    if ZZ % P == 0:
        return None
    return X * pow(ZZ, -1, P) % P, Y * pow(ZZZ, -1, P) % P


def fp_inverses(vals: list[int]) -> list[int]:
    """The inverses mod P of the nonzero ``vals`` with one modular exponentiation for all of them
    (Montgomery's trick: 3 (n - 1) products; one pow(v, -1, P) costs ~70 us in CPython 3.11, the
    product ~0.3 us)."""
    prefix, acc = [], 1
    for v in vals:
        prefix.append(acc)
        acc = acc * v % P
    inv = pow(acc, -1, P)
    out = [0] * len(vals)
    for i in range(len(vals) - 1, -1, -1):
        out[i] = inv * prefix[i] % P
        inv = inv * vals[i] % P
    return out


def xyzz_to_affine_many(points: list) -> list:
    """[xyzz_to_affine(p) for p in points] (None for infinity) with one inversion for all."""
    live = [p for p in points if p[2] % P]
    invs = iter(fp_inverses([c for p in live for c in (p[2], p[3])]))
    return [None if p[2] % P == 0 else (p[0] * next(invs) % P, p[1] * next(invs) % P) for p in points]


def xyzz_dbl(p):
    X1, Y1, ZZ1, ZZZ1 = p
    if ZZ1 == 0:
        return INF_XYZZ
    U = 2 * Y1 % P
    V = U * U % P
    W = U * V % P
    S = X1 * V % P
    M = 3 * X1 * X1 % P
    X3 = (M * M - 2 * S) % P
    Y3 = (M * (S - X3) - W * Y1) % P
    return X3, Y3, V * ZZ1 % P, W * ZZZ1 % P


def xyzz_add(p, q):
    X1, Y1, ZZ1, ZZZ1 = p
    X2, Y2, ZZ2, ZZZ2 = q
    if ZZ1 == 0:
        return q
    if ZZ2 == 0:
        return p
    U1, U2 = X1 * ZZ2 % P, X2 * ZZ1 % P
    S1, S2 = Y1 * ZZZ2 % P, Y2 * ZZZ1 % P
    PP_, R = (U2 - U1) % P, (S2 - S1) % P
    if PP_ == 0:
        return xyzz_dbl(p) if R == 0 else INF_XYZZ
    PP = PP_ * PP_ % P
    PPP = PP_ * PP % P
    Q = U1 * PP % P
    X3 = (R * R - PPP - 2 * Q) % P
    Y3 = (R * (Q - X3) - S1 * PPP) % P
    return X3, Y3, ZZ1 * ZZ2 % P * PP % P, ZZZ1 * ZZZ2 % P * PPP % P
