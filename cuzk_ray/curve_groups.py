"""The group operations of each curve behind one record (``Groups``), chosen by the key's curve.

BLS12-381: py-arkworks-bls12381 points (cuzk_ray.curve, ref/msm.py). BN254: Python-int points
(cuzk_ray.curve_bn254, ref/bn254.py) and, for a key's queries, numba MSM bases (fast/bn254_msm.py:
no maintained Python library has a fast BN254 MSM). The prover's assembly, the CPU backend, the verifier and the
snarkjs JSON writers take their points and operations from here, so they are written once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .curves import BLS12_381, BN254, Curve


@dataclass(frozen=True)
class Groups:
    """What the curve-agnostic code needs of a curve's G1, G2 and pairing."""

    curve: Curve
    g1_points: Callable  # uint64[n, 2, k] -> point objects (unchecked)
    g2_points: Callable
    g1_array: Callable  # point objects -> uint64[n, 2, k]
    g2_array: Callable
    g1_checked: Callable  # a 1-point array -> a point, ValueError-like exception when invalid
    g2_checked: Callable
    scalar: Callable  # int in [0, r) -> what a point multiplies by
    msm_g1: Callable  # (bases, scalars, start=None) -> point
    msm_g2: Callable
    pairing_check: Callable  # (g1 points, g2 points) -> prod e(a_k, b_k) == 1
    first_invalid_point: Callable  # point array -> (index, reason) | None
    g1_coords: Callable  # point -> (x, y) ints | None
    g2_coords: Callable  # point -> (x0, x1, y0, y1) ints | None
    alphabeta: Callable  # (alpha point, beta point) -> snarkjs's vk_alphabeta_12 nesting (strings)
    g1_bases: Callable  # uint64[n, 2, k] -> what msm_g1 takes for a key's queries (made once per key)
    g2_bases: Callable


def _bls12_381() -> Groups:
    from py_arkworks_bls12381 import GT, Scalar

    from . import curve as c
    from .ref import msm

    def alphabeta(alpha, beta) -> list:
        # arkworks serializes GT as snarkjs's tower, 12 little-endian 48-byte Fp values
        raw = bytes.fromhex(str(GT.pairing(alpha, beta)))
        fp = [str(int.from_bytes(raw[i : i + 48], "little")) for i in range(0, 576, 48)]
        return [[[fp[6 * h + 2 * k], fp[6 * h + 2 * k + 1]] for k in range(3)] for h in range(2)]

    return Groups(BLS12_381, c.g1_points, c.g2_points, c.g1_array, c.g2_array, c.g1_point_checked,
                  c.g2_point_checked, Scalar, msm.msm_g1, msm.msm_g2, GT.pairing_check,
                  c.first_invalid_point, c.g1_coords, c.g2_coords, alphabeta, c.g1_points, c.g2_points)


def _bn254() -> Groups:
    from . import curve_bn254 as c

    def alphabeta(alpha, beta) -> list:
        return [[[str(v) for v in fp2] for fp2 in half] for half in c.alphabeta_tower(alpha, beta)]

    return Groups(BN254, c.points, c.points, c.g1_array, c.g2_array, c.point_checked, c.point_checked,
                  int, c.msm_g1, c.msm_g2, c.pairing_check, c.first_invalid_point, c.coords, c.coords,
                  alphabeta, c.g1_bases, c.g2_bases)


_MAKERS = {BLS12_381.name: _bls12_381, BN254.name: _bn254}
_CACHE: dict[str, Groups] = {}


def groups_for(curve: Curve | str) -> Groups:
    """The Groups of a curve (a Curve or its name), made once per process."""
    name = curve if isinstance(curve, str) else curve.name
    if name not in _CACHE:
        try:
            _CACHE[name] = _MAKERS[name]()
        except KeyError:
            raise ValueError(f"no group arithmetic for curve {name!r}") from None
    return _CACHE[name]


__all__ = ["Groups", "groups_for"]
