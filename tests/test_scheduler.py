"""The scheduler's API as the service will drive it (add / cancel / status / results / step), on
the in-process executor: priority order, cancel, per-proof state; and no Ray in a local run."""

import subprocess
import sys
import time

import pytest

from cuzk_ray.circuits import PorepCircuit
from cuzk_ray.engines import LocalEngine, Priority, ProofState
from cuzk_ray.engines.types import ProofNotDone
from cuzk_ray.groth16.setup import dev_setup
from cuzk_ray.groth16.verifier import verify

CIRCUIT = PorepCircuit(constraints=256, partitions=2)


@pytest.fixture(scope="module")
def engine():
    cs = CIRCUIT.build()
    return LocalEngine(dev_setup(cs, 5), cs, CIRCUIT, backend="cpu")


def drain(sched):
    order = []
    while not sched.idle:
        res = sched.step()
        if res is not None:
            order.append((res.proof_id, res.partition))
    return order


def test_priority_then_oldest_then_lowest_partition(engine):
    sched = engine.scheduler
    low = sched.add(0, seed=1, priority=Priority.LOW, proof_id="low")
    normal = sched.add(1, seed=1, proof_id="normal")
    crit = sched.add(2, seed=1, priority=Priority.parse("critical"), proof_id="crit")
    assert sched.status(crit).state is ProofState.QUEUED
    assert sched.summary().queued_by_priority == {"critical": 2, "high": 0, "normal": 2, "low": 2}
    order = drain(sched)
    assert order == [(p, k) for p in (crit, normal, low) for k in range(2)]
    st = sched.status(normal)
    assert st.state is ProofState.DONE and st.partitions == st.partitions_done == 2 and st.error is None
    assert {"synthesis", "h", "verify"} <= set(st.timings)
    rs = sched.results(low)
    assert [r.partition for r in rs] == [0, 1] and all(verify(engine.pk.vk, r.public, r.proof) for r in rs)
    assert sched.summary().proofs["done"] == 3
    for p in (low, normal, crit):
        sched.forget(p)
    with pytest.raises(KeyError, match="unknown proof id 'low'"):
        sched.status(low)
    with pytest.raises(ValueError, match="priority='urgent' is not one of"):
        Priority.parse("urgent")


def test_cancel_drops_a_queued_proof_and_leaves_a_done_one(engine):
    sched = engine.scheduler
    a, b = sched.add(0, seed=2, proof_id="a"), sched.add(1, seed=2, proof_id="b")
    with pytest.raises(ValueError, match="already scheduled"):
        sched.add(0, proof_id="a")
    assert sched.cancel(b) is ProofState.CANCELLED
    order = drain(sched)
    assert order == [("a", 0), ("a", 1)]  # b's partitions never ran
    assert sched.status(b).state is ProofState.CANCELLED and sched.status(b).partitions_done == 0
    assert sched.cancel(a) is ProofState.DONE  # a done proof stays done
    with pytest.raises(ProofNotDone, match="b is cancelled"):
        sched.results(b)
    assert len(sched.results(a)) == 2
    batch = sched.batch([a, b], 1.0, engine.prover_info)
    assert [r.proof_id for r in batch.results] == ["a", "a"] and batch.failed == {}
    assert batch.proofs == {"a": 0, "b": 1}
    for p in (a, b):
        sched.forget(p)


