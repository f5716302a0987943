"""The CPU development setup's scalars (u, v, w, ic, l, h of the key's points) for the real PoRep
partition circuit of a small sector: the Python-int reference (groth16.setup.setup_scalars_cpu)
against the compiled path a key is made with (fast/setup_scalars.py), seconds each and whether
every array is equal, bit for bit.

    python jobs/bench_setup_scalars.py [--sector-size 2KiB] [--cache-dir /tmp/setup-scalars] [--runs 2]

The partition cache under DIR is made on first use (c2.circuit_setup: ~40 s at 2 KiB on the 2-core
dev box). The fast path's first call in a fresh checkout compiles its kernels (cached by numba
after); its best of ``runs`` is shown. Exit 1 if any array differs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sector-size", default="2KiB")
    ap.add_argument("--cache-dir", type=Path, default=Path("/tmp/setup-scalars"))
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args()

    from cuzk_ray.fast.setup_scalars import setup_scalars_fast
    from cuzk_ray.filecoin import c2, registry
    from cuzk_ray.groth16 import setup

    cs = c2.circuit_setup(registry.registered_seal_proof(f"StackedDrg{args.sector_size}V1_1"), args.cache_dir,
                          "stacked").recording.cs
    t = setup.ToxicWaste.from_seed(0)
    toxic = (t.tau, t.alpha, t.beta, t.gamma, t.delta)
    fast_s = []
    for _ in range(max(1, args.runs)):
        t0 = time.perf_counter()
        got = setup_scalars_fast(cs, *toxic, qap="bellperson")
        fast_s.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    want = setup.setup_scalars_cpu(cs, *toxic, qap="bellperson")
    ref_s = time.perf_counter() - t0
    equal = all(np.array_equal(got[k], want[k]) for k in want)
    print(f"{args.sector_size} partition circuit: {cs.n_constraints:,} constraints, {cs.n_wires:,} wires, "
          f"bellperson's H")
    print("| path | s |\n|---|---:|")
    print(f"| reference (Python ints) | {ref_s:.2f} |")
    print(f"| compiled (fast/setup_scalars.py), best of {len(fast_s)} | {min(fast_s):.2f} |")
    print(f"every array equal: {equal}")
    return 0 if equal else 1


if __name__ == "__main__":
    sys.exit(main())
