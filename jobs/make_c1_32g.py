"""Make a consistent full-size C1 without sealing (32 GiB by default), check it, and time each step:

    python jobs/make_c1_32g.py -o c1-32g.json                  # 10 partitions x 18 challenges
    python jobs/make_c1_32g.py --proof StackedDrg64GiBV1_1 -o c1-64g.json
    python jobs/make_c1_32g.py --seal-8mib                     # also seal a real 8 MiB sector

The C1 is an empty (committed-capacity) sector's: random parent columns, the challenged labels
computed from them, sparse trees C and R_last (see cuzk_ray/filecoin/c1_synthetic.py). Steps:
generate, write the JSON (atomically), read it back, vanilla-verify it (every path, label and the
encoding). ``--seal-8mib`` adds PC1 + PC2 + C1 of an 8 MiB sector of random data and its check.
The Poseidon kernel and constants are warmed up first and not counted. A timing, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# what a tampered twin changes in vanilla_proofs[0][1] of the decoded JSON: (list, index)
TAMPERS = {
    "label (challenged column)": lambda p: (p["replica_column_proofs"]["c_x"]["column"]["rows"], 1),
    "parent column value": lambda p: (p["replica_column_proofs"]["drg_parents"][2]["column"]["rows"], 0),
    "tree R path node": lambda p: (p["comm_r_last_proof"]["data"]["Single"]["path"]["path"][1]["hashes"], 3),
}


def tampered_fault(made, where) -> str | None:
    """The vanilla verifier's line for ``made`` with one byte array's low bit flipped (None: accepted)."""
    from cuzk_ray.filecoin import c1, vanilla

    obj = json.loads(c1.c1_bytes(made))
    proof = next(iter(obj["vanilla_proofs"].values()))[0][1]
    values, i = where(proof)
    values[i] = [values[i][0] ^ 1, *values[i][1:]]
    return vanilla.c1_error(c1.parse_c1(obj))


def main() -> None:
    import numpy as np

    from cuzk_ray.filecoin import c1, c1_synthetic, fr32, poseidon_batch, registry, seal, vanilla

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--proof", default="StackedDrg32GiBV1_1", help="an interactive registered seal proof")
    ap.add_argument("-o", "--output", help="where the C1 goes (default: a temporary file, removed)")
    ap.add_argument("--rng-seed", type=int, default=0)
    ap.add_argument("--seal-8mib", action="store_true", help="also seal an 8 MiB sector (about 15 s)")
    args = ap.parse_args()
    for arity in (11, 8, 2):
        poseidon_batch.hash_many(np.zeros((1, arity, 4), np.uint64))
    rows: list[tuple[str, float, float, str]] = []

    def step(name, fn, note=lambda out: ""):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        rows.append((name, time.perf_counter() - t0, time.process_time() - c0, note(out)))
        return out

    proof = registry.registered_seal_proof(args.proof)
    ids = (bytes(31) + b"\x09", 1, bytes([1]) * 32, bytes([2]) * 32)  # prover_id, sector_id, ticket, seed
    rng = np.random.default_rng(args.rng_seed)
    made = step(f"generate {proof.name}", lambda: c1_synthetic.synthetic_c1(proof, *ids, rng),
                lambda out: f"{len(out.vanilla_proofs)} x {len(out.vanilla_proofs[0])} challenges")
    with tempfile.TemporaryDirectory() as tmp:
        path = args.output or os.path.join(tmp, "c1.json")
        step("write JSON", lambda: c1.write_c1(made, path), lambda n: f"{n / 1e6:.1f} MB")
        back = step("read JSON", lambda: c1.read_c1(path), lambda out: "equal" if out == made else "DIFFERS")
        step("vanilla verify", lambda: vanilla.c1_error(back, ids[0], ids[1]), lambda fault: fault or "OK")
    if args.seal_8mib:
        p8 = registry.registered_seal_proof("StackedDrg8MiBV1_1")
        piece = np.random.default_rng(1).integers(0, 256, fr32.unpadded_size(8 << 20), dtype=np.uint8).tobytes()
        sector = step("seal 8 MiB (PC1 + PC2)", lambda: seal.seal_sector(piece, p8, *ids[:3]))
        out = step("C1 of 8 MiB", lambda: seal.commit_phase1(sector, ids[3]))
        step("vanilla verify 8 MiB", lambda: vanilla.c1_error(out, ids[0], ids[1]), lambda fault: fault or "OK")
        for what, where in TAMPERS.items():  # each twin must be refused, naming what is wrong
            step(f"8 MiB, tampered {what}", lambda where=where: tampered_fault(out, where),
                 lambda fault: f"refused: {fault[:90]}" if fault else "ACCEPTED (a defect)")
    print(f"  {'step':<40} {'wall s':>8} {'cpu s':>8}  result")
    for name, wall, cpu, note in rows:
        print(f"  {name:<40} {wall:8.2f} {cpu:8.2f}  {note}")


if __name__ == "__main__":
    main()
