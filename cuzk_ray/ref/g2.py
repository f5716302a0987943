"""Pure-Python BLS12-381 G2 arithmetic (Python ints, no arkworks): the oracle for the GPU G2
kernels and the host-side tail of the G2 MSM (combining per-window results), as ref/g1.py is for G1.

Fp2 = Fp[u]/(u^2 + 1), elements ``(c0, c1)`` of standard-form ints. Points: affine
``((x0, x1), (y0, y1))``, ``None`` for infinity; or XYZZ ``(X, Y, ZZ, ZZZ)`` of Fp2 elements with
x = X/ZZ, y = Y/ZZZ, infinity when ZZ = 0. The curve is the twist y^2 = x^3 + 4(u + 1).
Formulas: EFD, shortw/xyzz (add-2008-s, dbl-2008-s-1), the same as ec/xyzz.cuh.
"""

from __future__ import annotations

from ..field import Q_MOD as P
from .g1 import double_and_add, fp_inverses

ZERO, ONE = (0, 0), (1, 0)
B = (4, 4)  # 4 (u + 1)
# Same generator as cuzk_ray.curve.G2_GEN (x.c0, x.c1, y.c0, y.c1); a CPU test checks they agree.
G2_GEN = (
    (0x024AA2B2F08F0A91260805272DC51051C6E47AD4FA403B02B4510B647AE3D1770BAC0326A805BBEFD48056C8C121BDB8,
     0x13E02B6052719F607DACD3A088274F65596BD0D09920B61AB5DA61BBDC7F5049334CF11213945D57E5AC7D055D042B7E),
    (0x0CE5D527727D6E118CC9CDC6DA2E351AADFD9BAA8CBDD3A76D429A695160D12C923AC9CC3BACA289E193548608B82801,
     0x0606C4A02EA734CC32ACD2B02BC28B99CB3E287E85A763AF267492AB572E99AB3F370D275CEC1DA1AAA9075FF05F79BE),
)
INF_XYZZ = (ZERO, ZERO, ZERO, ZERO)


def add(a, b):
    return (a[0] + b[0]) % P, (a[1] + b[1]) % P


def sub(a, b):
    return (a[0] - b[0]) % P, (a[1] - b[1]) % P


def neg(a):
    return (-a[0]) % P, (-a[1]) % P


def mul(a, b):
    return (a[0] * b[0] - a[1] * b[1]) % P, (a[0] * b[1] + a[1] * b[0]) % P


def sqr(a):
    return mul(a, a)


def small(k: int, a):
    return k * a[0] % P, k * a[1] % P


def inv(a):
    t = pow(a[0] * a[0] + a[1] * a[1], -1, P)
    return a[0] * t % P, -a[1] * t % P


def is_zero(a) -> bool:
    return a[0] % P == 0 and a[1] % P == 0


def on_curve(p) -> bool:
    return p is None or is_zero(sub(sqr(p[1]), add(mul(sqr(p[0]), p[0]), B)))


def affine_add(p, q):
    """Textbook affine addition (the plainest possible reference)."""
    if p is None:
        return q
    if q is None:
        return p
    (x1, y1), (x2, y2) = p, q
    if x1 == x2:
        if is_zero(add(y1, y2)):
            return None
        lam = mul(small(3, sqr(x1)), inv(small(2, y1)))
    else:
        lam = mul(sub(y2, y1), inv(sub(x2, x1)))
    x3 = sub(sub(sqr(lam), x1), x2)
    return x3, sub(mul(lam, sub(x1, x3)), y1)


def affine_neg(p):
    return None if p is None else (p[0], neg(p[1]))


def affine_mul(k: int, p):
    """k * p on affine G2 points (double-and-add, as the G1 oracle)."""
    return double_and_add(k, p, affine_add)


# --------------------------------------------------------------------------------------- XYZZ


def xyzz_from_affine(p):
    return INF_XYZZ if p is None else (p[0], p[1], ONE, ONE)


def xyzz_to_affine(p):
    X, Y, ZZ, ZZZ = p
    if is_zero(ZZ):
        return None
    return mul(X, inv(ZZ)), mul(Y, inv(ZZZ))


def xyzz_to_affine_many(points: list) -> list:
    """[xyzz_to_affine(p) for p in points] (None for infinity) with one Fp inversion for all: the
    inverse of a in Fp2 is conj(a) / norm(a), norm(a) = a0^2 + a1^2 in Fp, and the norms are
    inverted together (ref.g1.fp_inverses)."""
    live = [p for p in points if not is_zero(p[2])]
    norms = iter(fp_inverses([(c[0] * c[0] + c[1] * c[1]) % P for p in live for c in (p[2], p[3])]))

    def over(v, c):  # v / c, with next(norms) = 1 / norm(c)
        t = next(norms)
        return mul(v, (c[0] * t % P, -c[1] * t % P))

    return [None if is_zero(p[2]) else (over(p[0], p[2]), over(p[1], p[3])) for p in points]


def xyzz_dbl(p):
    X1, Y1, ZZ1, ZZZ1 = p
    if is_zero(ZZ1):
        return INF_XYZZ
    U = small(2, Y1)
    V = sqr(U)
    W = mul(U, V)
    S = mul(X1, V)
    M = small(3, sqr(X1))
    X3 = sub(sqr(M), small(2, S))
    Y3 = sub(mul(M, sub(S, X3)), mul(W, Y1))
    return X3, Y3, mul(V, ZZ1), mul(W, ZZZ1)


def xyzz_add(p, q):
    X1, Y1, ZZ1, ZZZ1 = p
    X2, Y2, ZZ2, ZZZ2 = q
    if is_zero(ZZ1):
        return q
    if is_zero(ZZ2):
        return p
    U1, U2 = mul(X1, ZZ2), mul(X2, ZZ1)
    S1, S2 = mul(Y1, ZZZ2), mul(Y2, ZZZ1)
    PP_, R = sub(U2, U1), sub(S2, S1)
    if is_zero(PP_):
        return xyzz_dbl(p) if is_zero(R) else INF_XYZZ
    PP = sqr(PP_)
    PPP = mul(PP_, PP)
    Q = mul(U1, PP)
    X3 = sub(sub(sqr(R), PPP), small(2, Q))
    Y3 = sub(mul(R, sub(Q, X3)), mul(S1, PPP))
    return X3, Y3, mul(mul(ZZ1, ZZ2), PP), mul(mul(ZZZ1, ZZZ2), PPP)
