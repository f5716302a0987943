"""Steady-state benchmark of the engine: `python jobs/bench.py [key=value ...]` (Hydra).

Proves ``warmup`` + ``proofs`` proofs of the built-in PoRep-shaped circuit in one run and
measures the steady state: from the completion of the last warm-up proof (actors warm, kernels
loaded, pipeline full) to that of the last proof (cuzk_ray.bench.steady_window). Reports seconds
per proof, per-stage medians, prover and GPU busy
fractions, peak host memory of the Ray node and peak VRAM; checks every proof verifies; writes
results.json, timeline.png and stages.png into output_dir; prints cuzk's published figures beside.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout too

import hydra  # noqa: E402
from omegaconf import DictConfig, OmegaConf  # noqa: E402

from cuzk_ray.config import check_job_values, register  # noqa: E402

register()


def run(cfg: dict) -> int:
    import platform

    from cuzk_ray.backends import resolve_backend_name
    from cuzk_ray.bench import CUZK_PUBLISHED, partition_records, plot, summarize
    from cuzk_ray.circuits import make_circuit
    from cuzk_ray.engines import EngineSettings, open_engine
    from cuzk_ray.engines.memory import MemorySampler
    from cuzk_ray.engines.report import load_line, memory_line, stage_table
    from cuzk_ray.errors import ProofFailed
    from cuzk_ray.formats.snarkjs_json import write_json_atomic
    from cuzk_ray.keystore import ensure_dev_key
    from cuzk_ray.preflight import preflight

    circuit = make_circuit(cfg["circuit"])
    settings = EngineSettings.from_config(cfg)  # bad settings fail here, before any work
    check_job_values(cfg)  # proofs, seeds, warmup, sample_s: refused out of range, never clamped
    resolve_backend_name(cfg["setup_backend"], "setup_backend")
    preflight(settings, circuit, cfg["cache_dir"], cfg["setup_seed"])  # disk, host, object store, VRAM
    out = Path(cfg["output_dir"])
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with MemorySampler(cfg["sample_s"]) as setup_mem:  # the streamed setup's host memory (issue 13 item 3)
        pk, cs, key_path, created = ensure_dev_key(circuit, cfg["cache_dir"], cfg["setup_seed"], cfg["setup_backend"])
    key_s = time.perf_counter() - t0
    print(f"key: {key_path} ({'created' if created else 'cached'}, {key_s:.1f} s)")
    mem = MemorySampler(cfg["sample_s"])
    with open_engine(settings, pk, cs, circuit, around=mem) as engine:
        # warm-up and measured proofs in one run: the pipeline is full when measuring starts
        batch = engine.run(cfg["warmup"] + cfg["proofs"], seed=cfg["seed"])
    n_devices = None
    if settings.backend == "cuda":
        n_devices = len({g for p in engine.prover_info for g in p.get("gpu_ids", [])}) or 1
    if batch.failed:
        raise ProofFailed("; ".join(f"{pid}: {why}" for pid, why in sorted(batch.failed.items())))
    summary = summarize(batch, cfg["proofs"], n_devices, cfg["warmup"])
    key_disk = sum(f.stat().st_size for f in Path(key_path).iterdir())
    setup = {k: pk.meta[k] for k in ("build_seconds", "setup_scalars_seconds", "setup_seconds") if k in pk.meta}
    summary.update({
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "host": platform.node(),
        "cpus": __import__("os").cpu_count(), "circuit": circuit.circuit_id, "backend": engine.backend,
        "engine": cfg["engine"], "pw": engine.pw, "provers": len(engine.provers), "key_seconds": key_s,
        "key_created": created, "dev_setup": setup, "setup_peak_host_used_bytes": setup_mem.peak_used,
        "setup_peak_pss_bytes": setup_mem.peak_pss, "key_disk_bytes": key_disk, "key_host_bytes": pk.nbytes,
        "prover_load_seconds": [p.get("load_seconds") for p in engine.prover_info],
        "partition_host_bytes_estimate": engine.part_bytes,
        "peak_host_used_bytes": mem.peak_used, "peak_node_pss_bytes": mem.peak_pss,
        "all_verified": all(r.verified for r in batch.results), "cuzk_published": CUZK_PUBLISHED,
        "config": cfg, "partition_records": partition_records(batch),
    })
    plots = []
    if cfg["plots"]:
        try:
            plots = plot(summary["partition_records"], summary, str(out))
        except ImportError:
            print("plots skipped: matplotlib is not installed (pip install -e '.[bench]')")
    write_json_atomic(out / "results.json", summary)
    print(stage_table(batch.results, batch.wall_s))
    print(memory_line(batch))
    print(load_line(engine.prover_info))
    gib = 2**30
    rows = [
        ("circuit", circuit.circuit_id, ""),
        ("backend / provers / pw", f"{engine.backend} / {len(engine.provers)} / {engine.pw}", ""),
        ("s per proof (steady)", f"{summary['s_per_proof']:.3f}",
         f"{CUZK_PUBLISHED['s_per_proof_isolated']} isolated, {CUZK_PUBLISHED['s_per_proof_pw12']} at pw=12"),
        ("prover busy", f"{summary['prover_busy_fraction']:.0%}", ""),
        ("GPU busy", f"{summary['gpu_busy_fraction']:.0%}" if n_devices else "-", ""),
        ("peak host (node PSS)", f"{mem.peak_pss / gib:.2f} GiB",
         f"{CUZK_PUBLISHED['peak_rss_gib_pw12']} GiB RSS at pw=12"),
        ("peak VRAM (device)", f"{(summary.get('vram_peak_bytes') or 0) / gib:.2f} GiB" if n_devices else "-", ""),
        ("key on disk", f"{key_disk / gib:.2f} GiB", "47.4 GB parameter file at 2^27"),
        ("dev setup", f"{setup.get('setup_seconds', 0):.1f} s + build {setup.get('build_seconds', 0):.1f} s"
         if created else "cached", ""),
        ("peak host in setup (PSS)", f"{setup_mem.peak_pss / gib:.2f} GiB" if created else "-", ""),
        ("host per partition (est.)", f"{engine.part_bytes / gib:.2f} GiB", "13.6 GiB"),
        ("all proofs verified", str(summary["all_verified"]), ""),
    ]
    # cuzk publishes 2^27 partitions only: its figures beside a smaller run would read as a comparison
    comparable = pk.domain_size == 1 << 27
    head = (f"cuzk (published, {CUZK_PUBLISHED['hardware']})" if comparable else
            f"(cuzk publishes 2^27 partitions only; this run is 2^{pk.domain_size.bit_length() - 1}: not shown)")
    print(f"\n{'':<24}{'cuzk-ray':>24}   {head}")
    for name, ours, theirs in rows:
        print(f"{name:<24}{ours:>24}   {theirs if comparable else ''}")
    print(f"results: {out / 'results.json'}" + (f"; plots: {', '.join(plots)}" if plots else ""))
    return 0


@hydra.main(version_base="1.3", config_path="../conf", config_name="bench")
def main(cfg: DictConfig) -> None:
    from cuzk_ray.errors import exit_with_error

    try:
        code = run(OmegaConf.to_container(cfg, resolve=True))
    except Exception as e:  # noqa: BLE001
        code = exit_with_error(e)
    sys.exit(code)


if __name__ == "__main__":
    main()
