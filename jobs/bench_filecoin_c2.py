"""Filecoin C2 benchmarks, two forms.

End to end through the command line (no --repeat): seal a small sector, write its C1, prove it with
``cuzk-ray filecoin c2`` (a development .params made on first use and cached), check the MultiProof
with ``cuzk-ray filecoin verify``; prints the seconds of each step.

    python jobs/bench_filecoin_c2.py [--sector-size 2KiB|8MiB] [--cache-dir DIR] [--variant stacked]

The engine's steady state (--repeat N, issue 30's 32 GiB figure): a C1 (sealed at 2 KiB / 8 MiB; at
32 GiB and 64 GiB a consistent synthetic one, filecoin/c1_synthetic.py), the partition cache
(recording + witness tape from one blank synthesis), the fast witness of partition 0 timed in the
driver, a development key made by the setup on --backend (on cuda: the GPU, streamed to disk,
disk room checked first) in the same run as a .params decoded into a mapped bundle (--key params,
a user's path) or straight into the bundle (--key bundle), then N proofs of the C1 through the
engine, every partition verified by the engine and each proof's MultiProof against its C1's
public inputs. --distinct: N different C1s (sector ids 77, 78, ...), one per proof, as a sealing
pipeline sends them (on Ray each proof's C1 is parsed by its split task, not by its ten synthesis
tasks), and proof 0's MultiProof also refused against C1 1's inputs. Every phase prints its time
as it ends (a run cut off still shows how far it got); at the end a table, and the figures as
JSON at --out.

    python jobs/bench_filecoin_c2.py --sector-size 32GiB --backend cuda --pw 12 --engine ray --repeat 4 \\
        --key bundle --out figures.json
    python jobs/bench_filecoin_c2.py --sector-size 2KiB --backend cpu --variant inputs --repeat 2   # seconds

s/proof (steady state) = (last proof's finish - first proof's finish) / (N - 1): the first proof
warms the pipeline (cuzk_ray.bench.steady_window). Not a test. The real 2 KiB circuit (2.69M
constraints, domain 2^22) needs ~10M G1 points of key: ~2 min of the CPU setup on two cores
(fast/fixed_base.py), a minute on the GPU; CI proves it (tests/test_filecoin_c2_real.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout too

from cuzk_ray.filecoin import c2, fr32, registry, seal  # noqa: E402
from cuzk_ray.filecoin.c1 import write_c1  # noqa: E402
from cuzk_ray.filecoin.commands import main as filecoin_main  # noqa: E402
from cuzk_ray.filecoin.sector_args import parse_size  # noqa: E402

PROVER_ID, SECTOR_ID, TICKET, SEED = bytes(31) + b"\x07", 77, bytes([12]) * 32, bytes([13]) * 32
PROOFS = {2048: "StackedDrg2KiBV1_1", 8 << 20: "StackedDrg8MiBV1_1", 32 << 30: "StackedDrg32GiBV1_1",
          64 << 30: "StackedDrg64GiBV1_1"}
SEALABLE = 8 << 20  # sealed for real up to here; above, a synthetic consistent C1
GB = 1e9


class Phases:
    """Each phase's seconds, printed (flushed) as it ends."""

    def __init__(self):
        self.times: dict[str, float] = {}
        self.t = time.perf_counter()

    def done(self, name: str, note: str = "") -> float:
        now = time.perf_counter()
        self.times[name] = now - self.t
        print(f"[phase] {name}: {self.times[name]:.1f} s{'  ' + note if note else ''}", flush=True)
        self.t = now
        return self.times[name]


