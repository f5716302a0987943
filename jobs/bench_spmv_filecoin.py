"""a, b = A.w, B.w of the real PoRep partition circuit on the GPU (cuda/spmv.py), with the rows of
more than LONG_ROW terms summed a warp each (spmv_csr_long) and with every row a thread (the
kernel before, LONG_ROW = None); then h from the witness with bellperson's H (the engine's
"gpu.h" section: a, b, c, then H), in seven transforms and in six (cuda.ntt.SIX_TRANSFORM_H).
Every way must give the same a, b and h, bit for bit.

    python jobs/bench_spmv_filecoin.py --cache-dir DIR [--sector-size 32GiB] [--runs 5]

The matrices come from the partition cache under DIR (bench_filecoin_c2.py --cache-dir: made by
jobs/gpu_issue30.sh), memory-mapped (digests not checked again); the witness is random field
elements (the products' time does not depend on the values; the witness does not satisfy the
circuit, which the products do not need: c = a b on the device, and h is the quotient of a b - c
by the domain's Z, not 0). Prints a table of medians (ms); exit 1 if the ways differ.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "jobs"))

from bench_kernels import random_fr, time_ms  # noqa: E402  (the kernel bench's random limbs and CUDA-event timing)


def measure(cp, cs, w, n: int, long_row: int | None, six: bool, runs: int) -> tuple:
    """(a, b, h) with the matrices uploaded for ``long_row`` (cuda.spmv.LONG_ROW) and H in six
    transforms or seven (``six``: cuda.ntt.SIX_TRANSFORM_H), after timing A.w, B.w and h from the
    witness; prints the table's row."""
    from cuzk_ray.cuda import ntt as cuda_ntt
    from cuzk_ray.cuda import spmv as cuda_spmv

    cuda_spmv.LONG_ROW, cuda_ntt.SIX_TRANSFORM_H = long_row, six
    dcs = cuda_spmv.DeviceConstraintSystem(cs)
    out = cp.empty((n, 4), dtype=cp.uint64)
    a_ms = time_ms(cp, lambda: dcs.A.matvec_into(out, w.limbs), runs)
    a = out.copy()
    b_ms = time_ms(cp, lambda: dcs.B.matvec_into(out, w.limbs), runs)
    b = out.copy()
    h_ms = time_ms(cp, lambda: cuda_spmv.h_from_witness(dcs, w, qap="bellperson"), runs)
    h = cuda_spmv.h_from_witness(dcs, w, qap="bellperson").copy()
    label = "all" if long_row is None else f"<= {long_row} terms"
    print(f"| {label} | {int(dcs.A.long_rows.shape[0])} | {6 if six else 7} | {a_ms:.2f} | {b_ms:.2f} | {h_ms:.2f} |",
          flush=True)
    return a, b, h


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache-dir", required=True)
    ap.add_argument("--sector-size", default="32GiB")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()

    from cuzk_ray.cuda import spmv as cuda_spmv
    from cuzk_ray.cuda.device import check_fr
    from cuzk_ray.filecoin.circuit.partition_cache import cache_paths
    from cuzk_ray.filecoin.circuit.partition_record import load_partition_recording
    from cuzk_ray.filecoin.registry import registered_seal_proof
    from cuzk_ray.kernels.loader import require_cupy
    from cuzk_ray.ref.bellperson_qap import bellperson_domain

    cp = require_cupy()
    config = registered_seal_proof(f"StackedDrg{args.sector_size}V1_1").config
    t0 = time.perf_counter()
    cs = load_partition_recording(cache_paths(args.cache_dir, config).recording, verify_hashes=False,
                                  check_density=False).cs
    n = bellperson_domain(cs.n_constraints).n
    print(f"recording: {cs.n_constraints} constraints, {cs.n_wires} wires, nnz A {cs.A.nnz} B {cs.B.nnz}, "
          f"domain {n} ({time.perf_counter() - t0:.1f} s)", flush=True)
    w = check_fr(random_fr(cp, (cs.n_wires, 4), 7), "witness")
    print("| rows of a thread | long rows (A) | H transforms | A.w ms | B.w ms | h from the witness ms |")
    print("|---|---:|---:|---:|---:|---:|")
    ways = [(None, False), (cuda_spmv.LONG_ROW or 16, False), (cuda_spmv.LONG_ROW or 16, True)]
    first, ok = None, True
    for long_row, six in ways:  # each way's a, b, h against the first's, then dropped (VRAM: ~13 GB each)
        got = measure(cp, cs, w, n, long_row, six, args.runs)
        if first is None:
            first = got
        else:
            same = [bool(cp.array_equal(x, y)) for x, y in zip(first, got)]
            ok &= all(same)
            print("a, b, h against the first way: " + ", ".join("equal" if e else "DIFFERENT" for e in same))
        got = None
        cp.get_default_memory_pool().free_all_blocks()
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
