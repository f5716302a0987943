"""Time the CPU H computation: reference (ref.qap.compute_h) against fast.ntt.compute_h_fast.

    PYTHONPATH=. python jobs/bench_cpu.py [--min-log 10] [--max-log 20] [--ref-max-log 16]
    PYTHONPATH=. python jobs/bench_cpu.py --alternatives   # the approaches not taken, at 2^16

Inputs are fresh random int vectors (what the prover hands the backend); every fast result at a
size where the reference ran is checked against it. Times are the best of --repeat runs and
include the conversions (ints -> limbs in, limbs out); the reference's include fr_to_limbs of its
output, as CpuBackend does. "fast CPU s" is the process CPU time of the fast run (both threads
summed): when it is close to the wall time on two threads, the second core was busy elsewhere.
"tables s" is the one-time cost per process and size of the twiddle and scale tables (cached,
so not in "fast s").
The first block prints the one-time cost a process pays before its first fast call (numba
import, loading the compiled kernels from numba's cache, or compiling them when the cache is
cold). The machine's load average is printed: other processes on the
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

from cuzk_ray.domain import Domain  # noqa: E402
from cuzk_ray.field import R_MOD, fr_to_limbs, fr_vector  # noqa: E402
from cuzk_ray.ref import qap  # noqa: E402


def best(fn, repeat):
    """(wall s, process CPU s) of the fastest of `repeat` runs, and the result."""
    times, out = [], None
    for _ in range(repeat):
        t, cpu = time.perf_counter(), time.process_time()
        out = fn()
        times.append((time.perf_counter() - t, time.process_time() - cpu))
    return min(times), out


def alternatives(log_n: int = 16) -> None:
    """Time the building blocks of the approaches not taken (their lower bounds at 2^log_n)."""
    import numpy as np

    from cuzk_ray.field import FR_INV32

    n = 1 << log_n
    rng = random.Random(2)
    # (a) numpy-vectorised CIOS Montgomery multiplication on 8 x 32-bit limbs held in uint64 arrays,
    # one batch of 3 * n/2 products = one radix-2 stage of the three vectors (multiplications only).
    m32, s32 = np.uint64(0xFFFFFFFF), np.uint64(32)
    p = [np.uint64((R_MOD >> (32 * i)) & 0xFFFFFFFF) for i in range(8)]
    size = 3 * n // 2
    a = [np.array([rng.getrandbits(32) for _ in range(size)], dtype=np.uint64) for _ in range(8)]
    b = [np.array([rng.getrandbits(32) for _ in range(size)], dtype=np.uint64) for _ in range(8)]
    a[7] &= np.uint64(0x3FFFFFFF)
    b[7] &= np.uint64(0x3FFFFFFF)
    t0 = time.perf_counter()
    t = [np.zeros(size, dtype=np.uint64) for _ in range(10)]
    for i in range(8):
        c = np.zeros(size, dtype=np.uint64)
        for j in range(8):
            x = t[j] + a[j] * b[i] + c
            t[j], c = x & m32, x >> s32
        x = t[8] + c
        t[8], t[9] = x & m32, x >> s32
        m = (t[0] * np.uint64(FR_INV32)) & m32
        c = (t[0] + m * p[0]) >> s32
        for j in range(1, 8):
            x = t[j] + m * p[j] + c
            t[j - 1], c = x & m32, x >> s32
        x = t[8] + c
        t[7], t[8] = x & m32, t[9] + (x >> s32)
    stage = time.perf_counter() - t0
    print(f"(a) numpy 32-bit-limb Montgomery, one stage of 3 vectors: {stage:.4f} s; "
          f"x {2 * log_n} stages = {2 * log_n * stage:.2f} s (multiplications only)")
    # (b) python-flint / gmpy2: H as 3 cyclic convolutions of length n (x with a fixed kernel),
    # each one product of an n-term by a (2n-1)-term polynomial over Fr.
    x = [rng.randrange(R_MOD) for _ in range(n)]
    g = [rng.randrange(R_MOD) for _ in range(2 * n - 1)]
    try:
        import flint

        ctx = flint.fmpz_mod_poly_ctx(R_MOD)
        t0 = time.perf_counter()
        px, pg = ctx(x), ctx(g)
        t1 = time.perf_counter()
        prod = px * pg
        t2 = time.perf_counter()
        [int(v) for v in prod.coeffs()[n - 1 : 2 * n - 1]]
        t3 = time.perf_counter()
        print(f"(b) python-flint {flint.__version__} fmpz_mod_poly: to poly {t1 - t0:.3f} s, multiply {t2 - t1:.3f} s, "
              f"back to ints {t3 - t2:.3f} s; x 3 convolutions = {3 * (t3 - t0):.2f} s")
    except ImportError:
        print("(b) python-flint not installed: skipped")
    try:
        import gmpy2

        width = 72  # 576-bit slots hold sums of n products of two 255-bit values (n <= 2^20)
        t0 = time.perf_counter()
        bx = gmpy2.mpz(int.from_bytes(b"".join(v.to_bytes(width, "little") for v in x), "little"))
        bg = gmpy2.mpz(int.from_bytes(b"".join(v.to_bytes(width, "little") for v in g), "little"))
        t1 = time.perf_counter()
        bx * bg
        t2 = time.perf_counter()
        print(f"(c) gmpy2 {gmpy2.version()} Kronecker substitution: packing {t1 - t0:.3f} s, multiply {t2 - t1:.3f} s; "
              f"x 3 convolutions >= {3 * (t2 - t0):.2f} s (unpacking and reduction mod r not counted)")
    except ImportError:
        print("(c) gmpy2 not installed: skipped")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min-log", type=int, default=10)
    ap.add_argument("--max-log", type=int, default=20)
    ap.add_argument("--ref-max-log", type=int, default=16, help="skip the reference above this size")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None, help="threads for the fast path (default: auto)")
    ap.add_argument("--alternatives", action="store_true", help="time the approaches not taken, at 2^16")
    args = ap.parse_args()
    if args.alternatives:
        alternatives()
        return 0

    print(f"cores: {os.cpu_count()}, load average before: {os.getloadavg()}")
    t = time.perf_counter()
    from cuzk_ray.fast import ntt as ntt_fast
    t_import = time.perf_counter() - t
    t = time.perf_counter()
    ntt_fast.compute_h_fast([1] * 16, [2] * 16, [3] * 16)
    t_first = time.perf_counter() - t
    print(f"one-time: import ntt_fast (numba) {t_import:.3f} s, first call at 2^4 {t_first:.3f} s "
          f"(kernel load from cache, or compile if cold); threads: {args.threads or ntt_fast.THREADS} "
          f"from 2^{ntt_fast.PARALLEL_MIN_SIZE.bit_length() - 1}")

    rng = random.Random(1)
    print(f"{'size':>6} {'reference s':>12} {'fast s':>9} {'speed-up':>9} {'fast CPU s':>11} {'tables s':>9}")
    for log_n in range(args.min_log, args.max_log + 1):
        n = 1 << log_n
        a, b, c = ([rng.randrange(R_MOD) for _ in range(n)] for _ in range(3))
        t = time.perf_counter()
        ntt_fast.tables(Domain.of(n))  # built once per process and domain, then cached
        t_tables = time.perf_counter() - t
        (t_fast, cpu_fast), h = best(lambda: ntt_fast.compute_h_fast(a, b, c, threads=args.threads), args.repeat)
        if log_n <= args.ref_max_log:
            ref_repeat = 1 if log_n >= 14 else args.repeat
            (t_ref, _), h_ref = best(
                lambda: fr_to_limbs(qap.compute_h(fr_vector(a), fr_vector(b), fr_vector(c))), ref_repeat)
            if not (h_ref == h).all():
                print(f"MISMATCH at 2^{log_n}: fast H differs from the reference", file=sys.stderr)
                return 1
            ref, ratio = f"{t_ref:12.4f}", f"{t_ref / t_fast:8.1f}x"
        else:
            ref, ratio = f"{'(skipped)':>12}", ""
        print(f"{f'2^{log_n}':>6} {ref} {t_fast:9.4f} {ratio:>9} {cpu_fast:11.4f} {t_tables:9.4f}", flush=True)
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
