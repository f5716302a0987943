"""Pure-Python BN254 (alt_bn128, circom's "bn128") groups over Python ints: the oracle for the
BN254 kernels and the host-side tail of the BN254 MSM (cuda/msm.py combines its window sums with
``xyzz_add`` / ``xyzz_dbl`` here, where BLS12-381 uses arkworks).

Fp elements are ints, Fp2 = Fp[u]/(u^2 + 1) elements ``(c0, c1)``, all standard form. Points:
affine ``(x, y)`` or None for infinity; XYZZ ``(X, Y, ZZ, ZZZ)`` (x = X/ZZ, y = Y/ZZZ), infinity
when ZZ = 0: the same formulas as ec/xyzz.cuh (EFD shortw/xyzz add-2008-s, dbl-2008-s-1).
G1: y^2 = x^3 + 3 over Fp, generator (1, 2). G2: y^2 = x^3 + 3/(9 + u) over Fp2 (the D-type twist),
generator of EIP-197. Both generators are checked to lie on their curves when the module loads.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

P = 21888242871839275222246405745257275088696311157297823662689037894645226208583  # Fp modulus
R = 21888242871839275222246405745257275088548364400416034343698204186575808495617  # Fr modulus
FR_TWO_ADICITY = 28  # r - 1 = 2^28 t, t odd
FR_NQR = 5  # the least quadratic non-residue of Fr: ffjavascript (snarkjs) takes its roots from it


def snarkjs_root(n: int) -> int:
    """The primitive n-th root of unity of Fr that snarkjs uses for a domain of size n = 2^k
    (ffjavascript F1Field: w[28] = 5^t, w[k] = w[k + 1]^2)."""
    k = n.bit_length() - 1
    if n != 1 << k or k > FR_TWO_ADICITY:
        raise ValueError(f"snarkjs_root: {n} is not a power of two up to 2^{FR_TWO_ADICITY}")
    return pow(FR_NQR, (R - 1) >> k, R)


class Fp:
    """The base field's operations on ints (the same interface as Fp2)."""

    zero, one = 0, 1

    @staticmethod
    def add(a, b):
        return (a + b) % P

    @staticmethod
    def sub(a, b):
        return (a - b) % P

    @staticmethod
    def mul(a, b):
        return a * b % P

    @staticmethod
    def inv(a):
        return pow(a, -1, P)

    @staticmethod
    def is_zero(a) -> bool:
        return a % P == 0


class Fp2:
    """Fp[u]/(u^2 + 1) on (c0, c1) pairs."""

    zero, one = (0, 0), (1, 0)

    @staticmethod
    def add(a, b):
        return (a[0] + b[0]) % P, (a[1] + b[1]) % P

    @staticmethod
    def sub(a, b):
        return (a[0] - b[0]) % P, (a[1] - b[1]) % P

    @staticmethod
    def mul(a, b):
        return (a[0] * b[0] - a[1] * b[1]) % P, (a[0] * b[1] + a[1] * b[0]) % P

    @staticmethod
    def inv(a):
        t = pow(a[0] * a[0] + a[1] * a[1], -1, P)
        return a[0] * t % P, -a[1] * t % P

    @staticmethod
    def is_zero(a) -> bool:
        return a[0] % P == 0 and a[1] % P == 0


