"""Scheduling that cannot deadlock (issue 15), on a real embedded Ray: the watchdog turns "no
progress and nothing runnable" into one line naming the missing resource; a prover actor with
no restart left ends the batch the same way. Their twins: the same batch with the resource back."""

import os
import signal
import time

import pytest
import ray

from cuzk_ray.circuits import PorepCircuit
from cuzk_ray.engines import ProvingEngine
from cuzk_ray.errors import Stalled
from cuzk_ray.groth16.setup import dev_setup
from cuzk_ray.groth16.verifier import verify

pytestmark = pytest.mark.ray

CIRCUIT = PorepCircuit(constraints=256, partitions=2)
HANG_S = 90  # a hang detector's bound, far above the 3 s watchdog the tests set


@pytest.fixture(scope="module")
def key():
    cs = CIRCUIT.build()
    return dev_setup(cs, 12), cs


@ray.remote(num_cpus=1)
class CpuHog:
    """Something else on the cluster holding a CPU (as the restarted prover of a lost node did)."""

    def ping(self):
        return os.getpid()


def test_watchdog_names_the_cpu_synthesis_lacks_and_the_twin_runs(ray_local, key):
    pk, cs = key
    engine = ProvingEngine(pk, cs, CIRCUIT, backend="cpu", pw=2, provers=1, watchdog_s=3)
    hog = CpuHog.remote()
    ray.get(hog.ping.remote())  # the prover holds one CPU, the hog the other: synthesis has none
    t0 = time.monotonic()
    with pytest.raises(Stalled) as err:
        engine.run(1, seed=1)
    took = time.monotonic() - t0
    engine.shutdown()
    msg = str(err.value)
    assert took < HANG_S, took
    assert "\n" not in msg
    assert msg.startswith("no progress for ") and "(watchdog_s=3)" in msg
    assert "2 synthesis task(s) (PENDING_NODE_ASSIGNMENT) wait for 1 CPU each and no node has one free" in msg
    assert "CPU 0 of 2 available; the 1 CPU prover actor(s) hold one each" in msg
    assert engine.scheduler.summary().proofs == {s: 0 for s in engine.scheduler.summary().proofs}  # forgotten
    ray.kill(hog)  # the twin: the CPU is back, the same batch runs
    time.sleep(1)
    twin = ProvingEngine(pk, cs, CIRCUIT, backend="cpu", pw=2, provers=1, watchdog_s=3)
    batch = twin.run(1, seed=1)
    twin.shutdown()
    assert not batch.failed and len(batch.results) == 2
    assert all(verify(pk.vk, r.public, r.proof) for r in batch.results)


def test_prover_without_restarts_left_ends_the_batch_in_one_line(ray_local, key):
    """The twin of test_engine's killed-and-restarted prover: with max_restarts=0 it cannot come
    back, the scheduler has nowhere to send the partitions, and the watchdog says so."""
    pk, cs = key
    engine = ProvingEngine(pk, cs, CIRCUIT, backend="cpu", pw=2, provers=1, max_restarts=0, watchdog_s=3)
    pid = engine.prover_info[0]["pid"]
    killed = []

    def progress(res, done, total):
        if not killed:
            os.kill(pid, signal.SIGKILL)
            killed.append(done)

    t0 = time.monotonic()
    with pytest.raises(Stalled) as err:
        engine.run(2, seed=2, progress=progress)
    took = time.monotonic() - t0
    engine.shutdown()
    msg = str(err.value)
    assert killed and took < HANG_S and "\n" not in msg
    assert "no prover actor left: 1 of 1 are dead (" in msg
    assert msg.endswith("need at least one prover (one CPU each) and have 0")
    assert engine.executor.dead and not engine.executor.down