def make_c1(proof, work: Path, sector_id: int = SECTOR_ID, name: str = "c1.json"):
    """The C1 of a sealed sector (small sizes) or a consistent synthetic one (large), written to
    work/name."""
    import numpy as np

    from cuzk_ray.filecoin import c1_synthetic

    size = proof.sector_size
    if size <= SEALABLE:
        piece = bytearray(fr32.unpadded_size(size))
        piece[0] = 1
        c1 = seal.commit_phase1(seal.seal_sector(bytes(piece), proof, PROVER_ID, sector_id, TICKET), SEED)
    else:
        rng = np.random.default_rng(sector_id - SECTOR_ID)  # 0 for sector 77: the C1 of earlier runs
        c1 = c1_synthetic.synthetic_c1(proof, PROVER_ID, sector_id, TICKET, SEED, rng)
    write_c1(c1, work / name)
    return c1


def e2e(args, proof, work: Path) -> int:
    """The command-line form (no --repeat)."""
    ph = Phases()
    c1 = make_c1(proof, work)
    ph.done("seal + C1")
    setup = c2.circuit_setup(proof, args.cache_dir, args.variant)
    ph.done("partition cache (cached after the first run)", str(setup.recording.shape))
    c2.ensure_dev_params(setup, args.cache_dir, backend=args.backend)
    ph.done("development .params (cached after the first run)")
    out = work / "proof.bin"
    code = filecoin_main(["c2", str(work / "c1.json"), "--variant", args.variant, "--cache-dir", args.cache_dir,
                          "--backend", args.backend, "-o", str(out)])
    ph.done("c2 (key load, witness, prove, verify, write)")
    if code != 0:
        return code
    vk = c2.dev_key_files(setup, args.cache_dir)[1]
    code = filecoin_main(["verify", str(out), "--vk", str(vk), "--registered-proof", proof.name,
                          "--comm-r", c1.comm_r.hex(), "--comm-d", c1.comm_d.hex(), "--prover-id", PROVER_ID.hex(),
                          "--sector-id", str(SECTOR_ID), "--ticket", TICKET.hex(), "--seed", SEED.hex()])
    ph.done("filecoin verify")
    return code


def c1_names(args) -> list[str]:
    """The C1 file of each proof: c1.json --repeat times, or with --distinct c1.json, c1-1.json, ..."""
    n = args.repeat or 1
    return [f"c1-{i}.json" if args.distinct and i else "c1.json" for i in range(n)]


def engine_config(args, work: Path) -> dict:
    from cuzk_ray.job import compose

    over = ["circuit=filecoin", f"backend={args.backend}", f"setup_backend={args.backend}", f"engine={args.engine}"]
    if args.pw:
        over.append(f"pw={args.pw}")
    cfg = compose(over + list(args.set or []))
    # proof i proves circuit.c1[i] (a list: one proof per C1 file; the same file --repeat times
    # unless --distinct)
    cfg["circuit"].update(c1=[str(work / name) for name in c1_names(args)], variant=args.variant)
    cfg["cache_dir"], cfg["output_dir"] = args.cache_dir, str(work / "run")
    return cfg


def median(xs) -> float | None:
    import numpy as np

    xs = [x for x in xs if x == x]  # drop NaN
    return float(np.median(xs)) if xs else None


def bundle_key(setup, args, fig: dict, ph):
    """The development key made by the setup straight into a native key bundle (or found cached)
    and memory-mapped: on one node the prover actors map the same files (one page-cache copy, none
    in Ray's object store; the matrices hard-linked from the partition cache). The same key as
    --key params's (tests/test_filecoin_c2.py)."""
    pk, vk, made = c2.ensure_dev_bundle(setup, args.cache_dir, backend=args.backend)
    fig["key_bytes"], fig["key_made"] = pk.nbytes, made
    ph.done("development key bundle " + ("made" if made else "cached"), f"{pk.nbytes / GB:.2f} GB, memory-mapped")
    return pk, vk


