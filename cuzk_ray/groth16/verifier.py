"""Groth16 verification: e(A, B) = e(alpha, beta) e(sum x_i IC_i, gamma) e(C, delta).

``prepare`` turns a verifying key into arkworks points once (a PreparedVerifyingKey), so that
checking many proofs against one key (a Filecoin seal proof's partitions) converts it once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..curve_groups import Groups, groups_for
from ..curves import BLS12_381, Curve, curve_named
from .keys import Proof, VerifyingKey


@dataclass(frozen=True)
class PreparedVerifyingKey:
    """A verifying key's points as its curve's point objects, ready for the pairing check."""

    alpha_g1: Any
    beta_g2: Any
    gamma_g2: Any
    delta_g2: Any
    ic: list
    groups: Groups

    @property
    def n_public(self) -> int:
        return len(self.ic) - 1


def vk_curve(vk: VerifyingKey) -> Curve:
    """The curve of a verifying key, from its arrays' limb count (6: BLS12-381, 4: BN254)."""
    return BLS12_381 if vk.alpha_g1.shape[-1] == BLS12_381.fp_limbs else curve_named("bn254")


def prepare(vk: VerifyingKey) -> PreparedVerifyingKey:
    """The key's points converted once (no subgroup check: a key is trusted input, checked where
    it was read)."""
    g = groups_for(vk_curve(vk))
    (alpha,) = g.g1_points(vk.alpha_g1)
    beta, gamma, delta = g.g2_points(np.concatenate([vk.beta_g2, vk.gamma_g2, vk.delta_g2]))
    return PreparedVerifyingKey(alpha, beta, gamma, delta, g.g1_points(vk.ic), g)


def prepare_inputs(vk: VerifyingKey | PreparedVerifyingKey, public):
    """IC_0 + sum x_i IC_i for the public inputs x_1..x_p (each must be in [0, r))."""
    pvk = vk if isinstance(vk, PreparedVerifyingKey) else prepare(vk)
    public = [int(x) for x in public]
    if len(public) != pvk.n_public:
        raise ValueError(f"verifier: {len(public)} public inputs given, the key expects {pvk.n_public}")
    for i, x in enumerate(public):
        if not 0 <= x < pvk.groups.curve.r:
            raise ValueError(f"verifier: public input {i + 1} is not a field element (must be in [0, r))")
    return pvk.groups.msm_g1(pvk.ic, [1] + public)


def verify(vk: VerifyingKey | PreparedVerifyingKey, public, proof: Proof) -> bool:
    """True when the proof is valid for these public inputs. Proof points are checked to be on
    the curve and in the prime-order subgroup; a point that is not makes the proof invalid."""
    pvk = vk if isinstance(vk, PreparedVerifyingKey) else prepare(vk)
    g = pvk.groups
    if proof.a.shape[-1] != g.curve.fp_limbs:
        return False  # a proof of another curve
    try:
        a, c, b = g.g1_checked(proof.a), g.g1_checked(proof.c), g.g2_checked(proof.b)
    except Exception:  # arkworks raises its own exception type for a point off the curve
        return False
    acc = prepare_inputs(pvk, public)
    return g.pairing_check([-a, pvk.alpha_g1, acc, c], [b, pvk.beta_g2, pvk.gamma_g2, pvk.delta_g2])
