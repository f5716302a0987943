"""The fast witness of a StackedDRG partition (filecoin/circuit/fast_witness.py) against the reference
synthesizer, per sector size:

    python jobs/bench_fast_witness.py                 # 2 KiB and 8 MiB (sealed here), then 32 GiB
    python jobs/bench_fast_witness.py --no-32g        # only the sealed sizes
    python jobs/bench_fast_witness.py --threads 16    # numba threads (default: every core)
    python jobs/bench_fast_witness.py --cache DIR     # the 32 GiB tape recorded once (~4 min), then read

2 KiB and 8 MiB: a sector sealed here, its C1, partition 0 synthesized once by the reference
synthesizer with the tape attached (the reference witness, the tape and its constraints come out of
the same run: "reference s"), then the fast witness from the C1 (after one warm-up call: numba's
compile is cached on disk) compared bit for bit, and checked against the tape's constraints block
by block; the tape recorded from the blank circuit of one challenge (what ``witness_tape`` does)
must equal the one folded from the valued partition. 32 GiB: the consistent C1 of
jobs/make_c1_32g.py (c1_synthetic), the tape recorded from the blank circuit of one challenge (with
its constraints), the fast witness of partition 0 (18 blocks), every block checked against the
constraints, and a tampered column row refused. No reference witness at 32 GiB (18 x ~2 min of
Python). A timing, not a test.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

IDS = (bytes(31) + b"\x09", 1, bytes([1]) * 32, bytes([2]) * 32)  # prover_id, sector_id, ticket, seed


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def tamper_row(c1):
    """Partition 0, challenge 0: DRG parent 2's first row with its low bit flipped."""
    p = c1.vanilla_proofs[0][0]
    col = p.drg_parents[2]
    row = bytes([col.rows[0][0] ^ 1]) + col.rows[0][1:]
    col = dataclasses.replace(col, rows=(row, *col.rows[1:]))
    p = dataclasses.replace(p, drg_parents=p.drg_parents[:2] + (col,) + p.drg_parents[3:])
    return dataclasses.replace(c1, vanilla_proofs=((p, *c1.vanilla_proofs[0][1:]), *c1.vanilla_proofs[1:]))


def checked(pl, w, bad) -> str:
    from cuzk_ray.filecoin.circuit.replay import check_block

    blocks = (len(w) - pl.tape.layout.p) // pl.tape.layout.b
    failing = [b for b in range(blocks) if check_block(pl, w, b) != -1]
    refused = check_block(pl, bad, 0) != -1
    return (f"{blocks - len(failing)}/{blocks} blocks satisfied; tampered row "
            f"{'refused' if refused else 'ACCEPTED (a defect)'}")


def sealed(name: str) -> dict:
    import numpy as np

    from cuzk_ray.field import fr_to_limbs
    from cuzk_ray.filecoin import fr32, registry, seal
    from cuzk_ray.filecoin.circuit.fast_witness import fast_witness, witness_tape
    from cuzk_ray.filecoin.circuit.replay import plan
    from cuzk_ray.filecoin.circuit.stacked import stacked_circuit_from_c1, synthesize_stacked
    from cuzk_ray.filecoin.circuit.tape import record_tape
    from cuzk_ray.witness import compact

    proof = registry.registered_seal_proof(name)
    size = proof.sector_size
    piece = np.random.default_rng(1).integers(0, 256, fr32.unpadded_size(size), dtype=np.uint8).tobytes()
    c1 = seal.commit_phase1(seal.seal_sector(piece, proof, *IDS[:3]), IDS[3])
    circuit = stacked_circuit_from_c1(c1, 0)
    (tape, cs), ref_s = timed(lambda: record_tape(synthesize_stacked, circuit, len(circuit.proofs), True))
    reference = compact(fr_to_limbs(cs.inputs + cs.aux))
    del cs
    pl = plan(tape)
    fast_witness(pl, c1, 0)  # warm-up (numba compile or cache load)
    w, fast_s = timed(lambda: fast_witness(pl, c1, 0))
    bad = fast_witness(pl, tamper_row(c1), 0)
    blank = witness_tape(proof.config, constraints=True)  # what production records: the blank circuit's
    same = blank.layout == tape.layout and all(np.array_equal(blank.arrays[k], v) for k, v in tape.arrays.items())
    return {"size": name, "wires": len(w), "blocks": len(circuit.proofs), "reference_s": ref_s, "fast_s": fast_s,
            "equal": "equal" if w == reference else "DIFFERS",
            "check": f"{checked(pl, w, bad)}; blank tape {'equal' if same else 'DIFFERS'}"}


def partition_32g(cache_dir) -> dict:
    import numpy as np

    from cuzk_ray.filecoin import c1_synthetic, registry
    from cuzk_ray.filecoin.circuit.fast_witness import fast_witness, witness_tape
    from cuzk_ray.filecoin.circuit.replay import plan

    proof = registry.registered_seal_proof("StackedDrg32GiBV1_1")
    c1, gen_s = timed(lambda: c1_synthetic.synthetic_c1(proof, *IDS, np.random.default_rng(0)))
    tape, rec_s = timed(lambda: witness_tape(proof.config, cache_dir, constraints=True))
    pl = plan(tape)
    print(f"  32 GiB: C1 generated in {gen_s:.1f} s, tape of one block recorded (or read) in {rec_s:.1f} s "
          f"({tape.layout.block.ops:,} ops, {tape.layout.block.constraints:,} constraints per block)", flush=True)
    fast_witness(pl, c1, 0)  # warm-up
    times = []
    for _ in range(3):
        w, s = timed(lambda: fast_witness(pl, c1, 0))
        times.append(s)
    return {"size": "StackedDrg32GiBV1_1", "wires": len(w), "blocks": len(c1.vanilla_proofs[0]),
            "reference_s": float("nan"), "fast_s": min(times), "equal": "not computed",
            "check": checked(pl, w, fast_witness(pl, tamper_row(c1), 0))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-32g", dest="p32g", action="store_false", help="skip the 32 GiB partition")
    ap.add_argument("--threads", type=int, default=0, help="numba threads (0: every core)")
    ap.add_argument("--cache", help="a directory for the 32 GiB tape (recorded once, then read)")
    args = ap.parse_args()
    import numba

    if args.threads:
        numba.set_num_threads(args.threads)
    rows = []
    for name in ("StackedDrg2KiBV1_1", "StackedDrg8MiBV1_1"):
        rows.append(sealed(name))
        print(f"  {name} done", flush=True)
    if args.p32g:
        rows.append(partition_32g(args.cache))
    print(f"\n  numba threads: {numba.get_num_threads()} (of {os.cpu_count()} cores)")
    head = ("partition", "wires", "blocks", "reference s", "fast s", "fast == ref")
    print("  {:<22} {:>12} {:>6} {:>12} {:>8}  {:<13} check".format(*head))
    for r in rows:
        print(f"  {r['size']:<22} {r['wires']:>12,} {r['blocks']:>6} {r['reference_s']:>12.1f} {r['fast_s']:>8.3f}  "
              f"{r['equal']:<13} {r['check']}")


if __name__ == "__main__":
    main()
