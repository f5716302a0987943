"""Prove a batch with cuzk-ray: `python jobs/prove.py [key=value ...]` (Hydra overrides).

With no arguments: the built-in PoRep-shaped circuit (10 partitions), a cached development key
(made on first use), one proof on an embedded Ray (CPU when there is no GPU), every partition
verified, outputs and manifest.json in output_dir, and a per-stage table.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

import hydra
from omegaconf import DictConfig, OmegaConf

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout too

log = logging.getLogger("cuzk_ray.prove")


def run(cfg: dict) -> int:
    import ray

    from cuzk_ray import outputs
    from cuzk_ray.circuits import make_circuit
    from cuzk_ray.engine import ProvingEngine, init_ray, stage_table
    from cuzk_ray.keystore import ensure_dev_key

    t_start = time.perf_counter()
    circuit = make_circuit(cfg["circuit"])
    out_dir = outputs.begin(cfg["output_dir"])
    t0 = time.perf_counter()
    pk, cs, key_path, created = ensure_dev_key(circuit, cfg["cache_dir"], cfg["setup_seed"])
    key_s = time.perf_counter() - t0
    print(f"key: {key_path} ({'created by the INSECURE dev setup' if created else 'cached'}, {key_s:.1f} s)")
    started = init_ray(cfg["ray"])
    try:
        engine = ProvingEngine(pk, cs, circuit, backend=cfg["backend"], pw=cfg["pw"],
                               provers=cfg["provers"], threads=cfg["cpu_threads"])
        print(f"provers: {', '.join(p['backend'] for p in engine.prover_info)}; "
              f"{cfg['proofs']} proof(s) x {circuit.partitions} partitions of {circuit.circuit_id}")

        def progress(res, done, total):
            print(f"\r  {done}/{total} partitions verified", end="" if done < total else "\n", flush=True)

        batch = engine.run(cfg["proofs"], seed=cfg["seed"], progress=progress)
        engine.shutdown()
    finally:
        if started:
            ray.shutdown()
    manifest = outputs.write_batch(out_dir, pk.vk, batch.results, {
        "circuit": circuit.circuit_id, "backend": engine.backend, "key": str(key_path),
        "wall_seconds": round(batch.wall_s, 3)})
    print(stage_table(batch.results, batch.wall_s))
    print(f"total {time.perf_counter() - t_start:.1f} s; {len(batch.results)} partitions verified; "
          f"manifest: {manifest}")
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
