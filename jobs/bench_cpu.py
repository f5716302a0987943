"""Time the CPU H computation: reference (qap.compute_h) against ntt_fast.compute_h_fast.

    PYTHONPATH=. python jobs/bench_cpu.py [--min-log 10] [--max-log 20] [--ref-max-log 16] [--repeat 3]

Inputs are fresh random int vectors (what the prover hands the backend); every fast result at a
size where the reference ran is checked against it. Times are the best of --repeat runs and
include the conversions (ints -> limbs in, limbs out); the reference's include fr_to_limbs of its
output, as CpuBackend does. The first block prints the one-time cost a process pays before its
first fast call (numba import, loading the compiled kernels from numba's cache, or compiling
them when the cache is cold). The machine's load average is printed: other processes on the
same cores slow everything down.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cuzk_ray import qap  # noqa: E402
from cuzk_ray.field import R_MOD, fr_to_limbs, fr_vector  # noqa: E402


def best(fn, repeat):
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min-log", type=int, default=10)
    ap.add_argument("--max-log", type=int, default=20)
    ap.add_argument("--ref-max-log", type=int, default=16, help="skip the reference above this size")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None, help="threads for the fast path (default: auto)")
    args = ap.parse_args()

    print(f"cores: {os.cpu_count()}, load average before: {os.getloadavg()}")
    t = time.perf_counter()
    from cuzk_ray import ntt_fast
    t_import = time.perf_counter() - t
    t = time.perf_counter()
    ntt_fast.compute_h_fast([1] * 16, [2] * 16, [3] * 16)
    t_first = time.perf_counter() - t
    print(f"one-time: import ntt_fast (numba) {t_import:.3f} s, first call at 2^4 {t_first:.3f} s "
          f"(kernel load from cache, or compile if cold); threads: {args.threads or ntt_fast.THREADS} "
          f"from 2^{ntt_fast.PARALLEL_MIN_SIZE.bit_length() - 1}")

    rng = random.Random(1)
    print(f"{'size':>6} {'reference s':>12} {'fast s':>9} {'speed-up':>9}")
    for log_n in range(args.min_log, args.max_log + 1):
        n = 1 << log_n
        a, b, c = ([rng.randrange(R_MOD) for _ in range(n)] for _ in range(3))
        ntt_fast._tables(n, "snarkjs")  # per-size tables are built once per process and cached
        t_fast, h = best(lambda: ntt_fast.compute_h_fast(a, b, c, threads=args.threads), args.repeat)
        if log_n <= args.ref_max_log:
            ref_repeat = 1 if log_n >= 14 else args.repeat
            t_ref, h_ref = best(lambda: fr_to_limbs(qap.compute_h(fr_vector(a), fr_vector(b), fr_vector(c))), ref_repeat)
            if not (h_ref == h).all():
                print(f"MISMATCH at 2^{log_n}: fast H differs from the reference", file=sys.stderr)
                return 1
            print(f"{'2^%d' % log_n:>6} {t_ref:12.4f} {t_fast:9.4f} {t_ref / t_fast:8.1f}x", flush=True)
        else:
            print(f"{'2^%d' % log_n:>6} {'(skipped)':>12} {t_fast:9.4f} {'':>9}", flush=True)
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
