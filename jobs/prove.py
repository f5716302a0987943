"""Prove a batch with cuzk-ray: `python jobs/prove.py [key=value ...]` (Hydra overrides).

With no arguments: the built-in PoRep-shaped circuit (10 partitions), a cached development key
(made on first use), one proof on an embedded Ray (CPU when there is no GPU), every partition
verified, outputs and manifest.json in output_dir, and a per-stage table. On a cluster:
`ray job submit --working-dir . -- python jobs/prove.py pw=12` (or set RAY_ADDRESS).
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout too

import hydra  # noqa: E402
from omegaconf import DictConfig, OmegaConf  # noqa: E402

from cuzk_ray.config import register  # noqa: E402

register()
log = logging.getLogger("cuzk_ray.prove")


def run(cfg: dict) -> int:
    from cuzk_ray import outputs
    from cuzk_ray.backends import resolve_backend_name
    from cuzk_ray.circuits import make_circuit
    from cuzk_ray.engines import EngineSettings, open_engine
    from cuzk_ray.engines.admission import check_budget, partition_host_bytes
    from cuzk_ray.engines.report import load_line, stage_table
    from cuzk_ray.errors import ProofFailed
    from cuzk_ray.preflight import preflight

    t_start = time.perf_counter()
    settings = EngineSettings.from_config(cfg)  # a bad engine, backend or size fails here, before any work
    if cfg["proofs"] < 1:
        raise ValueError(f"proofs={cfg['proofs']}: must be at least 1")
    circuit = make_circuit(cfg["circuit"])
    resolve_backend_name(cfg["setup_backend"], "setup_backend")
    preflight(settings, circuit, cfg["cache_dir"], cfg["setup_seed"])  # disk, host, object store, VRAM
    # Everything that can reject the input runs before output_dir is touched.
    t0 = time.perf_counter()
    pk, cs, key_info = circuit.load_key(cfg["cache_dir"], cfg["setup_seed"], cfg["setup_backend"])
    print(f"key: {key_info['key']} ({key_info['note']}, {time.perf_counter() - t0:.1f} s)")
    check_budget(settings.host_budget, partition_host_bytes(circuit, pk.domain_size, settings.backend),
                 circuit.circuit_id)
    proofs = len(circuit.witness) if circuit.kind == "snarkjs" else cfg["proofs"]
    out_dir = outputs.begin(cfg["output_dir"])
    with open_engine(settings, pk, cs, circuit) as engine:
        print(f"provers: {len(engine.provers)} x {engine.backend}; pw={engine.pw}; {proofs} proof(s) x "
              f"{circuit.partitions} partition(s) of {circuit.circuit_id}")
        print(load_line(engine.prover_info))

        def progress(res, done, total):
            print(f"\r  {done}/{total} partitions verified", end="" if done < total else "\n", flush=True)

        batch = engine.run(proofs, seed=cfg["seed"], progress=progress)
    info = {"circuit": circuit.circuit_id, "backend": engine.backend, "key": key_info["key"],
            "wall_seconds": round(batch.wall_s, 3), "host_budget": batch.host_budget,
            "host_peak_reserved": batch.host_peak, "max_in_flight": batch.max_in_flight,
            "failed": {circuit.proof_label(batch.proofs[pid]): why for pid, why in batch.failed.items()}}
    complete = not batch.failed
    manifest = (outputs.write_batch(out_dir, pk.vk, batch.results, info, circuit.proof_info, complete)
                if batch.results else None)
    print(stage_table(batch.results, batch.wall_s))
    print(f"total {time.perf_counter() - t_start:.1f} s; {len(batch.results)} partitions verified; "
          f"{'manifest' if complete else 'partial manifest (some proofs failed)'}: {manifest}")
    if batch.failed:
        raise ProofFailed("; ".join(f"{label}: {why}" for label, why in sorted(info["failed"].items())))
    return 0


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def main(cfg: DictConfig) -> None:
    from cuzk_ray.errors import exit_with_error

    logging.getLogger("cuzk_ray").setLevel(logging.INFO)
    plain = OmegaConf.to_container(cfg, resolve=True)
    try:
        code = run(plain)
    except Exception as e:  # noqa: BLE001  known errors become one line; others keep the traceback
        code = exit_with_error(e)
    sys.exit(code)


if __name__ == "__main__":
    main()
