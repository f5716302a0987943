"""Groth16 verification: e(A, B) = e(alpha, beta) e(sum x_i IC_i, gamma) e(C, delta).

``prepare`` turns a verifying key into arkworks points once (a PreparedVerifyingKey), so that
checking many proofs against one key (a Filecoin seal proof's partitions) converts it once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from py_arkworks_bls12381 import GT, G1Point, G2Point

from ..curve import g1_point_checked, g1_points, g2_point_checked, g2_points
from ..field import R_MOD
from ..ref.msm import msm_g1
from .keys import Proof, VerifyingKey


@dataclass(frozen=True)
class PreparedVerifyingKey:
    """A verifying key's points as arkworks points, ready for the pairing check."""

    alpha_g1: G1Point
    beta_g2: G2Point
    gamma_g2: G2Point
    delta_g2: G2Point
    ic: list

    @property
    def n_public(self) -> int:
        return len(self.ic) - 1


def prepare(vk: VerifyingKey) -> PreparedVerifyingKey:
    """The key's points converted once (no subgroup check: a key is trusted input, checked where
    it was read)."""
    (alpha,) = g1_points(vk.alpha_g1)
    beta, gamma, delta = g2_points(np.concatenate([vk.beta_g2, vk.gamma_g2, vk.delta_g2]))
    return PreparedVerifyingKey(alpha, beta, gamma, delta, g1_points(vk.ic))


def prepare_inputs(vk: VerifyingKey | PreparedVerifyingKey, public) -> G1Point:
    """IC_0 + sum x_i IC_i for the public inputs x_1..x_p (each must be in [0, r))."""
    public = [int(x) for x in public]
    if len(public) != vk.n_public:
        raise ValueError(f"verifier: {len(public)} public inputs given, the key expects {vk.n_public}")
    for i, x in enumerate(public):
        if not 0 <= x < R_MOD:
            raise ValueError(f"verifier: public input {i + 1} is not a field element (must be in [0, r))")
    ic = vk.ic if isinstance(vk, PreparedVerifyingKey) else g1_points(vk.ic)
    return msm_g1(ic, [1] + public)


def verify(vk: VerifyingKey | PreparedVerifyingKey, public, proof: Proof) -> bool:
    """True when the proof is valid for these public inputs. Proof points are checked to be on
    the curve and in the prime-order subgroup; a point that is not makes the proof invalid."""
    try:
        a, c, b = g1_point_checked(proof.a), g1_point_checked(proof.c), g2_point_checked(proof.b)
    except Exception:  # arkworks raises its own exception type for a point off the curve
        return False
    pvk = vk if isinstance(vk, PreparedVerifyingKey) else prepare(vk)
    acc = prepare_inputs(pvk, public)
    return GT.pairing_check([-a, pvk.alpha_g1, acc, c], [b, pvk.beta_g2, pvk.gamma_g2, pvk.delta_g2])
