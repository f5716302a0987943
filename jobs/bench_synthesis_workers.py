"""What a Filecoin synthesis worker costs before its first witness, and how the first wave of Ray
synthesis tasks compares with the later ones (a timing, not a test):

    python jobs/bench_synthesis_workers.py                       # 32 GiB, as many workers as cores
    python jobs/bench_synthesis_workers.py --size 8MiB --workers 2 --waves 3
    python jobs/bench_synthesis_workers.py --cache DIR           # the partition cache kept there

A consistent synthetic C1 (c1_synthetic) and the partition cache (recorded the first time: ~100 s
at 32 GiB on 2 cores) under --cache. Then:

1. one fresh process, as a worker starts: seconds to read the C1, to load the witness plan
   (c2.witness_plan), of the first witness (numba's kernels loaded from their cache) and of a
   second one; its resident and anonymous (private, not file-backed) memory after each step;
   then, traced by tracemalloc (the Python and numpy heap): the C1's objects the process keeps
   and a witness task's peak above them (what FilecoinCircuit.synthesis_bytes estimates);
2. an embedded Ray with --workers CPUs: --waves x --workers synthesis tasks through the engine's
   own task (ray_executor.synthesize_partition, one thread each), the seconds each took inside
   the task, per wave (the first wave pays each worker's start-up);
3. --c1s C1s of different sectors, every partition of each, as the engine ran them before (each
   task reads its C1) and runs them now (one split task per C1 hands each task its share).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

WORKER = """
import os, sys, time
t = time.perf_counter()
def memory():
    rows = open(f"/proc/{os.getpid()}/smaps_rollup").read().splitlines()
    kb = {r.split(":")[0]: int(r.split()[1]) for r in rows if r.endswith(" kB")}
    return kb["Rss"] / 1024, kb["Anonymous"] / 1024
def step(name):
    global t
    now = time.perf_counter()
    rss, anon = memory()
    print(f"{name}\\t{now - t:.2f}\\t{rss:.0f}\\t{anon:.0f}", flush=True)
    t = time.perf_counter()
from cuzk_ray.engines.worker import limit_synthesis_threads
limit_synthesis_threads(1)
from cuzk_ray.circuits.filecoin import synthesize_partition  # noqa: F401  (what the task imports)
from cuzk_ray.filecoin import c2
from cuzk_ray.filecoin.c1 import read_c1
from cuzk_ray.filecoin.circuit.fast_witness import fast_witness
from cuzk_ray.filecoin.registry import registered_seal_proof
step("imports")
c1 = read_c1(sys.argv[1])
step("read the C1")
pl = c2.witness_plan(registered_seal_proof(sys.argv[2]), sys.argv[3])
step("load the witness plan")
w = fast_witness(pl, c1, 0)
step("first witness (1 thread)")
del w
w = fast_witness(pl, c1, 0)
step("second witness (1 thread)")
del w
import tracemalloc
from cuzk_ray.partition import Partition, to_record_batch
tracemalloc.start()
c1 = read_c1(sys.argv[1])
kept = tracemalloc.get_traced_memory()[0]
tracemalloc.reset_peak()
b = to_record_batch(Partition("p", 0, "c", fast_witness(pl, c1, 0), {}))
peak = tracemalloc.get_traced_memory()[1]
print(f"traced\t{kept}\t{peak - kept}\t{b.nbytes}", flush=True)
"""


def prepare(size: str, cache: Path) -> tuple[str, Path]:
    """(proof name, C1 path): the synthetic C1 and the partition cache, made once under ``cache``."""
    import numpy as np

    from cuzk_ray.filecoin import c1_synthetic, c2
    from cuzk_ray.filecoin.c1 import write_c1
    from cuzk_ray.filecoin.registry import registered_seal_proof

    proof = registered_seal_proof(f"StackedDrg{size}V1_1")
    cache.mkdir(parents=True, exist_ok=True)
    c1_path = cache / f"c1-{size}.json"
    if not c1_path.is_file():
        c1 = c1_synthetic.synthetic_c1(proof, bytes(31) + b"\x07", 1, bytes(32), bytes(32), np.random.default_rng(0))
        write_c1(c1, c1_path)
    t = time.perf_counter()
    c2.witness_plan(proof, str(cache))  # records the partition cache the first time
    print(f"partition cache ready in {time.perf_counter() - t:.1f} s", flush=True)
    return proof.name, c1_path


def fresh_worker(proof: str, c1_path: Path, cache: Path) -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    out = subprocess.run([sys.executable, "-c", WORKER, str(c1_path), proof, str(cache)], env=env, check=True,
                         capture_output=True, text=True).stdout
    print("\n| one fresh process | seconds | resident MiB | anonymous MiB |\n|---|---:|---:|---:|")
    rows = [line.split("\t") for line in out.strip().splitlines()]
    for name, s, rss, anon in rows[:-1]:
        print(f"| {name} | {s} | {rss} | {anon} |")
    _, kept, peak, batch = rows[-1]
    print("\n| heap of a synthesis process (tracemalloc: Python and numpy) | MiB |\n|---|---:|")
    print(f"| the C1's objects, kept (read once per process) | {int(kept) / 2**20:.1f} |")
    print(f"| one witness task's peak above them (its arrays and the Arrow batch) | {int(peak) / 2**20:.1f} |")
    print(f"| the Arrow batch it returns | {int(batch) / 2**20:.1f} |")


def waves(proof: str, c1_path: Path, cache: Path, workers: int, rounds: int) -> None:
    import ray

    from cuzk_ray.engines.ray_executor import synthesize_partition
    from cuzk_ray.filecoin.c1 import read_c1

    parts = len(read_c1(c1_path).vanilla_proofs)
    ray.init(address="local", num_cpus=workers, include_dashboard=False, log_to_driver=False)
    try:
        spec = {"kind": "filecoin", "c1": str(c1_path), "proof_type": proof, "variant": "stacked",
                "cache_dir": str(cache), "proof": 0}
        refs = [synthesize_partition.remote(dict(spec, partition=k % parts), "bench", "bench")
                for k in range(workers * rounds)]
        seconds = []
        for ref in refs:
            meta = ray.get(ref).schema.metadata
            seconds.append(float(meta[b"synthesis_s"]))
    finally:
        ray.shutdown()
    print(f"\n| Ray synthesis tasks, {workers} workers | min s | median s | max s |\n|---|---:|---:|---:|")
    for w in range(rounds):
        got = seconds[w * workers:(w + 1) * workers]
        print(f"| wave {w + 1} | {min(got):.2f} | {statistics.median(got):.2f} | {max(got):.2f} |")


def other_c1s(proof: str, c1_path: Path, count: int) -> list[Path]:
    """``count`` consistent C1s of different sectors (77, 78, ...; the first is ``c1_path``), as
    a sealing pipeline sends them: each proof's C1 is new to every worker."""
    import numpy as np

    from cuzk_ray.filecoin import c1_synthetic
    from cuzk_ray.filecoin.c1 import write_c1
    from cuzk_ray.filecoin.registry import registered_seal_proof

    paths = [c1_path]
    for sector in range(78, 77 + count):
        path = c1_path.with_name(f"{c1_path.stem}-sector{sector}.json")
        if not path.is_file():
            write_c1(c1_synthetic.synthetic_c1(registered_seal_proof(proof), bytes(31) + b"\x07", sector, bytes(32),
                                               bytes(32), np.random.default_rng(sector)), path)
        paths.append(path)
    return paths


