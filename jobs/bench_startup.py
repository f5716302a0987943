"""Whole-process time of a circom user's proofs (issue 17): snarkjs vs the `cuzk-ray` command as
installed (default engine=auto) vs engine=local vs engine=ray, 1 and 10 witnesses per size.

    python jobs/bench_startup.py [--k 10,12,14] [--rounds 3] [--cache-dir DIR] [--json FILE]
                                 [--tools snarkjs,default,local,ray]

Artefacts per size (circuit, zkey, witness) are jobs/bench_snarkjs.py's, made and cached by it
under ``<cache-dir>/k<k>/`` (a size whose powers of tau are not cached is made here: about an hour
at 2^16 on 2 cores). Ten distinct witnesses per size are computed once with ``snarkjs wtns
calculate`` (inputs x = 3..12) into ``<cache-dir>/k<k>/batch/``.

Timed, wall clock from ``subprocess`` start to exit, the tools alternated in order every round:

- snarkjs 1: ``snarkjs groth16 prove circuit.zkey w.wtns proof.json public.json``;
  snarkjs 10: that command once per witness, one after the other (snarkjs has no batch form);
- cuzk-ray 1: ``python -m cuzk_ray.cli groth16 prove circuit.zkey w.wtns proof.json public.json``
  (the installed ``cuzk-ray`` runs the same function); cuzk-ray 10: ``... groth16 prove
  circuit.zkey batch/ -o OUT`` (one process for the ten);
- the same with ``engine=local`` and with ``engine=ray`` (an embedded Ray: its start-up included).

Every cuzk-ray proof is checked with ``snarkjs groth16 verify`` (not timed). Also timed: an
embedded ``ray.init()`` + ``ray.shutdown()`` alone, with and without shipping the package
(runtime_env py_modules) and one actor round trip: what remains of Ray's start-up.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_snarkjs as bs  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BATCH = 10


def env(**extra) -> dict:
    e = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    e["PYTHONPATH"] = str(ROOT) + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    e.update(extra)
    return e


def batch_witnesses(meta: dict, snarkjs: str) -> list[Path]:
    """Ten distinct witnesses of the size's circuit (cached)."""
    d = Path(meta["dir"])
    b = d / "batch"
    b.mkdir(exist_ok=True)
    out = []
    for i in range(BATCH):
        w = b / f"w{i:02d}.wtns"
        if not w.exists():
            inp = b / f"input{i:02d}.json"
            inp.write_text(json.dumps({"x": str(3 + i), "y": "123456789012345678901234567890"}) + "\n")
            bs.sh([snarkjs, "wtns", "calculate", str(d / "circuit_js" / "circuit.wasm"), str(inp), str(w)])
        out.append(w)
    return out


def ray_init_s(ship: bool) -> float:
    """An embedded ray.init() + one actor round trip + shutdown, whole process (what Ray's start
    costs the job; RAY_AUTH_MODE=token as the job sets it)."""
    code = ("import os, ray\n"
            f"kw = {{'runtime_env': {{'py_modules': [{str(ROOT / 'cuzk_ray')!r}]}}}} if {ship} else {{}}\n"
            "ray.init(address='local', include_dashboard=False, _node_ip_address='127.0.0.1', "
            "logging_level='WARNING', **kw)\n"
            "class A:\n    def f(self):\n        return 1\n"
            "a = ray.remote(A).options(num_cpus=0).remote()\nray.get(a.f.remote())\nray.shutdown()\n")
    dt, _ = bs.sh([sys.executable, "-c", code], env=env(RAY_AUTH_MODE="token"))
    return dt


class Runner:
    def __init__(self, meta: dict, snarkjs: str, work: Path, witnesses: list[Path]):
        self.d, self.snarkjs, self.work, self.ws = Path(meta["dir"]), snarkjs, work, witnesses
        self.cache = self.d / "cuzk-cache"
        self.n = 0

    def _dir(self) -> Path:
        self.n += 1
        p = self.work / f"r{self.n}"
        p.mkdir()
        return p

    def snarkjs_run(self, count: int) -> float:
        d = self._dir()
        t = 0.0
        for i, w in enumerate(self.ws[:count]):
            dt, _ = bs.sh([self.snarkjs, "groth16", "prove", str(self.d / "circuit.zkey"), str(w),
                           str(d / f"p{i}.json"), str(d / f"u{i}.json")])
            t += dt
        shutil.rmtree(d)
        return t

    def cuzk_run(self, count: int, engine: str | None) -> float:
        d = self._dir()
        extra = [f"cache_dir={self.cache}"] + ([f"engine={engine}"] if engine else [])
        zkey = str(self.d / "circuit.zkey")
        cli = [sys.executable, "-m", "cuzk_ray.cli", "groth16", "prove", zkey]
        if count == 1:
            dt, out = bs.sh(cli + [str(self.ws[0]), str(d / "proof.json"), str(d / "public.json")] + extra, cwd=d)
            triples = [(d / "public.json", d / "proof.json")]
        else:
            wdir = self.ws[0].parent
            dt, out = bs.sh(cli + [str(wdir), "-o", str(d / "out")] + extra, cwd=d)
            parts = sorted((d / "out" / "proofs").glob("*/partition-0"))
            assert len(parts) == count, out
            triples = [(p / "public.json", p / "proof.json") for p in parts]
        want = "engine: ray" if engine == "ray" else "engine: local"
        assert want in out, out
        for pub, proof in triples:
            _, v = bs.sh([self.snarkjs, "groth16", "verify", str(self.d / "verification_key.json"), str(pub),
                          str(proof)])
            assert "OK" in v, v
        shutil.rmtree(d)
        return dt


