"""The FREE values of a partition's witness tape: what the proof's data supplies, in the order
``stacked.synthesize_stacked`` allocates it (circuit/tape.py's FREE and FREE_BITS ops).

Prefix: replica_id, comm_d, comm_r, comm_r_last, comm_c. Per challenge: the data leaf, tree D's
path, each DRG then expander parent's column rows and tree C path, the challenge (its 64 bits are
FREE_BITS), tree R_last's path, tree C's path of the challenge's own column. A path gives, level by
level (base, sub, top), the node's index (FREE_BITS) then the siblings.
"""

from __future__ import annotations

import numpy as np

from ...field import R_MOD, fr_to_limbs
from .por import AuthPath
from .stacked import StackedCircuit


def _path(out: list, path: AuthPath) -> None:
    for sub in (path.base, path.sub, path.top):
        for level in sub.path:
            out.append(level.index)
            out.extend(level.hashes)


def free_value_list(circuit: StackedCircuit) -> list:
    """The free values as Fr ints (None where the circuit is blank), in synthesis order."""
    out = [circuit.replica_id, circuit.comm_d, circuit.comm_r, circuit.comm_r_last, circuit.comm_c]
    for p in circuit.proofs:
        out.append(p.data_leaf)
        _path(out, p.comm_d_path)
        for column in p.drg_parents_proofs + p.exp_parents_proofs:
            out.extend(column.rows)
            _path(out, column.inclusion_path)
        out.append(p.challenge)
        _path(out, p.comm_r_last_path)
        _path(out, p.comm_c_path)
    return out


def free_values(circuit: StackedCircuit) -> np.ndarray:
    """The free values as standard-form ``uint64[n, 4]``; ValueError naming the first one that is
    missing (a blank circuit) or not below r."""
    values = free_value_list(circuit)
    for i, v in enumerate(values):
        if v is None or not 0 <= v < R_MOD:
            raise ValueError(f"free value {i}: {'missing (a blank circuit)' if v is None else 'not a field element'}")
    return fr_to_limbs(values)
