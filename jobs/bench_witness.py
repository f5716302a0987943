"""What the compact witness (cuzk_ray.witness) costs on one core, per size, filecoin shape:

    python jobs/bench_witness.py            # 2^20 .. 2^24
    python jobs/bench_witness.py 16 22 --repeat 5

For each size: synthesis of the parts, compact_filecoin (parts -> compact, what synthesis does),
expand() on the host (what the CPU backend's stage does), compact() of the full vector (what the
default shape and .wtns files do), wires(1, 1 + p) (the public inputs), and the bytes: full
witness, compact witness, its Arrow batch, the circuit's estimate. Median seconds of --repeat
runs; single-threaded numpy (OMP/MKL threads 1). A timing, not a test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(var, "1")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def timed(fn, repeat: int):
    """(median seconds, last result)."""
    times, out = [], None
    for _ in range(repeat):
        out = None
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def measure(k: int, public: int, repeat: int) -> dict:
    from cuzk_ray.circuits import PorepCircuit
    from cuzk_ray.circuits.porep import FilecoinLayout, compact_filecoin, expand_filecoin, synthesize_filecoin_parts
    from cuzk_ray.partition import Partition, to_record_batch
    from cuzk_ray.witness import compact

    n = 1 << k
    lay = FilecoinLayout.make(n, public)
    parts_s, parts = timed(lambda: synthesize_filecoin_parts(n, public, seed=1), repeat)
    pack_s, c = timed(lambda: compact_filecoin(lay, parts), repeat)
    expand_s, full = timed(lambda: c.expand(), repeat)
    compact_s, c2 = timed(lambda: compact(full), repeat)
    public_s, _ = timed(lambda: c.wires(1, 1 + public), repeat)
    assert c2 == c and (full.limbs == expand_filecoin(lay, parts)).all()
    circuit = PorepCircuit(constraints=n, public=public, shape="filecoin")
    return {"k": k, "wires": lay.n_wires, "parts_s": parts_s, "pack_s": pack_s, "expand_s": expand_s,
            "compact_s": compact_s, "public_s": public_s, "full_bytes": full.nbytes, "compact_bytes": c.nbytes,
            "batch_bytes": to_record_batch(Partition("p", 0, "c", c)).nbytes,
            "estimate": circuit.partition_batch_bytes()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("lo", type=int, nargs="?", default=20)
    ap.add_argument("hi", type=int, nargs="?", default=24)
    ap.add_argument("--public", type=int, default=327)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    from cuzk_ray.circuits.porep import synthesize_filecoin_parts

    synthesize_filecoin_parts(1 << 10, 4)  # numba kernel loaded (or compiled) first: not timed
    print(f"{'size':6s} {'wires':>12s} {'parts_s':>8s} {'pack_s':>8s} {'expand_s':>8s} {'compact_s':>9s} "
          f"{'public_ms':>9s} {'full_MiB':>9s} {'compact_MiB':>11s} {'batch_MiB':>9s} {'est_MiB':>8s}")
    mib = 2**20
    for k in range(args.lo, args.hi + 1):
        r = measure(k, args.public, args.repeat)
        print(f"2^{k:<4d} {r['wires']:>12,d} {r['parts_s']:8.3f} {r['pack_s']:8.3f} {r['expand_s']:8.3f} "
              f"{r['compact_s']:9.3f} {1e3 * r['public_s']:9.3f} {r['full_bytes'] / mib:9.1f} "
              f"{r['compact_bytes'] / mib:11.2f} {r['batch_bytes'] / mib:9.2f} {r['estimate'] / mib:8.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
