"""What the service's check of one filecoin-c2 request costs (service/checks.check_request, the
work of a POST before it is accepted), with the request's key resident, for C1s of a sector size:
seconds and how many times the C1 was read. Each round checks a fresh copy of the consistent
synthetic C1 (c1_synthetic; a new file, as every real request's C1 is), so nothing is remembered
from the round before.

    python jobs/bench_request_check.py [--size 32GiB] [--rounds 3] [--work /tmp/request-check]

At 32 GiB a C1 is 38.6 MB of JSON (~1.7 s to parse on the 2-core dev box), so the reads are the
cost. Prints a table; no GPU, no Ray, no cache (the key's shape is not asked for when it is resident).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def make_c1(size: str, work: Path) -> Path:
    """The consistent synthetic C1 of ``size`` under ``work`` (made once)."""
    import numpy as np

    from cuzk_ray.filecoin import c1_synthetic
    from cuzk_ray.filecoin.c1 import write_c1
    from cuzk_ray.filecoin.registry import registered_seal_proof

    path = work / f"c1-{size}.json"
    if not path.is_file():
        proof = registered_seal_proof(f"StackedDrg{size}V1_1")
        c1 = c1_synthetic.synthetic_c1(proof, bytes(31) + b"\x07", 1, bytes(32), bytes(32), np.random.default_rng(0))
        write_c1(c1, path)
    return path


def service_cfg(work: Path) -> dict:
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from cuzk_ray.config import register

    register()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return OmegaConf.to_container(compose("config", overrides=[f"cache_dir={work / 'cache'}"]), resolve=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="32GiB", help="sector size: 2KiB, 8MiB, 512MiB, 32GiB, 64GiB")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work", type=Path, default=Path("/tmp/request-check"))
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)

    from cuzk_ray.filecoin import c1 as c1_module
    from cuzk_ray.service.checks import check_request
    from cuzk_ray.service.service import service_settings

    source = make_c1(args.size, args.work)
    cfg = service_cfg(args.work)
    reads, real = [], c1_module.read_c1
    c1_module.read_c1 = lambda p: reads.append(p) or real(p)  # counts the reads; the real parse runs
    resident = (f"filecoin-stacked-StackedDrg{args.size}V1_1-setup{cfg['setup_seed']}",)
    print(f"{'round':>5}  {'C1 MB':>6}  {'check s':>8}  {'C1 reads':>8}  key id")
    for k in range(args.rounds):
        path = args.work / f"request-{k}.json"
        shutil.copy(source, path)
        circuit = {"kind": "filecoin-c2", "c1": str(path), "params": None, "variant": "stacked"}
        reads.clear()
        t = time.perf_counter()
        accepted = check_request(circuit, cfg, service_settings(cfg), [args.work], resident=resident)
        print(f"{k:>5}  {path.stat().st_size / 1e6:>6.1f}  {time.perf_counter() - t:>8.2f}  {len(reads):>8}  "
              f"{accepted.key_id}")
        path.unlink()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
