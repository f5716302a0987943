"""Record a registered sector size's partition circuit (prefix + one challenge, replicated) to disk
and print the nine counts read back from the assembled arrays, seconds and peak memory:

    python jobs/record_filecoin.py 2KiB                  # 2KiB 8MiB 512MiB 32GiB
    python jobs/record_filecoin.py 32GiB --out DIR       # default ~/.cache/cuzk-ray/recordings
    python jobs/record_filecoin.py 8MiB --check-direct   # also every challenge synthesized: the
                                                         # replication equals the direct recording
    python jobs/record_filecoin.py 32GiB --with-tape     # c2's partition cache instead: recording AND
                                                         # witness tape from one synthesis, then the
                                                         # fast witness of a synthetic C1's partition 0

With ``--with-tape`` the recording is made as c2 makes it (filecoin/circuit/partition_cache.py,
under OUT/partitions), its counts checked as above, and partition 0 of a consistent synthetic C1
(filecoin/c1_synthetic.py) is replayed: its wire count must be the recording's and its public
inputs those the verifier derives from the C1 (c2.seal_inputs).

The 32 GiB counts are checked against cuzk's published structure (curio extern/cuzk/
cuzk-project.md: 328 inputs, 130,169,893 aux, 130,278,869 constraints with the 328 input
constraints, non-zeros of A / B / C 309,405,051 / 130,327,340 / 282,656,500, density popcounts
a_aux 129,753,292, b_input 1, b_aux 33,112,281); exits 1 on any difference. Phases: "synthesis"
(the prefix counted, prefix + one challenge recorded compactly), "assembly" (the partition's
matrices written chunk by chunk, hashed), "load" (memory-mapped, every file's SHA-256, densities
recomputed from the matrices, counts from the arrays).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CUZK_32G = {"num_inputs": 328, "num_aux": 130_169_893, "num_constraints": 130_278_869, "nnz_a": 309_405_051,
            "nnz_b": 130_327_340, "nnz_c": 282_656_500, "a_aux_density": 129_753_292, "b_input_density": 1,
            "b_aux_density": 33_112_281}
SIZES = {"2KiB": 2 << 10, "8MiB": 8 << 20, "512MiB": 512 << 20, "32GiB": 32 << 30}


def peak_rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1 << 20)  # ru_maxrss is KiB on Linux


def record_size(label: str, out: Path, force: bool, check_direct: bool) -> bool:
    from cuzk_ray.filecoin import registry
    from cuzk_ray.filecoin.circuit.partition_record import (
        load_partition_recording,
        partition_cache_path,
        save_blocks,
        synthesize_blocks,
    )
    from cuzk_ray.filecoin.circuit.stacked import tree_shape
    from cuzk_ray.timing import StageTimes

    config = registry.registered_seal_proof(f"StackedDrg{label}V1_1").config
    path = partition_cache_path(out, "stacked", config.sector_size)
    if path.exists():
        if not force:
            raise SystemExit(f"{path}: already recorded (--force records it again)")
        shutil.rmtree(path)
    times = StageTimes()
    recorded = config.challenges_per_partition if check_direct else 1
    with times.stage("synthesis"):
        blocks = synthesize_blocks(tree_shape(config), config.shape.layers, config.challenges_per_partition,
                                   f"stacked-{config.sector_size}", recorded)
    with times.stage("assembly"):
        save_blocks(path, blocks)
    ok = not check_direct or direct_equal(blocks)
    del blocks
    with times.stage("load"):
        rec = load_partition_recording(path)
    print(f"{label}: {config.challenges_per_partition} challenges, layout {blocks_text(rec)}")
    print("  " + "  ".join(f"{k} {v:.1f} s" for k, v in times.items()) + f"  peak RSS {peak_rss_gib():.1f} GiB")
    size = sum(f.stat().st_size for f in path.iterdir())
    print(f"  {path}  {size / 2**30:.2f} GiB on disk")
    return print_counts(asdict(rec.shape), CUZK_32G if label == "32GiB" else None) and ok


def record_with_tape(label: str, out: Path, force: bool) -> bool:
    """c2's partition cache for ``label``: one synthesis, counts checked, a synthetic C1's partition 0
    replayed and its public inputs compared with the verifier's."""
    import time

    import numpy as np

    from cuzk_ray.filecoin import c1_synthetic, c2, registry
    from cuzk_ray.filecoin.circuit import partition_cache
    from cuzk_ray.filecoin.circuit.fast_witness import fast_witness
    from cuzk_ray.filecoin.circuit.replay import plan

    proof = registry.registered_seal_proof(f"StackedDrg{label}V1_1")
    paths = partition_cache.cache_paths(out, proof.config)
    if paths.manifest.exists() and force:
        paths.manifest.unlink()
    t0 = time.perf_counter()
    made = not paths.manifest.exists()
    partition_cache.ensure_partition_cache(out, proof.config)
    t1 = time.perf_counter()
    cache = partition_cache.cached_partition(out, proof.config)
    t2 = time.perf_counter()
    print(f"{label}: {'recorded' if made else 'cached'} {t1 - t0:.1f} s (synthesis + recording + tape written), "
          f"read back {t2 - t1:.1f} s; peak RSS {peak_rss_gib():.1f} GiB", flush=True)
    size = sum(f.stat().st_size for f in paths.recording.iterdir()) + paths.tape.stat().st_size
    print(f"  {paths.recording.parent}  {size / 2**30:.2f} GiB on disk; tape layout {cache.tape.layout}")
    ok = print_counts(asdict(cache.recording.shape), CUZK_32G if label == "32GiB" else None)
    c1 = c1_synthetic.synthetic_c1(proof, bytes(31) + b"\x09", 1, bytes([1]) * 32, bytes([2]) * 32,
                                   np.random.default_rng(0))
    pl = plan(cache.tape)
    t3 = time.perf_counter()
    w = fast_witness(pl, c1, 0)
    t4 = time.perf_counter()
    w = fast_witness(pl, c1, 0)
    t5 = time.perf_counter()
    n_in = cache.recording.shape.num_inputs
    public = [int.from_bytes(v.tobytes(), "little") for v in w.wires(1, n_in)]
    same = public == c2.seal_inputs(c1)[0]
    print(f"  fast witness of a synthetic C1's partition 0: {t4 - t3:.2f} s (first, with numba's compile or cache "
          f"load), {t5 - t4:.2f} s (again); {w.n_wires:,} wires ({w.n_full:,} full); public inputs equal the "
          f"verifier's: {same}; peak RSS {peak_rss_gib():.1f} GiB", flush=True)
    return ok and same and w.n_wires == cache.recording.cs.n_wires