TOOLS = [("snarkjs", None), ("cuzk-ray (default)", "default"), ("cuzk-ray engine=local", "local"),
         ("cuzk-ray engine=ray", "ray")]


def bench_size(cache: Path, k: int, rounds: int, snarkjs: str, circom: str, tools=TOOLS) -> dict:
    meta = bs.ensure_artefacts(cache, k, snarkjs, circom)
    ws = batch_witnesses(meta, snarkjs)
    times: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix=f"bench-startup-k{k}-") as tmp:
        r = Runner(meta, snarkjs, Path(tmp), ws)
        r.cuzk_run(1, "local")  # the zkey's conversion, cached; numba's kernels: not in the rounds
        for rnd in range(rounds):
            order = tools if rnd % 2 == 0 else tools[::-1]
            for name, engine in order:
                for count in (1, BATCH):
                    if name == "snarkjs":
                        dt = r.snarkjs_run(count)
                    else:
                        dt = r.cuzk_run(count, None if engine == "default" else engine)
                    times.setdefault(f"{name}|{count}", []).append(round(dt, 3))
                    bs.log(f"  2^{k} round {rnd} {name:22s} x{count:<3d} {dt:7.2f} s  load {bs.loadavg()}")
    med = {key: statistics.median(v) for key, v in times.items()}
    return {"k": k, "constraints": meta["r1cs"]["constraints"], "runs": times, "median": med}


def table(results: list[dict], ray_rows: dict) -> str:
    lines = ["| size | witnesses | snarkjs s | cuzk-ray (default) s | x snarkjs | engine=local s | engine=ray s |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        for count in (1, BATCH):
            m = {name: r["median"].get(f"{name}|{count}") for name, _ in TOOLS}
            cell = {name: "-" if v is None else f"{v:.2f}" for name, v in m.items()}  # a tool left out
            lines.append(f"| 2^{r['k']} | {count} | {cell['snarkjs']} | {cell['cuzk-ray (default)']} | "
                         f"{m['snarkjs'] / m['cuzk-ray (default)']:.2f}x | {cell['cuzk-ray engine=local']} | "
                         f"{cell['cuzk-ray engine=ray']} |")
    if ray_rows:
        lines.append("")
        lines.append(f"embedded Ray alone (init + one actor + shutdown, whole process, median): "
                     f"{ray_rows['plain']:.2f} s; shipping the package too (runtime_env py_modules): "
                     f"{ray_rows['shipped']:.2f} s")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--k", default="10,12,14", help="comma-separated log2 sizes (default 10,12,14)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cache-dir", default="~/.cache/cuzk-ray/bench-snarkjs")
    ap.add_argument("--json", default=None)
    ap.add_argument("--tools", default="snarkjs,default,local,ray",
                    help="which of snarkjs,default,local,ray to time (snarkjs and default are always in: "
                         "their ratio is the table's); without ray, Ray's start-up alone is not timed either")
    args = ap.parse_args(argv)
    wanted = set(args.tools.split(",")) | {"snarkjs", "default"}
    unknown = wanted - {"snarkjs", "default", "local", "ray"}
    if unknown:
        ap.error(f"--tools: unknown {sorted(unknown)} (snarkjs, default, local, ray)")
    tools = [t for t in TOOLS if (t[1] or "snarkjs") in wanted]
    cache = Path(args.cache_dir).expanduser()
    snarkjs, circom = bs.tools()
    bs.log(f"nproc {os.cpu_count()}; load {bs.loadavg()}; {time.strftime('%Y-%m-%d %H:%M:%S %Z')}")
    ray_runs = {"plain": [], "shipped": []} if "ray" in wanted else {}
    for _ in range(args.rounds if ray_runs else 0):
        for kind in ("plain", "shipped"):
            ray_runs[kind].append(round(ray_init_s(kind == "shipped"), 3))
    if ray_runs:
        bs.log(f"  ray.init alone: {ray_runs}")
    results = []
    for k in [int(x) for x in args.k.split(",") if x.strip()]:
        results.append(bench_size(cache, k, args.rounds, snarkjs, circom, tools))
        if args.json:
            Path(args.json).write_text(json.dumps({"ray_init": ray_runs, "sizes": results}, indent=1) + "\n")
    bs.log(table(results, {k: statistics.median(v) for k, v in ray_runs.items()}))
    bs.log(f"load at end {bs.loadavg()}; {time.strftime('%Y-%m-%d %H:%M:%S %Z')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