def test_a_local_run_does_not_import_ray():
    code = ("import sys\n"
            "from cuzk_ray.circuits import PorepCircuit\n"
            "from cuzk_ray.engines import EngineSettings, open_engine\n"
            "from cuzk_ray.groth16.setup import dev_setup\n"
            "c = PorepCircuit(constraints=256, partitions=1); cs = c.build()\n"
            "with open_engine(EngineSettings(engine='local', backend='cpu'), dev_setup(cs, 1), cs, c) as e:\n"
            "    b = e.run(1)\n"
            "assert len(b.results) == 1 and not b.failed\n"
            "print('ray' in sys.modules)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "False"


def test_a_submit_that_raises_fails_its_proof_and_leaks_nothing(engine, monkeypatch):
    """An executor that cannot take a partition (here: its submit raises) fails that proof with
    the reason; no host bytes stay reserved; the other proof and the next batch go on."""
    sched = engine.scheduler
    real = engine.executor.submit

    def submit(work, spec):
        if work.proof_id == "bad":
            raise TypeError("cannot pickle the synthesis function (injected)")
        return real(work, spec)

    monkeypatch.setattr(engine.executor, "submit", submit)
    bad, good = sched.add(0, seed=3, proof_id="bad"), sched.add(1, seed=3, proof_id="good")
    drain(sched)
    assert sched.status(bad).state is ProofState.FAILED
    assert "could not be submitted: TypeError: cannot pickle" in sched.status(bad).error
    assert sched.status(good).state is ProofState.DONE
    assert engine.budget.reserved == 0 and engine.budget.violations == 0
    sched.forget(bad)
    sched.forget(good)
    monkeypatch.undo()
    batch = engine.run(1, seed=3)  # the batch ids are free again
    assert not batch.failed and len(batch.results) == 2


def test_failed_attempts_back_off_and_the_twin_runs_out_of_attempts(engine):
    """A partition that fails twice is retried after 0.5 s, then 1 s (retry_backoff_s=0.5,
    doubling), and its third attempt proves it; the twin with max_attempts=2 fails its proof."""
    cs = CIRCUIT.build()
    pk = engine.pk
    starts: list[float] = []

    def flaky(spec):
        from cuzk_ray.circuits import synthesize

        if spec["proof"] == 0 and spec["partition"] == 1:
            starts.append(time.monotonic())
            if len(starts) <= 2:
                raise OSError("transient read error (injected)")
        return synthesize(spec)

    eng = LocalEngine(pk, cs, CIRCUIT, backend="cpu", max_attempts=3, retry_backoff_s=0.5)
    batch = eng.run(1, seed=4, synth_fn=flaky)
    assert not batch.failed and batch.retries == 2 and len(starts) == 3
    assert [r.attempts for r in batch.results] == [1, 3]
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    assert gaps[0] >= 0.5 and gaps[1] >= 1.0, gaps  # the backoff, not a hot loop
    assert all(verify(pk.vk, r.public, r.proof) for r in batch.results)
    starts.clear()
    twin = LocalEngine(pk, cs, CIRCUIT, backend="cpu", max_attempts=2, retry_backoff_s=0.5)
    batch = twin.run(1, seed=4, synth_fn=flaky)
    assert batch.failed == {"proof-000": "partition 1 failed 2 times: OSError: transient read error (injected)"}
    assert len(starts) == 2 and not batch.results


def test_a_forgotten_proofs_leftovers_never_run_for_a_new_proof_with_its_id(engine, monkeypatch):
    """A proof cancelled and forgotten with a partition still queued (as after a watchdog stop),
    then a new proof with the same id: the leftover is dropped, not submitted for the new proof;
    summary() counts only the new one's. The twin: the new proof's own partitions all run."""
    sched = engine.scheduler
    submitted = []
    real = engine.executor.submit

    def submit(work, spec):
        submitted.append((work.proof_id, work.partition, work.proof.seed))
        return real(work, spec)

    monkeypatch.setattr(engine.executor, "submit", submit)
    old = sched.add(0, seed=7, proof_id="x")
    sched.step()  # partition 0 proved; partition 1 still queued
    sched.cancel(old)
    sched.forget(old)
    new = sched.add(1, seed=8, proof_id="x")
    assert sched.summary().queued_by_priority["normal"] == 2  # the new proof's two, not the leftover
    drain(sched)
    assert submitted == [("x", 0, 7), ("x", 0, 8), ("x", 1, 8)]
    rs = sched.results(new)
    assert [r.partition for r in rs] == [0, 1] and all(r.proof_index == 1 for r in rs)
    assert all(verify(engine.pk.vk, r.public, r.proof) for r in rs)
    sched.forget(new)


def test_add_proves_only_the_partitions_given(engine):
    """The service's use: a proof with its own partition count (here 3 on a circuit of 2), or a
    resumed one whose first partitions are already on disk (here only partition 1 of them)."""
    sched = engine.scheduler
    three = sched.add(0, seed=6, proof_id="three", partitions=range(3))
    rest = sched.add(0, seed=6, proof_id="rest", partitions=[1])
    order = drain(sched)
    assert order == [("three", 0), ("three", 1), ("three", 2), ("rest", 1)]
    assert sched.status(three).partitions == 3 and sched.status(rest).partitions == 1
    assert sched.status(rest).state is ProofState.DONE
    # the same statement as a whole proof's partition 1 (same seed, proof index, partition)
    assert sched.results(rest)[0].public == sched.results(three)[1].public
    for p in (three, rest):
        sched.forget(p)
    with pytest.raises(ValueError, match="no partition to prove"):
        sched.add(0, proof_id="none", partitions=[])