def blocks_text(rec) -> str:
    return f"{rec.cs.n_constraints:,} rows over {rec.cs.n_wires:,} columns"


def print_counts(have: dict, cuzk: dict | None) -> bool:
    ok = True
    for key, value in have.items():
        if cuzk is None:
            print(f"  {key:<16} {value:>14,}")
            continue
        ok &= value == cuzk[key]
        print(f"  {key:<16} {value:>14,}  cuzk {cuzk[key]:>14,}  {'OK' if value == cuzk[key] else 'DIFFERS'}")
    return ok


def direct_equal(blocks) -> bool:
    """Every block periodic, and the replicated partition equal to the direct one array for array."""
    import numpy as np

    from cuzk_ray.filecoin.circuit.partition_record import assemble, check_periodic

    check_periodic(blocks)
    rep, direct = assemble(blocks), assemble(blocks.direct())
    same = all(np.array_equal(getattr(getattr(rep.cs, m), part), getattr(getattr(direct.cs, m), part))
               for m in "ABC" for part in ("indptr", "entries", "table")) and rep.shape == direct.shape
    print(f"  every challenge block periodic; replicated == direct, array for array: {same}")
    return same


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sizes", nargs="+", choices=list(SIZES))
    ap.add_argument("--out", default="~/.cache/cuzk-ray/recordings", help="where recordings are written")
    ap.add_argument("--force", action="store_true", help="record again over an existing recording")
    ap.add_argument("--check-direct", action="store_true",
                    help="synthesize every challenge and compare with the replication (small sizes)")
    ap.add_argument("--with-tape", action="store_true", help="c2's partition cache (recording + witness tape, one "
                                                             "synthesis) under OUT/partitions, and a fast witness")
    args = ap.parse_args()
    ok = True
    for label in args.sizes:
        try:
            if args.with_tape:
                ok &= record_with_tape(label, Path(args.out).expanduser(), args.force)
            else:
                ok &= record_size(label, Path(args.out).expanduser(), args.force, args.check_direct)
        except ValueError as e:  # a corrupt recording, a layout that does not fit: one line, no traceback
            print(f"record_filecoin: {e}", file=sys.stderr)
            sys.exit(2)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