@dataclass(frozen=True)
class Group:
    """y^2 = x^3 + b over the field F (Fp or Fp2), a = 0, with affine and XYZZ arithmetic."""

    name: str
    F: type
    b: object
    gen: tuple

    @property
    def inf_xyzz(self) -> tuple:
        z = self.F.zero
        return z, z, z, z

    def on_curve(self, p) -> bool:
        F = self.F
        if p is None:
            return True
        x, y = p
        return F.is_zero(F.sub(F.mul(y, y), F.add(F.mul(F.mul(x, x), x), self.b)))

    def neg(self, p):
        return None if p is None else (p[0], self.F.sub(self.F.zero, p[1]))

    def affine_add(self, p, q):
        """Textbook affine addition (None = infinity)."""
        F = self.F
        if p is None:
            return q
        if q is None:
            return p
        (x1, y1), (x2, y2) = p, q
        if x1 == x2:
            if F.is_zero(F.add(y1, y2)):
                return None
            xx = F.mul(x1, x1)
            lam = F.mul(F.add(F.add(xx, xx), xx), F.inv(F.add(y1, y1)))
        else:
            lam = F.mul(F.sub(y2, y1), F.inv(F.sub(x2, x1)))
        x3 = F.sub(F.sub(F.mul(lam, lam), x1), x2)
        return x3, F.sub(F.mul(lam, F.sub(x1, x3)), y1)

    def mul(self, k: int, p):
        """k * p by double-and-add on affine points (slow, obviously right)."""
        acc, addend = None, p
        while k:
            if k & 1:
                acc = self.affine_add(acc, addend)
            addend = self.affine_add(addend, addend)
            k >>= 1
        return acc

    def msm_naive(self, scalars, points):
        """sum_i s_i P_i by affine double-and-add."""
        acc = None
        for s, p in zip(scalars, points):
            acc = self.affine_add(acc, self.mul(int(s), p))
        return acc

    def xyzz_dbl(self, p):
        F = self.F
        X1, Y1, ZZ1, ZZZ1 = p
        if F.is_zero(ZZ1):
            return self.inf_xyzz
        U = F.add(Y1, Y1)
        V = F.mul(U, U)
        W = F.mul(U, V)
        S = F.mul(X1, V)
        XX = F.mul(X1, X1)
        M = F.add(F.add(XX, XX), XX)
        X3 = F.sub(F.mul(M, M), F.add(S, S))
        Y3 = F.sub(F.mul(M, F.sub(S, X3)), F.mul(W, Y1))
        return X3, Y3, F.mul(V, ZZ1), F.mul(W, ZZZ1)

    def xyzz_add(self, p, q):
        F = self.F
        X1, Y1, ZZ1, ZZZ1 = p
        X2, Y2, ZZ2, ZZZ2 = q
        if F.is_zero(ZZ1):
            return q
        if F.is_zero(ZZ2):
            return p
        U1, U2 = F.mul(X1, ZZ2), F.mul(X2, ZZ1)
        S1, S2 = F.mul(Y1, ZZZ2), F.mul(Y2, ZZZ1)
        PP_, RR = F.sub(U2, U1), F.sub(S2, S1)
        if F.is_zero(PP_):
            return self.xyzz_dbl(p) if F.is_zero(RR) else self.inf_xyzz
        PP = F.mul(PP_, PP_)
        PPP = F.mul(PP_, PP)
        Q = F.mul(U1, PP)
        X3 = F.sub(F.sub(F.mul(RR, RR), PPP), F.add(Q, Q))
        Y3 = F.sub(F.mul(RR, F.sub(Q, X3)), F.mul(S1, PPP))
        return X3, Y3, F.mul(F.mul(ZZ1, ZZ2), PP), F.mul(F.mul(ZZZ1, ZZZ2), PPP)

    def xyzz_to_affine(self, p):
        F = self.F
        if F.is_zero(p[2]):
            return None
        return F.mul(p[0], F.inv(p[2])), F.mul(p[1], F.inv(p[3]))

    def xyzz_to_affine_many(self, points: list) -> list:
        """[xyzz_to_affine(p) for p in points] (a few rows: one inversion each is cheap enough)."""
        return [self.xyzz_to_affine(p) for p in points]


XI = (9, 1)  # the twist's non-residue 9 + u
G1 = Group("g1", Fp, 3, (1, 2))
G2 = Group("g2", Fp2, Fp2.mul((3, 0), Fp2.inv(XI)), (
    (10857046999023057135944570762232829481370756359578518086990519993285655852781,
     11559732032986387107991004021392285783925812861821192530917403151452391805634),
    (8495653923123431417604973247489272438418190587263600148770280649306958101930,
     4082367875863433681332203403145435568316851327593401208105741076214120093531),
))
assert G1.on_curve(G1.gen) and G2.on_curve(G2.gen), "BN254 generators off their curves"
assert G2.b == (19485874751759354771024239261021720505790618469301721065564631296452457478373,
                266929791119991161246907387137283842545076965332900288569378510910307636690)


@dataclass(frozen=True)
class Domain:
    """The n-th roots of unity of BN254's Fr in snarkjs's convention: the fields of
    cuzk_ray.domain.Domain (BLS12-381's) that the device NTT reads."""

    n: int
    convention: str = "snarkjs"

    @property
    def log_n(self) -> int:
        return self.n.bit_length() - 1

    @property
    def omega(self) -> int:
        return snarkjs_root(self.n)

    @property
    def omega_inv(self) -> int:
        return pow(self.omega, -1, R)

    @property
    def n_inv(self) -> int:
        return pow(self.n, -1, R)

    @classmethod
    def of(cls, n: int) -> Domain:
        """The domain of size n (a power of two up to 2^FR_TWO_ADICITY; ValueError otherwise)."""
        snarkjs_root(n)
        return cls(n)


def ntt(values: list[int], omega: int) -> list[int]:
    """y_j = sum_i x_i omega^(ij) mod r by radix-2 decimation in time on numpy object arrays (n a
    power of two; n log n products, vectorised per stage)."""
    n = len(values)
    log_n = n.bit_length() - 1
    rev = [int(format(i, f"0{log_n}b")[::-1], 2) if log_n else 0 for i in range(n)]
    a = np.array([values[i] % R for i in rev], dtype=object)
    half = 1
    while half < n:
        w = pow(omega, n // (2 * half), R)
        tw = np.array([pow(w, j, R) for j in range(half)], dtype=object)
        blocks = a.reshape(-1, 2 * half)
        lo, hi = blocks[:, :half].copy(), blocks[:, half:] * tw % R
        blocks[:, :half], blocks[:, half:] = (lo + hi) % R, (lo - hi) % R
        a = blocks.reshape(-1)
        half *= 2
    return [int(v) for v in a]


def ntt_naive(values: list[int], omega: int) -> list[int]:
    """y_j = sum_i x_i omega^(ij) mod r: the O(n^2) definition, the NTT oracle."""
    n = len(values)
    return [sum(x * pow(omega, i * j % n, R) for i, x in enumerate(values)) % R for j in range(n)]