def params_key(setup, args, fig: dict, ph, save):
    """The development .params made (streamed, GPU setup with --backend cuda) or found cached, then
    decoded once into a mapped key bundle (c2.mapped_params): the path a user's c2 takes. Disk:
    the .params and the bundle (~2 x 47 GB at 32 GiB, more than the H200 machine's 64 GB)."""
    params, made = c2.ensure_dev_params(setup, args.cache_dir, backend=args.backend)
    fig["params_bytes"], fig["params_made"] = params.stat().st_size, made
    ph.done("development .params " + ("made" if made else "cached"), f"{params.stat().st_size / GB:.2f} GB")
    save()
    vk = c2.dev_key_files(setup, args.cache_dir)[1]
    pk = c2.mapped_params(params, setup, args.cache_dir, c2.dev_meta(0))
    fig["key_bytes"] = pk.nbytes
    ph.done("key mapped (decoded into a bundle once)", f"{pk.nbytes / GB:.2f} GB")
    return pk, vk


def steady(args, proof, work: Path) -> int:
    """The engine form (--repeat N): see the module docstring."""
    from cuzk_ray.bench import summarize
    from cuzk_ray.circuits import make_circuit
    from cuzk_ray.engines import EngineSettings, open_engine
    from cuzk_ray.engines.memory import MemorySampler
    from cuzk_ray.filecoin.params import read_vk
    from cuzk_ray.preflight import PreflightError, fit_gpu, preflight

    fig: dict = {"sector_size": proof.sector_size, "proof": proof.name, "variant": args.variant,
                 "backend": args.backend, "engine": args.engine, "repeat": args.repeat, "key": args.key,
                 "distinct_c1s": args.distinct,
                 "cpus": os.cpu_count(), "set": args.set or []}
    ph = Phases()
    fig["phases_s"] = ph.times

    def save():
        if args.out:
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(args.out).with_suffix(".tmp")
            tmp.write_text(json.dumps(fig, indent=1, default=str))
            tmp.replace(args.out)

    c1 = make_c1(proof, work)
    ph.done("C1", f"{len(c1.vanilla_proofs)} partitions x {len(c1.vanilla_proofs[0])} challenges")
    c1s = [c1] * args.repeat  # proof i's C1, as c1_names names its file
    if args.distinct:
        c1s[1:] = [make_c1(proof, work, SECTOR_ID + i, name) for i, name in enumerate(c1_names(args)[1:], 1)]
        ph.done(f"{len(c1s) - 1} more C1s (sector ids {SECTOR_ID + 1}..{SECTOR_ID + len(c1s) - 1})")
    with MemorySampler(0.5) as setup_mem:
        setup = c2.circuit_setup(proof, args.cache_dir, args.variant)
        fig["circuit"] = vars(setup.recording.shape)
        ph.done("partition cache", str(setup.recording.shape))
        if setup.plan is not None:
            c2.partition_witness(setup, c1, 0)  # numba: compile or load from its cache
            t0 = time.perf_counter()
            w = c2.partition_witness(setup, c1, 0)
            fig["driver_witness_s"] = time.perf_counter() - t0
            ph.done("fast witness, partition 0 (warm-up + timed)",
                    f"{fig['driver_witness_s']:.2f} s, {w.n_wires} wires, {w.n_full} full")
            del w
        save()
        if args.key == "bundle":
            pk, vk = bundle_key(setup, args, fig, ph)
        else:
            pk, vk = params_key(setup, args, fig, ph, save)
    fig["setup_peak_pss_bytes"], fig["setup_peak_used_bytes"] = setup_mem.peak_pss, setup_mem.peak_used
    cfg = engine_config(args, work)
    settings = EngineSettings.from_config(cfg)
    circuit = make_circuit(cfg["circuit"])
    circuit.adopt(setup, pk, vk, args.cache_dir)
    # as the job: one partition at a time where two do not fit
    settings = fit_gpu(settings, circuit, cfg["cache_dir"], cfg["setup_seed"], print)
    fig["gpu_concurrency"] = settings.gpu_concurrency
    try:  # as the job does once the key is mapped: a run that cannot fit is refused before any prover starts
        fig["preflight"] = [n.line() for n in preflight(settings, circuit, args.cache_dir)]
    except PreflightError as e:
        fig["refused"] = str(e)
        save()
        print(f"preflight refused the run: {e}", flush=True)
        return 2
    ph.done("preflight", "; ".join(n for n in fig["preflight"] if n.startswith("VRAM")))
    mem = MemorySampler(0.5)
    with open_engine(settings, pk, setup.recording.cs, circuit, around=mem) as engine:
        ph.done("engine started", f"{len(engine.provers)} x {engine.backend}, pw={engine.pw}")
        t_run = time.perf_counter()

        def progress(res, done, total):  # a line per verified partition: a run cut off still shows its pace
            t, at = res.times, time.perf_counter() - t_run
            print(f"  proof {res.proof_index} partition {res.partition} verified at {at:.1f} s "
                  f"({done}/{total}): witness {t.get('synthesis', float('nan')):.2f} s, gpu "
                  f"{t.get('gpu', float('nan')):.2f} s, prove {t.get('prove_total', float('nan')):.2f} s", flush=True)

        batch = engine.run(args.repeat, seed=0, progress=progress)
    ph.done(f"{args.repeat} proof(s) of {proof.config.partitions} partitions")
    ok = not batch.failed and all(r.verified for r in batch.results)
    fig["failed"] = {str(k): v for k, v in batch.failed.items()}
    for pid, why in sorted(fig["failed"].items()):
        print(f"{pid} failed: {why}", flush=True)
    multi = multiproofs(batch, args.repeat, proof.config.partitions)
    if len(multi) != args.repeat:
        fig["all_verified"] = False
        save()
        print(f"proof(s) {sorted(set(range(args.repeat)) - set(multi))}: partitions missing; no MultiProof to check",
              flush=True)
        return 1
    key = read_vk(vk)
    for i, proofs in sorted(multi.items()):  # raises naming the proof's partitions that fail
        c2.check_multiproof(key, c1s[i], proofs)
    ph.done("every MultiProof vs its C1's inputs")
    if args.distinct and args.repeat > 1:
        try:
            c2.check_multiproof(key, c1s[1], multi[0])
        except ValueError:
            ph.done("MultiProof 0 refused against C1 1's inputs")
        else:
            print("MultiProof 0 verified against C1 1's inputs: the proofs do not depend on their C1", flush=True)
            return 1
    n_dev = 1 if args.backend == "cuda" else None
    summary = summarize(batch, max(1, args.repeat - 1), n_dev, warmup=1 if args.repeat > 1 else 0)
    fig.update({
        "s_per_proof_steady": summary["s_per_proof"] if args.repeat > 1 else None,
        "proving_wall_s": batch.wall_s, "partitions_proved": len(batch.results), "all_verified": ok,
        "witness_s_per_partition": median(r.times.get("synthesis", float("nan")) for r in batch.results),
        "gpu_s_per_partition": median(r.times.get("gpu", float("nan")) for r in batch.results),
        "prove_s_per_partition": median(r.times.get("prove_total", float("nan")) for r in batch.results),
        "stage_median_s": summary["stage_median_s"], "vram_peak_bytes": summary.get("vram_peak_bytes"),
        "peak_tree_pss_bytes": mem.peak_pss, "peak_host_used_bytes": mem.peak_used, "pw": engine.pw,
    })
    save()
    table(fig)
    return 0 if ok else 1