def sectors(proof: str, c1_paths: list[Path], cache: Path, workers: int) -> None:
    """Every partition of each C1 through the engine's Ray tasks, two ways: each synthesis task
    reads its proof's C1 file (the engine before the split), and one split task per C1 hands each
    task its share (ray_executor.split_proof_inputs, the engine now). Fresh workers for each way."""
    import ray

    from cuzk_ray.engines.ray_executor import split_proof_inputs, synthesize_partition
    from cuzk_ray.filecoin.c1 import read_c1

    parts = len(read_c1(c1_paths[0]).vanilla_proofs)
    print(f"\n| {len(c1_paths)} C1s x {parts} partitions, {workers} workers | task median s | task max s "
          f"| all tasks, wall s |\n|---|---:|---:|---:|")
    for how in ("each task reads its C1", "one split per C1, shares"):
        ray.init(address="local", num_cpus=workers, include_dashboard=False, log_to_driver=False)
        try:
            t = time.perf_counter()
            refs = []
            for i, path in enumerate(c1_paths):
                spec = {"kind": "filecoin", "c1": str(path), "proof_type": proof, "variant": "stacked",
                        "cache_dir": str(cache), "proof": i}
                shares = split_proof_inputs.options(num_returns=parts).remote(spec) if how.startswith("one") else None
                refs += [synthesize_partition.remote(dict(spec, partition=k), f"p{i}", "bench", None,
                                                     None if shares is None else shares[k]) for k in range(parts)]
            seconds = [float(ray.get(ref).schema.metadata[b"synthesis_s"]) for ref in refs]
            wall = time.perf_counter() - t
        finally:
            ray.shutdown()
        print(f"| {how} | {statistics.median(seconds):.2f} | {max(seconds):.2f} | {wall:.1f} |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="32GiB", help="sector size: 2KiB, 8MiB, 512MiB, 32GiB, 64GiB")
    ap.add_argument("--cache", type=Path, default=Path("~/.cache/cuzk-ray-bench").expanduser())
    ap.add_argument("--workers", type=int, default=os.cpu_count())
    ap.add_argument("--waves", type=int, default=3)
    ap.add_argument("--c1s", type=int, default=3, help="C1s of different sectors for the split comparison (0: none)")
    args = ap.parse_args(argv)
    proof, c1_path = prepare(args.size, args.cache)
    fresh_worker(proof, c1_path, args.cache)
    waves(proof, c1_path, args.cache, args.workers, args.waves)
    if args.c1s:
        sectors(proof, other_c1s(proof, c1_path, args.c1s), args.cache, args.workers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
