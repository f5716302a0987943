"""A StackedDRG partition's witness the fast way (issue 30 item 3): the sector size's witness tape
(circuit/tape.py), recorded once from the blank circuit of one challenge and cached on disk, replayed
per partition with the C1's free values (circuit/replay.py, circuit/free_values.py).

    pl = replay.plan(witness_tape(config, cache_dir))     # once per sector size
    w = fast_witness(pl, c1, k)                           # per partition: a CompactWitness

The result is bit for bit the reference synthesizer's witness (tests/test_filecoin_fast_witness.py).
"""

from __future__ import annotations

from ...witness import CompactWitness
from ..c1 import C1Output
from ..registry import PoRepConfig
from .free_values import free_values
from .replay import ReplayPlan, replay_circuit
from .stacked import blank_stacked_circuit, stacked_circuit_from_c1, synthesize_stacked, tree_shape
from .tape import WitnessTape, load_tape, record_tape, save_tape, tape_path


def witness_tape(config: PoRepConfig, cache_dir=None, constraints: bool = False) -> WitnessTape:
    """The partition tape of ``config``'s sector size: read from ``cache_dir`` when it is there,
    else recorded from the blank circuit of one challenge (the prefix and one block; for 32 GiB
    ~7M variables: minutes of Python and a few GB) and, with a ``cache_dir``, saved there.
    ``constraints`` also keeps the constraints, for ``replay.check_block`` (a separate cache file)."""
    name = "stacked-drg-checked" if constraints else "stacked-drg"
    path = tape_path(cache_dir, name, config.sector_size) if cache_dir is not None else None
    if path is not None and path.is_file():
        return load_tape(path)
    circuit = blank_stacked_circuit(tree_shape(config), config.shape.layers, 1)
    tape, _ = record_tape(synthesize_stacked, circuit, 1, constraints)
    if path is not None:
        save_tape(path, tape)
    return tape


def fast_witness(pl: ReplayPlan, c1: C1Output, k: int) -> CompactWitness:
    """Partition ``k`` of a C1 output's witness, replayed from a plan of its sector size's tape."""
    circuit = stacked_circuit_from_c1(c1, k)
    return replay_circuit(pl, free_values(circuit), len(circuit.proofs))