def multiproofs(batch, repeat: int, partitions: int) -> dict[int, list]:
    """Each proof's partition proofs in partition order, for the proofs with every partition."""
    by_proof: dict[int, dict[int, object]] = {}
    for r in batch.results:
        by_proof.setdefault(r.proof_index, {})[r.partition] = r.proof
    return {i: [parts[k] for k in range(partitions)] for i, parts in by_proof.items()
            if i < repeat and sorted(parts) == list(range(partitions))}


def table(fig: dict) -> None:
    def g(key, scale=1.0, unit=""):
        v = fig.get(key)
        return "-" if v is None else f"{v / scale:.2f}{unit}"

    threads = "a Ray task: 1 thread" if fig["engine"] == "ray" else "every core"  # ray_executor.synthesize_partition
    run = (f"{fig['proof']} ({fig['variant']}), {fig['backend']}, engine {fig['engine']}, pw {fig['pw']}, "
           f"gpu_concurrency {fig.get('gpu_concurrency')}")
    rows = [("sector", run + "".join(f", {x}" for x in fig.get("set", []))),
            ("proofs", f"{fig['repeat']} x {fig['partitions_proved'] // max(1, fig['repeat'])} partitions, all "
                       f"verified: {fig['all_verified']}; "
                       f"{'one C1 each' if fig.get('distinct_c1s') else 'one C1 for all'}"),
            ("s/proof, steady state", g("s_per_proof_steady", unit=" s")),
            ("proving wall", g("proving_wall_s", unit=" s")),
            (f"witness per partition (median, {threads})", g("witness_s_per_partition", unit=" s")),
            ("GPU per partition (median)", g("gpu_s_per_partition", unit=" s")),
            ("prove per partition (median)", g("prove_s_per_partition", unit=" s")),
            ("driver fast witness, partition 0 (every core)", g("driver_witness_s", unit=" s")),
            ("peak host PSS, process tree", g("peak_tree_pss_bytes", GB, " GB")),
            ("peak host used", g("peak_host_used_bytes", GB, " GB")),
            ("peak VRAM", g("vram_peak_bytes", GB, " GB")),
            (".params", g("params_bytes", GB, " GB")),
            ("key bundle (mapped)", g("key_bytes", GB, " GB"))]
    rows += [(f"phase: {k}", f"{v:.1f} s") for k, v in fig["phases_s"].items()]
    width = max(len(k) for k, _ in rows)
    print("\n".join(f"{k:<{width}}  {v}" for k, v in rows), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sector-size", default="2KiB")
    ap.add_argument("--cache-dir", default=str(Path.home() / ".cache" / "cuzk-ray"))
    ap.add_argument("--work", default="outputs/bench_filecoin_c2")
    ap.add_argument("--variant", default="stacked", choices=c2.VARIANTS)
    ap.add_argument("--backend", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--engine", default="ray", choices=("ray", "local"))
    ap.add_argument("--pw", type=int, default=None, help="partitions in flight (default: the hardware's)")
    ap.add_argument("--repeat", type=int, default=None, help="N proofs of the C1 through the engine (steady state)")
    ap.add_argument("--key", default="params", choices=("params", "bundle"),
                    help="params: the dev key written as .params, then decoded into a mapped bundle (the "
                         "user's path; 2 x the key on disk); bundle: the dev key written straight into a "
                         "mapped bundle (one copy on disk: the 32 GiB run on a 64 GB disk)")
    ap.add_argument("--distinct", action="store_true",
                    help="--repeat different C1s (sector ids 77, 78, ...), one per proof, not one C1 N times")
    ap.add_argument("--out", help="where the figures go as JSON (--repeat)")
    ap.add_argument("--set", action="append", metavar="KEY=VALUE",
                    help="a config override for the engine (repeatable), e.g. gpu_concurrency=1 on an 80 GB card")
    args = ap.parse_args()
    size = parse_size(args.sector_size)
    if size not in PROOFS:
        raise SystemExit(f"--sector-size {args.sector_size}: one of 2KiB, 8MiB, 32GiB, 64GiB")
    if args.repeat is not None and args.repeat < 1:
        raise SystemExit(f"--repeat {args.repeat}: need at least 1")
    proof = registry.registered_seal_proof(PROOFS[size])
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    return e2e(args, proof, work) if args.repeat is None else steady(args, proof, work)


if __name__ == "__main__":
    raise SystemExit(main())
