"""What Filecoin's trees cost on the CPU for one sector of 2^k nodes (default k = 18, an 8 MiB sector):

    python jobs/bench_filecoin_trees.py              # 8 MiB, every core
    python jobs/bench_filecoin_trees.py 15 --threads 1

Times fr32 padding, tree D (SHA-254, hashlib), tree C's column hashes (Poseidon arity 11 over 11
random label layers), tree C and tree R_last (Poseidon arity 8, shape 8-0-0). The first Poseidon
call of a fresh checkout also compiles the numba kernel (about 10 s, then cached on disk), and each
arity's constants take ~0.5 s to derive: both are warmed up first and not counted. Wall and CPU
seconds (all threads) per step: on a shared machine the CPU seconds are the honest cost.
A timing, not a test.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

LAYERS = 11  # 32 GiB and 8 MiB PoRep alike


def main() -> None:
    import numpy as np

    from cuzk_ray.filecoin import fr32, poseidon_batch, sha254, trees

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log2_nodes", type=int, nargs="?", default=18)
    ap.add_argument("--threads", type=int, default=None, help="Poseidon threads (default: every core)")
    args = ap.parse_args()
    nodes = 1 << args.log2_nodes
    if nodes % 32 or nodes & (nodes - 1) or args.log2_nodes % 3:
        ap.error("log2_nodes must be a multiple of 3 (an 8-0-0 tree) and >= 6")
    rng = np.random.default_rng(0)
    for arity in (LAYERS, 8):  # compile (or load) the kernel, derive each arity's constants
        poseidon_batch.hash_many(np.zeros((1, arity, 4), np.uint64))
    rows = []

    def step(name, fn):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        rows.append((name, time.perf_counter() - t0, time.process_time() - c0))
        return out

    data = rng.integers(0, 256, fr32.unpadded_size(nodes * 32), dtype=np.uint8)
    padded = step("fr32 pad", lambda: fr32.pad(data))
    step("tree D (SHA-254)", lambda: sha254.comm_d(padded))
    labels = fr32.pad(rng.integers(0, 256, fr32.unpadded_size(LAYERS * nodes * 32), dtype=np.uint8))
    labels = labels.reshape(LAYERS, nodes, 32)
    columns = step(f"column hashes ({nodes} x Poseidon-11)", lambda: trees.column_hashes(labels, args.threads))
    step("tree C (Poseidon-8)", lambda: trees.build_tree(columns, trees.SHAPE_8_0_0, args.threads))
    step("tree R_last (Poseidon-8)", lambda: trees.build_tree(labels[-1], trees.SHAPE_8_0_0, args.threads))
    print(f"sector of 2^{args.log2_nodes} nodes ({nodes * 32 >> 20} MiB), threads={args.threads or os.cpu_count()}")
    print(f"  {'step':<40} {'wall s':>8} {'cpu s':>8}")
    for name, wall, cpu in rows:
        print(f"  {name:<40} {wall:8.2f} {cpu:8.2f}")


if __name__ == "__main__":
    main()
