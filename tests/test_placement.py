"""Prover placement on many GPUs (issue 7), on the CPU: a real Ray node with 8 logical GPUs."""

import pytest
import ray

from cuzk_ray.circuits import PorepCircuit
from cuzk_ray.engines import ProvingEngine
from cuzk_ray.groth16.setup import dev_setup

pytestmark = [pytest.mark.ray, pytest.mark.slow]


def test_one_prover_per_gpu_on_eight_logical_gpus(tmp_path):
    """Placement for any GPU count (issue 7): Ray logical GPUs, the CPU backend inside the actors."""
    from cluster import LocalCluster

    c = LocalCluster(tmp_path, nodes=1, cpus=2, gpus=8)
    try:
        ray.init(address=c.address, logging_level="ERROR")
        circuit = PorepCircuit(constraints=256, partitions=8)
        cs = circuit.build()
        pk = dev_setup(cs, 3)
        engine = ProvingEngine(pk, cs, circuit, backend="cpu", placement="gpu", pw=8, threads=1)
        gpu_ids = sorted(g for info in engine.prover_info for g in info["gpu_ids"])
        assert len(engine.provers) == 8 and gpu_ids == [str(i) for i in range(8)]  # one GPU each
        batch = engine.run(2, seed=1)
        per_actor = {}
        for r in batch.results:
            per_actor[r.prover_pid] = per_actor.get(r.prover_pid, 0) + 1
        engine.shutdown()
        assert not batch.failed and len(batch.results) == 16
        # Least-loaded dispatch is work-conserving, not round-robin: 8 actor processes share 2
        # cores here, so a slow one may take fewer partitions (under load one took 5 of 16).
        # Every GPU's actor must work, and none may take more than three times its share.
        assert len(per_actor) == 8 and max(per_actor.values()) <= 6, per_actor
        assert {r.prover_index for r in batch.results} == set(range(8))
    finally:
        ray.shutdown()
        c.stop()


def _proving_intervals(batch):
    """(start, end) of each partition's proving stages (synthesis left out), per actor process."""
    per_pid = {}
    for r in batch.results:
        spans = [(a, b) for st, a, b in r.spans if st != "synthesis"]
        per_pid.setdefault(r.prover_pid, []).append((min(a for a, _ in spans), max(b for _, b in spans)))
    return per_pid


def _overlaps(intervals):
    iv = sorted(intervals)
    return any(b[0] < a[1] for a, b in zip(iv, iv[1:]))


@pytest.mark.parametrize("concurrency", [1, 2])
def test_gpu_actor_works_on_partitions_concurrently(tmp_path, concurrency):
    """gpu_concurrency=2: one GPU actor works on two partitions at once (threads), so one's host
    work overlaps the other's device work; with 1 its partitions never overlap (the twin)."""
    from cluster import LocalCluster

    c = LocalCluster(tmp_path, nodes=1, cpus=2, gpus=1)
    try:
        ray.init(address=c.address, logging_level="ERROR")
        circuit = PorepCircuit(constraints=1024, partitions=6)
        cs = circuit.build()
        pk = dev_setup(cs, 4)
        engine = ProvingEngine(pk, cs, circuit, backend="cpu", placement="gpu", pw=None, pw_per_gpu=6, threads=2,
                               gpu_concurrency=concurrency)
        assert engine.pw == 6  # pw unset: pw_per_gpu x the cluster's GPUs (one here)
        batch = engine.run(1, seed=2)
        engine.shutdown()
        assert not batch.failed and len(batch.results) == 6 and all(r.verified for r in batch.results)
        (intervals,) = _proving_intervals(batch).values()  # one actor
        assert _overlaps(intervals) == (concurrency == 2), intervals
    finally:
        ray.shutdown()
        c.stop()
