"""BN254 points in XYZZ coordinates on Python ints: the host tail of the BN254 MSM (cuda/msm.py
combines the kernels' window sums with these, where BLS12-381 uses arkworks) and the formulas of
ec/xyzz.cuh written plainly (EFD shortw/xyzz: add-2008-s, dbl-2008-s-1; a = 0, so b never appears).

A point is ``(X, Y, ZZ, ZZZ)`` with x = X/ZZ, y = Y/ZZZ (ZZ^3 = ZZZ^2), infinity when ZZ = 0; the
coordinates are Fp ints (G1) or Fp2 pairs (G2), reduced, with ref.bn254's field operations
(G1_OPS / G2_OPS). Affine results are ref.bn254's points (None = infinity).
"""

from __future__ import annotations

from dataclasses import dataclass

from . import bn254


@dataclass(frozen=True)
class XyzzGroup:
    """XYZZ arithmetic over one group's coordinate field (``ops``: ref.bn254.G1_OPS or G2_OPS)."""

    name: str
    ops: object

    @property
    def inf_xyzz(self) -> tuple:
        z = self.ops.zero
        return z, z, z, z

    def from_affine(self, p) -> tuple:
        one = 1 if self.ops.zero == 0 else (1, 0)
        return self.inf_xyzz if p is None else (p[0], p[1], one, one)

    def xyzz_dbl(self, p) -> tuple:
        """2 p: 6M + 3S."""
        f = self.ops
        X1, Y1, ZZ1, ZZZ1 = p
        if ZZ1 == f.zero:
            return self.inf_xyzz
        U = f.add(Y1, Y1)
        V = f.sqr(U)
        W = f.mul(U, V)
        S = f.mul(X1, V)
        M = f.mul(f.three, f.sqr(X1))
        X3 = f.sub(f.sqr(M), f.add(S, S))
        Y3 = f.sub(f.mul(M, f.sub(S, X3)), f.mul(W, Y1))
        return X3, Y3, f.mul(V, ZZ1), f.mul(W, ZZZ1)

    def xyzz_add(self, p, q) -> tuple:
        """p + q: 12M + 2S (equal inputs double, opposite ones give infinity)."""
        f = self.ops
        X1, Y1, ZZ1, ZZZ1 = p
        X2, Y2, ZZ2, ZZZ2 = q
        if ZZ1 == f.zero:
            return q
        if ZZ2 == f.zero:
            return p
        U1, U2 = f.mul(X1, ZZ2), f.mul(X2, ZZ1)
        S1, S2 = f.mul(Y1, ZZZ2), f.mul(Y2, ZZZ1)
        P, R = f.sub(U2, U1), f.sub(S2, S1)
        if P == f.zero:
            return self.xyzz_dbl(p) if R == f.zero else self.inf_xyzz
        PP = f.sqr(P)
        PPP = f.mul(P, PP)
        Q = f.mul(U1, PP)
        X3 = f.sub(f.sub(f.sqr(R), PPP), f.add(Q, Q))
        Y3 = f.sub(f.mul(R, f.sub(Q, X3)), f.mul(S1, PPP))
        return X3, Y3, f.mul(f.mul(ZZ1, ZZ2), PP), f.mul(f.mul(ZZZ1, ZZZ2), PPP)

    def xyzz_to_affine(self, p):
        """(X / ZZ, Y / ZZZ), None for infinity."""
        f = self.ops
        if p[2] == f.zero:
            return None
        return f.mul(p[0], f.inv(p[2])), f.mul(p[1], f.inv(p[3]))

    def xyzz_to_affine_many(self, points: list) -> list:
        """[xyzz_to_affine(p) for p in points] (a few rows per MSM: an inversion each is cheap)."""
        return [self.xyzz_to_affine(p) for p in points]


G1 = XyzzGroup("g1", bn254.G1_OPS)
G2 = XyzzGroup("g2", bn254.G2_OPS)
