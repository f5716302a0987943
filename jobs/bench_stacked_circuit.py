"""Count the StackedDRG circuit against rust-fil-proofs and time the reference synthesizer:

    python jobs/bench_stacked_circuit.py            # the four counts, then the 2 KiB partition
    python jobs/bench_stacked_circuit.py --counts   # the counts only (~1 min)

Counts: ``storage-proofs-porep/tests/stacked_circuit.rs`` (rust-fil-proofs 87348a749d): 1
challenge, 2 layers, 8 x base-tree-count nodes, 22 inputs; base 2 1,206,212, base 8 1,199,620,
8-4 1,296,576, 8-4-2 1,346,982 (blank circuits: counts do not depend on the witness). Then a 2 KiB
sector sealed by seal.py: its partition from the C1 (the recording CS, then the checking CS), the
inputs against ``porep_public_inputs``, a challenge claimed as another node (its labels then encode
to the wrong replica node: tree R_last's root check fails), and the blank 2 KiB circuit's rows against the witnessed
one's (the parameters are made from the blank one). Exits 1 on any mismatch. The tests keep the
2 KiB partition; this is the counts, and the timings.

The 32 GiB partition against cuzk's published structure is jobs/record_filecoin.py 32GiB: the
partition recorded (prefix + one challenge, replicated), its nine counts read from the arrays.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

UPSTREAM = {(2, 0, 0): 1_206_212, (8, 0, 0): 1_199_620, (8, 4, 0): 1_296_576, (8, 4, 2): 1_346_982}
IDS = (bytes(31) + b"\x07", 77, bytes([12]) * 32, bytes([13]) * 32)  # prover_id, sector_id, ticket, seed


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def counts() -> bool:
    from cuzk_ray.filecoin.circuit.cs import ConstraintSystem
    from cuzk_ray.filecoin.circuit.stacked import TreeShape, blank_stacked_circuit, synthesize_stacked

    ok = True
    for (base, sub, top), want in UPSTREAM.items():
        cs = ConstraintSystem()
        shape = TreeShape(8 * (sub or 1) * (top or 1), base, sub, top)
        _, secs = timed(lambda: synthesize_stacked(cs, blank_stacked_circuit(shape, layers=2, challenges=1)))
        good = (cs.num_constraints, cs.num_inputs) == (want, 22)
        ok &= good
        print(f"  {base}-{sub}-{top:<3} {shape.nodes:>3} nodes  {cs.num_constraints:>10,} (rust {want:,})  "
              f"{cs.num_inputs} inputs  {secs:6.1f} s  {'OK' if good else 'DIFFERS'}")
    return ok


def challenge_binds_labels(c1) -> bool:
    """Partition 0 with challenge 0 claimed as the next node: the labels hashed over it no longer
    encode to the replica node, so tree R_last's root check must fail."""
    from cuzk_ray.filecoin.circuit.checking_cs import CheckingConstraintSystem, UnsatisfiedConstraint
    from cuzk_ray.filecoin.circuit.stacked import stacked_circuit_from_c1, synthesize_stacked

    first = c1.vanilla_proofs[0][0]
    moved = dataclasses.replace(first.labeling_proofs[0], node=first.labeling_proofs[0].node + 1)
    bad = dataclasses.replace(first, labeling_proofs=(moved, *first.labeling_proofs[1:]))
    tampered = dataclasses.replace(c1, vanilla_proofs=((bad, *c1.vanilla_proofs[0][1:]),))
    try:
        synthesize_stacked(CheckingConstraintSystem(), stacked_circuit_from_c1(tampered, 0))
        caught = None
    except UnsatisfiedConstraint as e:
        caught = e.path
    want = "challenge_0/comm_r_last_data_inclusion/enforce root is correct"
    print(f"  challenge 0 claimed as node + 1   fails at {caught!r}: {'OK' if caught == want else 'WRONG'}")
    return caught == want


def partition_2k() -> bool:
    from cuzk_ray.filecoin import fr32, registry, seal
    from cuzk_ray.filecoin.circuit.checking_cs import CheckingConstraintSystem, UnsatisfiedConstraint
    from cuzk_ray.filecoin.circuit.cs import ConstraintSystem
    from cuzk_ray.filecoin.circuit.stacked import stacked_circuit_from_c1, synthesize_stacked
    from cuzk_ray.filecoin.public_inputs import SealPublicData, porep_public_inputs

    proof = registry.registered_seal_proof("StackedDrg2KiBV1_1")
    piece = bytes([1]) + bytes(fr32.unpadded_size(2048) - 1)
    sector, secs = timed(lambda: seal.seal_sector(piece, proof, *IDS[:3]))
    print(f"  seal 2 KiB (PC1 + PC2)            {secs:6.1f} s")
    c1 = seal.commit_phase1(sector, IDS[3])
    circuit = stacked_circuit_from_c1(c1, 0)
    recorded = ConstraintSystem()
    _, secs = timed(lambda: synthesize_stacked(recorded, circuit))
    print(f"  synthesize (recording CS)         {secs:6.1f} s  {recorded.num_constraints:,} constraints, "
          f"{recorded.num_aux:,} aux, {recorded.num_inputs} inputs")
    checking = CheckingConstraintSystem()
    try:
        _, secs = timed(lambda: synthesize_stacked(checking, circuit))
        unsatisfied = None
    except UnsatisfiedConstraint as e:
        secs, unsatisfied = float("nan"), e.path
    inputs_ok = checking.inputs[1:] == porep_public_inputs(proof.config, SealPublicData(c1.comm_r, c1.comm_d, *IDS), 0)
    print(f"  synthesize (checking CS)          {secs:6.1f} s  "
          f"satisfied: {unsatisfied is None} ({unsatisfied}), inputs equal porep_public_inputs: {inputs_ok}")
    bound = challenge_binds_labels(c1)
    return unsatisfied is None and inputs_ok and bound and blank_rows_equal(recorded, proof.config)


def blank_rows_equal(recorded, config) -> bool:
    """The blank circuit (what parameters are made from) has the witnessed circuit's rows."""
    from cuzk_ray.filecoin.circuit.cs import ConstraintSystem
    from cuzk_ray.filecoin.circuit.stacked import blank_stacked_circuit, synthesize_stacked, tree_shape

    blank = ConstraintSystem()
    _, secs = timed(lambda: synthesize_stacked(blank, blank_stacked_circuit(
        tree_shape(config), config.shape.layers, config.challenges_per_partition)))
    a, b = recorded.finish(), blank.finish()
    same = (a.a, a.b, a.c, a.num_inputs, a.num_aux) == (b.a, b.b, b.c, b.num_inputs, b.num_aux)
    print(f"  blank 2 KiB circuit               {secs:6.1f} s  same rows as the witnessed one: {same}")
    return same


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--counts", action="store_true", help="only the four upstream counts")
    args = ap.parse_args()
    print("stacked_circuit.rs counts (1 challenge, 2 layers):")
    ok = counts()
    if not args.counts:
        print("2 KiB partition from a sealed sector's C1:")
        ok &= partition_2k()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
