"""A small stand-in for the StackedDRG partition circuit with the same public inputs (``variant
inputs`` of the Filecoin prover mode: tests and demos of the prover's plumbing, not a seal proof).

It takes the partition's 3 + 18 C inputs in ``porep_public_inputs``' order, read off the C1 (the
replica_id, comm_d and comm_r; per challenge the node, its 6 + 8 parents' indices, the node again
three times: every path input of the real circuit equals its leaf index), and proves one real
relation of the sector: ``comm_r == Poseidon2(comm_c, comm_r_last)``, with the gadgets of
stacked.py. It proves nothing about the replica's labels or trees: its key is only ever a
development key, and its proofs verify only under that key. ~1.6k constraints for 2 KiB.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..c1 import C1Output
from ..public_inputs import fr_from_le
from ..registry import PoRepConfig
from . import constraint, poseidon
from .num import AllocatedNum


@dataclass(frozen=True)
class StandinValues:
    """The stand-in's witness: comm_c, comm_r_last and the partition's public inputs (None: blank)."""

    comm_c: int | None
    comm_r_last: int | None
    inputs: tuple[int | None, ...]


def standin_values(c1: C1Output, k: int) -> StandinValues:
    """Partition ``k``'s values as the C1 states them (challenge nodes and parent indices)."""
    if not 0 <= k < len(c1.vanilla_proofs):
        raise ValueError(f"partition {k}: the C1 output has partitions 0..{len(c1.vanilla_proofs) - 1}")
    proofs = c1.vanilla_proofs[k]
    if not proofs:
        raise ValueError(f"vanilla_proofs[{k}]: no vanilla proofs, cannot make a circuit")
    inputs = [int.from_bytes(c1.replica_id, "little"), fr_from_le(c1.comm_d, "comm_d"), fr_from_le(c1.comm_r, "comm_r")]
    for p in proofs:
        node = p.labeling_proofs[0].node
        inputs += [node, *(c.index for c in p.drg_parents + p.exp_parents), node, node, node]
    first = proofs[0]
    return StandinValues(int.from_bytes(first.c_x.inclusion_proof.root, "little"),
                         int.from_bytes(first.comm_r_last_proof.root, "little"), tuple(inputs))


def blank_standin(config: PoRepConfig, parents: int = 14) -> StandinValues:
    """The stand-in without a witness, for ``config``'s challenges per partition."""
    return StandinValues(None, None, (None,) * (3 + (parents + 4) * config.challenges_per_partition))


def synthesize_standin(cs, values: StandinValues) -> None:
    """The inputs in order, then the comm_r check (stacked.py's top, without the challenges)."""
    nums = []
    for i, v in enumerate(values.inputs):
        with cs.namespace(f"input_{i}"):
            num = AllocatedNum.alloc(cs, v)
            num.inputize(cs)
        nums.append(num)
    with cs.namespace("comm_r_last"):
        comm_r_last = AllocatedNum.alloc(cs, values.comm_r_last)
    with cs.namespace("comm_c"):
        comm_c = AllocatedNum.alloc(cs, values.comm_c)
    with cs.namespace("H_comm_c_comm_r_last"):
        hashed = poseidon.hash2_circuit(cs, comm_c, comm_r_last)
    constraint.equal(cs, "enforce comm_r = H(comm_c || comm_r_last)", nums[2], hashed)
