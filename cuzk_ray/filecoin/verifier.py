"""Groth16 verification of Filecoin proofs under a bellperson verifying key (a .vk file).

The equation is the project's (groth16.verifier): e(A, B) = e(alpha, beta) e(IC_0 + sum x_i IC_i,
gamma) e(C, delta), where x_1..x_n are a partition's public inputs as Fr integers *without* the
leading ONE (bellperson's ``verify_proof`` takes them so; the ONE is IC_0's coefficient). A seal
proof (MultiProof) verifies when every partition's proof verifies against that partition's inputs.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..groth16.keys import Proof, VerifyingKey
from ..groth16.verifier import PreparedVerifyingKey, prepare, verify
from .params import BellpersonVerifyingKey


def prepare_bellperson(vk: BellpersonVerifyingKey | VerifyingKey) -> PreparedVerifyingKey:
    """The key prepared once for many proofs (as bellperson's ``prepare_verifying_key``); a .vk's, or
    the same points as the project's VerifyingKey (a service's verification_key.json)."""
    return prepare(vk.to_groth16() if isinstance(vk, BellpersonVerifyingKey) else vk)


def _prepared(vk: BellpersonVerifyingKey | PreparedVerifyingKey) -> PreparedVerifyingKey:
    return vk if isinstance(vk, PreparedVerifyingKey) else prepare_bellperson(vk)


def verify_proof(vk: BellpersonVerifyingKey | PreparedVerifyingKey, proof: Proof, inputs: Sequence[int]) -> bool:
    """True when one 192-byte proof (decoded) is valid for these public inputs (no leading ONE;
    each in [0, r): ValueError otherwise, or when their count is not ic_len - 1)."""
    return verify(_prepared(vk), inputs, proof)


def verify_multiproof(vk: BellpersonVerifyingKey | PreparedVerifyingKey, proofs: Sequence[Proof],
                      inputs_per_partition: Sequence[Sequence[int]]) -> bool:
    """True when every partition's proof verifies against its own input vector (partition k's
    proof against inputs_per_partition[k]); ValueError when the counts differ."""
    if len(proofs) != len(inputs_per_partition):
        raise ValueError(f"verifier: {len(proofs)} partition proofs but {len(inputs_per_partition)} input vectors")
    pvk = _prepared(vk)
    return all(verify(pvk, inputs, proof) for proof, inputs in zip(proofs, inputs_per_partition))
