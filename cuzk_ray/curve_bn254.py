"""BN254 G1/G2 affine point arrays and their bridge to the Python-int points of ref/bn254.py.

Layouts (standard form, as cuzk_ray.curve's for BLS12-381 with 4-limb coordinates): G1 affine
``uint64[n, 2, 4]`` (x, y); G2 affine ``uint64[n, 2, 2, 4]`` (x.c0, x.c1, y.c0, y.c1); the
point at infinity all zero. ``Bn254Point`` gives the points the operators the prover's assembly
uses on arkworks points (+, -, negation, multiplication by an int). A key's queries become
``g1_bases`` / ``g2_bases`` (fast/bn254_msm.py's numba MSM); msm_g1 / msm_g2 take those or a list
of points (the verifier's few public inputs: Python ints).
"""

from __future__ import annotations

import numpy as np

from .curves import BN254
from .field import FrVector, ints_to_limbs, limbs_to_ints
from .ref import bn254 as ref
from .ref import bn254_xyzz

FP_LIMBS = BN254.fp_limbs


class Bn254Point:
    """A G1 or G2 point of BN254 (affine; ``pt`` None is infinity) with group operators."""

    __slots__ = ("pt", "ops")

    def __init__(self, pt, ops):
        self.pt, self.ops = pt, ops

    def __add__(self, other: Bn254Point) -> Bn254Point:
        return Bn254Point(ref.add(self.pt, other.pt, self.ops), self.ops)

    def __neg__(self) -> Bn254Point:
        return Bn254Point(ref.neg(self.pt, self.ops), self.ops)

    def __sub__(self, other: Bn254Point) -> Bn254Point:
        return self + (-other)

    def __mul__(self, k: int) -> Bn254Point:
        return Bn254Point(mul_xyzz(self.pt, int(k), self.ops), self.ops)

    def __eq__(self, other) -> bool:
        return isinstance(other, Bn254Point) and self.pt == other.pt and self.ops is other.ops

    def __hash__(self) -> int:
        return hash(self.pt)

    def __repr__(self) -> str:
        return f"Bn254Point({self.pt})"


def mul_xyzz(pt, k: int, ops):
    """k * pt (k reduced mod r, as ref.bn254.mul, whose result this is) by double-and-add in XYZZ
    coordinates: one inversion at the end instead of one per step (~8x faster than the affine
    ladder; the prover's assembly does five such products a proof)."""
    group = bn254_xyzz.G1 if ops is ref.G1_OPS else bn254_xyzz.G2
    k %= ref.R
    if pt is None or k == 0:
        return None
    base, acc = group.from_affine(pt), group.inf_xyzz
    for bit in bin(k)[2:]:
        acc = group.xyzz_dbl(acc)
        if bit == "1":
            acc = group.xyzz_add(acc, base)
    return group.xyzz_to_affine(acc)


def _is_g2(arr: np.ndarray) -> bool:
    return arr.ndim == 4


def _affine(ints: list, g2: bool):
    """One point from its coordinate ints (all zero: infinity)."""
    if not any(ints):
        return None
    return ((ints[0], ints[1]), (ints[2], ints[3])) if g2 else (ints[0], ints[1])


def points(arr: np.ndarray) -> list[Bn254Point]:
    """``uint64[n, 2, 4]`` or ``uint64[n, 2, 2, 4]`` -> points (not checked: keys are trusted input)."""
    g2 = _is_g2(arr)
    width = 4 if g2 else 2
    ops = ref.G2_OPS if g2 else ref.G1_OPS
    ints = limbs_to_ints(np.ascontiguousarray(arr).reshape(-1, FP_LIMBS)).tolist()
    return [Bn254Point(_affine(ints[i : i + width], g2), ops) for i in range(0, len(ints), width)]


def array(pts, g2: bool) -> np.ndarray:
    """points -> ``uint64[n, 2, 4]`` (G1) or ``uint64[n, 2, 2, 4]`` (G2), infinity all zero."""
    ints = []
    for p in pts:
        pt = p.pt if isinstance(p, Bn254Point) else p
        if pt is None:
            ints += [0] * (4 if g2 else 2)
        else:
            ints += [*pt[0], *pt[1]] if g2 else list(pt)
    return ints_to_limbs(ints, FP_LIMBS).reshape((-1, 2, 2, FP_LIMBS) if g2 else (-1, 2, FP_LIMBS))


def g1_array(pts) -> np.ndarray:
    return array(pts, g2=False)


def g2_array(pts) -> np.ndarray:
    return array(pts, g2=True)


def coords(p: Bn254Point) -> tuple | None:
    """Affine coordinates as a flat tuple of ints ((x, y) or (x0, x1, y0, y1)), None for infinity."""
    if p.pt is None:
        return None
    return (*p.pt[0], *p.pt[1]) if p.ops is ref.G2_OPS else tuple(p.pt)


