"""What the service's check of one filecoin-c2 request costs (service/checks.check_request, the
work of a POST before it is accepted), with the request's key resident, for C1s of a sector size:
seconds and how many times the C1 was read. Each round checks a fresh copy of the consistent
synthetic C1 (c1_synthetic; a new file, as every real request's C1 is), so nothing is remembered
from the round before.

    python jobs/bench_request_check.py [--size 32GiB] [--rounds 3] [--work /tmp/request-check]
    python jobs/bench_request_check.py --pause      # where the C1 is read: here, or a side task

At 32 GiB a C1 is 38.6 MB of JSON (~1.7 s to parse on the 2-core dev box), so the reads are the
cost. Prints a table; no GPU, no Ray, no cache (the key's shape is not asked for when it is resident).
``--pause``: the same checks with a second thread in the process ticking every 5 ms (as the
service's loop and its other requests run beside a POST in the engine actor), the longest pause
it saw, with the C1 read in this process and read by a side task of a Ray prover pool
(Engine.beside, as the service does since json.loads was found holding the GIL ~1 s at once).
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
    ap.add_argument("--pause", action="store_true", help="the longest pause of another thread, C1 read here or aside")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    if args.pause:
        return pauses(args)

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


class Ticker:
    """A thread waking every 5 ms: the longest gap between its wake-ups is how long the process's
    other threads could not run (the GIL held)."""

    def __init__(self):
        import threading

        self.longest, self._stop = 0.0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        last = time.perf_counter()
        while not self._stop.wait(0.005):
            now = time.perf_counter()
            self.longest, last = max(self.longest, now - last), now

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def pauses(args) -> int:
    """Each round: a fresh copy of the C1 checked with a ticker beside it, read here, then by a
    side task of a Ray prover pool (the service's Engine, CPU provers)."""
    import ray

    from cuzk_ray.circuits.filecoin import check_c1_file
    from cuzk_ray.engines import Engine
    from cuzk_ray.service.checks import check_request
    from cuzk_ray.service.service import service_settings

    source = make_c1(args.size, args.work)
    cfg = service_cfg(args.work)
    settings = service_settings(cfg)
    resident = (f"filecoin-stacked-StackedDrg{args.size}V1_1-setup{cfg['setup_seed']}",)
    ray.init(address="local", num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
             runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}})
    engine = Engine(settings)
    try:
        engine.beside(check_c1_file, str(source), name="warm-up").result()  # the side worker started and warm
        ways = {"here": None,
                "side task": lambda p: engine.beside(check_c1_file, p, name=f"c1-check:{Path(p).name}").result()}
        print(f"{'round':>5}  {'C1 read':>10}  {'check s':>8}  {'longest pause s':>15}")
        for k in range(args.rounds):
            for how, read in ways.items():
                path = args.work / f"request-{k}-{how.replace(' ', '-')}.json"
                shutil.copy(source, path)
                circuit = {"kind": "filecoin-c2", "c1": str(path), "params": None, "variant": "stacked"}
                with Ticker() as ticker:
                    t = time.perf_counter()
                    check_request(circuit, cfg, settings, [args.work], resident=resident, read_c1=read)
                    seconds = time.perf_counter() - t
                print(f"{k:>5}  {how:>10}  {seconds:>8.2f}  {ticker.longest:>15.3f}")
                path.unlink()
    finally:
        engine.shutdown()
        ray.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
