"""Build and synthesis cost of the built-in PoRep-shaped circuit, per size, on this machine.

    python jobs/bench_synthesis.py                 # filecoin shape, 2^16 .. 2^24
    python jobs/bench_synthesis.py 20 25 --public 327
    python jobs/bench_synthesis.py 16 22 --shape default

Each size runs in a fresh child process (so the peak RSS is that size's alone): build the
constraint system, synthesize --repeat partitions (median seconds), then the proportions: rows,
wires, non-zeros per row of A/B/C, share of 0/1 wires, share of the private wires A and B touch.
Single-threaded numpy (OMP/MKL threads 1): what one synthesis core does.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def measure(k: int, shape: str, public: int, repeat: int) -> dict:
    sys.path.insert(0, ROOT)
    from cuzk_ray.circuits import porep

    n = 1 << k
    lay = porep.make_layout(n, public, 0.05, shape)
    if shape == "filecoin":
        porep.synthesize(1 << 10, 4, shape=shape)  # numba kernel compiled / loaded from its cache: not timed
    t0 = time.perf_counter()
    cs = porep.build_circuit(n, public, 0.05, 0, shape=shape)
    build_s = time.perf_counter() - t0
    rss_build = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    times, w = [], None
    for i in range(repeat):
        w = None
        t0 = time.perf_counter()
        w = porep.synthesize(n, public, 0.05, 0, seed=0, proof=0, partition=i, shape=shape)
        times.append(time.perf_counter() - t0)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    parts_s, compact = None, None
    if shape == "filecoin":  # the parts alone (what a compact partition is packed from), no expansion
        pt = []
        for i in range(repeat):
            t0 = time.perf_counter()
            parts = porep.synthesize_filecoin_parts(n, public, 0, seed=0, proof=0, partition=i)
            pt.append(time.perf_counter() - t0)
        parts_s = statistics.median(pt)
        compact = porep.compact_filecoin(lay, parts).nbytes  # what the partition's batch carries
        del parts
    st = porep.shape_stats(cs, w)
    mat_bytes = sum(m.indptr.nbytes + m.indices.nbytes + m.data.nbytes for m in (cs.A, cs.B, cs.C))
    return {"k": k, "shape": shape, "public": public, **st, "n_rows": lay.n_rows, "build_s": build_s,
            "synth_s": statistics.median(times), "synth_all_s": times, "witness_bytes": w.nbytes,
            "parts_s": parts_s, "compact_bytes": compact,
            "matrix_bytes": mat_bytes, "peak_rss_build": rss_build, "peak_rss": rss}


def row(r: dict) -> str:
    gib = 2**30
    return (f"2^{r['k']:<3d} {r['rows']:>12,d} {r['wires']:>12,d} "
            f"{r['nnz_a']:6.3f} {r['nnz_b']:6.3f} {r['nnz_c']:6.3f} "
            f"{100 * r['bits']:6.2f} {100 * r['field']:6.2f} {100 * r['touch_a']:6.2f} {100 * r['touch_b']:6.2f} "
            f"{r['build_s']:8.2f} {r['synth_s']:8.3f} {r['matrix_bytes'] / gib:7.2f} {r['witness_bytes'] / gib:6.2f} "
            f"{r['peak_rss'] / gib:7.2f} {_opt(r['parts_s'], 8, 3)} {_opt(r['compact_bytes'], 9, 1, 2**20)}")


def _opt(x, width: int, digits: int, scale: float = 1.0) -> str:
    return f"{'-':>{width}s}" if x is None else f"{x / scale:{width}.{digits}f}"


HEADER = (f"{'size':6s} {'rows':>12s} {'wires':>12s} {'A/row':>6s} {'B/row':>6s} {'C/row':>6s} {'%0/1':>6s} "
          f"{'%field':>6s} {'%A':>6s} {'%B':>6s} {'build_s':>8s} {'synth_s':>8s} {'mat_GiB':>7s} {'w_GiB':>6s} "
          f"{'RSS_GiB':>7s} {'parts_s':>8s} {'cmp_MiB':>9s}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("lo", nargs="?", type=int, default=16, help="smallest log2 size (default 16)")
    ap.add_argument("hi", nargs="?", type=int, default=24, help="largest log2 size (default 24)")
    ap.add_argument("--shape", default="filecoin", choices=("filecoin", "default"))
    ap.add_argument("--public", type=int, default=None, help="public inputs (default: 327 filecoin, 4 default)")
    ap.add_argument("--repeat", type=int, default=3, help="partitions synthesized per size (median reported)")
    ap.add_argument("--json", default=None, help="also write the rows here")
    ap.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)  # child: measure one size
    a = ap.parse_args()
    public = a.public if a.public is not None else (327 if a.shape == "filecoin" else 4)
    if a.one is not None:
        print(json.dumps(measure(a.one, a.shape, public, a.repeat)))
        return 0
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "NUMBA_NUM_THREADS": "1"}
    print(f"shape={a.shape} public={public} repeat={a.repeat}; %A/%B: share of private wires in A/B; "
          "%field: wires >= 2^64; RSS: peak of the child process;\n"
          "synth_s: full uint64[n_wires, 4] witness; parts_s: its values only (bits, words, fields, products); "
          "cmp_MiB: those as a bitmap plus the non-bit wires", flush=True)
    print(HEADER, flush=True)
    rows = []
    for k in range(a.lo, a.hi + 1):
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", str(k), "--shape", a.shape,
                            "--public", str(public), "--repeat", str(a.repeat)],
                           capture_output=True, text=True, env=env)
        if p.returncode != 0:
            print(f"2^{k}: failed (exit {p.returncode}): {(p.stderr.strip().splitlines() or [''])[-1]}", flush=True)
            return 1
        r = json.loads(p.stdout.strip().splitlines()[-1])
        rows.append(r)
        print(row(r), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
