"""engines/memory.py on real processes (no Ray): a process's measured bytes grow by what it
allocates; the watch's baseline absorbs growth at idle samples and counts it during work."""

import mmap
import os
import subprocess
import sys

import pytest

from cuzk_ray.engines.memory import (
    MemoryWatch,
    descendants,
    measurable,
    process_bytes,
    process_memory,
    processes_bytes,
    processes_memory,
)

pytestmark = pytest.mark.skipif(not measurable(), reason="needs Linux /proc")

MIB = 1 << 20
CHILD = """
import sys
import numpy as np
held = []
for line in sys.stdin:
    if line.startswith("alloc"):
        held.append(np.ones(int(line.split()[1]) // 8))  # touched: resident
    elif line.startswith("shm"):  # shared memory, as the object store's pages are
        import mmap, os, tempfile
        n = int(line.split()[1])
        fd, path = tempfile.mkstemp(dir="/dev/shm")
        os.ftruncate(fd, n)
        m = mmap.mmap(fd, n)
        os.unlink(path)  # the mapping stays; no file is left behind
        os.close(fd)
        m[:] = b"\1" * n
        held.append(m)
    elif line.startswith("free"):
        held.clear()
    print("ok", flush=True)
"""


def start_child(title: str | None = None):
    """A Python process that allocates (``alloc N``, ``shm N``) and frees (``free``) on command;
    ``title``: its argv[0], as Ray titles its workers (ray::IDLE ...)."""
    args = [title or sys.executable, "-c", CHILD]
    p = subprocess.Popen(args, executable=sys.executable, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def say(cmd: str) -> None:
        p.stdin.write(cmd + "\n")
        p.stdin.flush()
        assert p.stdout.readline().strip() == "ok"

    say("noop")  # numpy imported: at rest
    p.say = say
    return p


@pytest.fixture
def child():
    p = start_child()
    yield p
    p.kill()
    p.wait()


def test_a_process_measures_about_what_it_allocates(child):
    before = process_bytes(child.pid)
    child.say(f"alloc {64 * MIB}")
    grown = process_bytes(child.pid) - before
    assert 60 * MIB <= grown <= 70 * MIB, grown / MIB
    child.say("free")
    assert process_bytes(child.pid) - before < 6 * MIB  # a big numpy buffer goes back to the OS
    assert process_bytes(2**22 + 12345) is None  # no such pid (above pid_max's default)


def test_this_process_and_its_children_are_found(child):
    assert child.pid in descendants(os.getpid())
    got = processes_bytes([os.getpid(), child.pid, 2**22 + 12345])
    assert set(got) == {os.getpid(), child.pid} and all(b > MIB for b in got.values())
    # fresh pages of our own: an anonymous mapping written to (a numpy array of this size may come
    # from heap memory an earlier test freed, already resident: glibc's mmap threshold rises to
    # 32 MiB after a large free, and CI's full run met exactly that)
    buf = mmap.mmap(-1, 32 * MIB)
    buf.write(b"\1" * (32 * MIB))
    assert process_bytes(os.getpid()) - got[os.getpid()] >= 30 * MIB
    buf.close()


def test_a_worker_at_rest_is_rebased_except_for_its_shared_pages():
    """A Ray worker titled as resting (ray::IDLE: a synthesis worker between tasks) keeps what it
    allocated: not a partition's (its imports, caches), re-based at once; its shared pages (the
    object store's: a partition's batch) still count. Titled as running a task: it all counts."""
    idle, busy = start_child("ray::IDLE"), start_child("ray::synth:proof-000:0")
    try:
        assert process_memory(idle.pid).resting and not process_memory(busy.pid).resting
        load = Load()
        watch = MemoryWatch(lambda: {"n1": processes_memory([idle.pid, busy.pid])}, period_s=3600)
        watch.start(load)
        load.in_flight, load.submitted = 2, 2
        for p in (idle, busy):
            p.say(f"alloc {32 * MIB}")
        watch.sample()
        assert 28 * MIB <= watch.work()[1] <= 40 * MIB  # the busy one's only
        idle.say(f"shm {24 * MIB}")
        assert process_memory(idle.pid).shmem >= 22 * MIB
        watch.sample()
        assert 50 * MIB <= watch.work()[1] <= 66 * MIB  # + the resting one's shared pages
        watch.stop()
    finally:
        for p in (idle, busy):
            p.kill()
            p.wait()


class Load:
    """What the scheduler tells the watch: partitions in flight and submissions so far."""

    def __init__(self):
        self.in_flight, self.submitted = 0, 0

    def __call__(self):
        return self.in_flight, self.submitted


def test_watch_counts_growth_during_work_and_absorbs_it_at_rest(child):
    load = Load()
    watch = MemoryWatch(lambda: {"n1": processes_memory([child.pid])}, period_s=3600)
    watch.start(load)  # baseline: the child at rest
    base = watch.baseline("n1")
    assert watch.work() == ("n1", 0) and base > MIB
    load.in_flight, load.submitted = 1, 1
    child.say(f"alloc {48 * MIB}")
    watch.sample()
    node, work = watch.work()
    assert node == "n1" and 44 * MIB <= work <= 54 * MIB and watch.last_in_flight == 1
    load.in_flight = 0  # the partition came back, and the memory stayed (a cache, a worker's imports)
    watch.sample()
    assert watch.work()[1] == 0 and watch.baseline("n1") - base >= 44 * MIB  # absorbed at the idle sample
    child.say("free")  # below the baseline: at the next idle sample the baseline comes down with it
    watch.sample()
    assert watch.baseline("n1") - base < 6 * MIB
    [rec] = watch.nodes()
    assert rec.node == "n1" and rec.processes == 1 and 44 * MIB <= rec.peak_work <= 54 * MIB
    assert rec.peak_total >= base + 44 * MIB
    watch.reset_peaks()
    assert watch.nodes()[0].peak_work == 0
    watch.stop()


def test_a_process_first_seen_during_work_enters_the_baseline_as_it_is(child):
    load = Load()
    pids = [os.getpid()]
    watch = MemoryWatch(lambda: {"n1": processes_memory(pids)}, period_s=3600)
    watch.start(load)
    load.in_flight, load.submitted = 1, 1
    pids.append(child.pid)  # e.g. a Ray worker that ran its first synthesis task
    watch.sample()
    assert watch.work()[1] < 8 * MIB  # not its whole size
    child.say(f"alloc {32 * MIB}")  # its growth from then on counts
    watch.sample()
    assert 28 * MIB <= watch.work()[1] <= 40 * MIB
    watch.stop()


def test_a_sample_across_a_submission_is_not_idle(child):
    """The load before and after the probe differ (a partition submitted meanwhile): growth counts."""
    load = Load()
    watch = MemoryWatch(lambda: {"n1": processes_memory([child.pid])}, period_s=3600)
    watch.start(load)

    def probe():
        load.submitted += 1  # submitted and settled while the probe ran: in flight 0 before and after
        child.say(f"alloc {16 * MIB}")
        return {"n1": processes_memory([child.pid])}

    watch.probe = probe
    watch.sample()
    assert watch.work()[1] >= 14 * MIB
    watch.stop()


def test_the_local_engine_measures_its_own_process():
    from cuzk_ray.circuits import PorepCircuit
    from cuzk_ray.engines import LocalEngine
    from cuzk_ray.engines.report import memory_line, memory_record
    from cuzk_ray.groth16.setup import dev_setup

    circuit = PorepCircuit(constraints=1024, partitions=3)  # ~1 s of proving: samples every 0.5 s
    cs = circuit.build()
    engine = LocalEngine(dev_setup(cs, 3), cs, circuit, backend="cpu", host_budget=1 << 30)
    batch = engine.run(4, seed=1)
    engine.shutdown()
    assert not batch.failed and batch.max_in_flight == 1
    [node] = batch.host_measured
    assert node.node == "local" and node.processes == 1 and node.samples >= 1
    # peak_total >= baseline + peak_work need not hold: an idle sample after the peak rebases to
    # what the process kept (CI's machine: baseline 462 MB = peak_total, peak_work 1 MB)
    assert node.baseline > 10 * MIB and node.peak_total >= max(node.baseline, node.peak_work)
    rec = memory_record(batch)
    assert rec["host_peak_measured"] == node.peak_work and rec["host_measured"][0]["node"] == "local"
    line = memory_line(batch)
    assert line.startswith("host memory: measured peak ") and "on node local (our 1 process:" in line, line