def point_checked(arr: np.ndarray) -> Bn254Point:
    """One point from a 1-point array, checked on the curve and in the subgroup of order r
    (ValueError otherwise): for untrusted input such as proofs."""
    (p,) = points(np.asarray(arr).reshape((1,) + np.asarray(arr).shape[-(3 if _is_g2(np.asarray(arr)) else 2):]))
    reason = invalid_reason(p)
    if reason:
        raise ValueError(f"point {reason}")
    return p


def invalid_reason(p: Bn254Point) -> str | None:
    """Why a point is not in G1 / G2 ("is not on the curve", "is not in the subgroup"), or None."""
    if p.pt is None:
        return None
    if not ref.on_curve(p.pt, p.ops):
        return "is not on the curve"
    if p.ops is ref.G2_OPS and not ref.in_g2(p.pt):
        return "is not in the subgroup of order r"
    return None  # G1: the cofactor is 1


FAST_CHECK_MIN_POINTS = 1024  # from here fast/bn254_msm.first_invalid (numba), below it Python ints


def first_invalid_point(arr: np.ndarray) -> tuple[int, str] | None:
    """(index, reason) of the first point of a G1 / G2 array off the curve or outside the subgroup,
    None when all are valid. G1: an on-curve test (cofactor 1). G2: the psi test of ref/bn254.in_g2,
    ~2 ms per point in Python ints, ~0.2 ms in numba (used from FAST_CHECK_MIN_POINTS points: a
    2^16 zkey's B2 in seconds instead of minutes; paid once, the conversion is cached)."""
    if len(arr) >= FAST_CHECK_MIN_POINTS:
        from .fast.bn254_msm import first_invalid

        return first_invalid(np.asarray(arr))
    nz = np.flatnonzero(np.asarray(arr).reshape(len(arr), -1).any(axis=1))
    for i in nz.tolist():
        reason = invalid_reason(points(arr[i : i + 1])[0])
        if reason:
            return i, f"point {reason}"
    return None


def scalar_ints(values) -> list[int]:
    """Scalars (ints, FrVector or standard-form ``uint64[n, 4]``) as ints."""
    if isinstance(values, FrVector):
        values = np.asarray(values.limbs)
    if isinstance(values, np.ndarray) and values.dtype == np.uint64:
        return limbs_to_ints(values).tolist()
    return [int(v) for v in values]


def g1_bases(arr: np.ndarray):
    """A key's G1 query as numba MSM bases (imports numba: only the prover needs it)."""
    from .fast.bn254_msm import MsmBases

    return MsmBases.g1(arr)


def g2_bases(arr: np.ndarray):
    from .fast.bn254_msm import MsmBases

    return MsmBases.g2(arr)


def _msm(bases, scalars, start: int | None, ops) -> Bn254Point:
    if not isinstance(bases, list):  # fast/bn254_msm.MsmBases
        return Bn254Point(bases.msm(scalars, start), ops)
    if start is None:
        if len(scalars) != len(bases):
            raise ValueError(f"MSM: {len(bases)} bases but {len(scalars)} scalars")
        start = 0
    elif start < 0 or start + len(scalars) > len(bases):
        raise ValueError(f"MSM: {len(scalars)} scalars from base {start} but {len(bases)} bases")
    ks = scalar_ints(scalars)
    acc = None  # ref.msm's sum, each product by the XYZZ ladder (the verifier's public inputs)
    for i, k in enumerate(ks):
        acc = ref.add(acc, mul_xyzz(bases[start + i].pt, k, ops), ops)
    return Bn254Point(acc, ops)


def msm_g1(bases, scalars, start: int | None = None) -> Bn254Point:
    """sum_i s_i * P_(start+i) in G1 (see ref/msm.py's msm_g1 for start); bases: a list of points
    or g1_bases' MSM bases."""
    return _msm(bases, scalars, start, ref.G1_OPS)


def msm_g2(bases, scalars, start: int | None = None) -> Bn254Point:
    return _msm(bases, scalars, start, ref.G2_OPS)


def pairing_check(g1s: list[Bn254Point], g2s: list[Bn254Point]) -> bool:
    """prod e(g1s[k], g2s[k]) == 1."""
    return ref.pairing_check([(a.pt, b.pt) for a, b in zip(g1s, g2s)])


def alphabeta_tower(alpha: Bn254Point, beta: Bn254Point) -> list:
    """e(alpha, beta) as snarkjs's vk_alphabeta_12 nesting of ints."""
    return ref.gt_tower(ref.pairing(alpha.pt, beta.pt))
