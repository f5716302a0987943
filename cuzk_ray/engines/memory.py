"""Host memory of our processes, measured (Linux /proc; no Ray here).

A process's bytes are its PSS (proportional set size, /proc/<pid>/smaps_rollup: a page shared by
n processes counts 1/n in each, so the memory-mapped key and the object store's shared pages are
not counted once per process that maps them), or its RSS (/proc/<pid>/statm) where smaps_rollup
cannot be read. Processes that are gone or not ours to read are left out.

``MemoryWatch`` is what the scheduler enforces ``memory.host_budget`` on: every ``period_s`` (a
thread, never on the proving path) it asks a probe for the bytes of our processes on each node
and keeps, per node, the **work memory**: those bytes now minus a baseline at rest.

- Baseline: the first sample (taken once the provers are up and warm: key resident, kernels
  compiled, nothing in flight), and again every sample taken with nothing in flight anywhere (so
  growth that stays after work, a worker's imports, freed memory a process keeps for reuse, is
  absorbed at the next idle moment, while growth during work counts). Per process: a process
  first seen later (a new worker) enters the baseline at the size it has then; a Ray worker
  whose title says it runs nothing of ours (RESTING_TITLES: a synthesis worker between tasks, a
  CPU prover between calls) is re-based at each sample, except for its object-store pages
  (Pss_Shmem: in-flight partitions' batches), so a worker's first imports and caches stop
  counting as soon as it rests, not only when the whole run does.
- Peaks per node (``NodeMemory``): the most work memory seen, and the most bytes in all.

``MemorySampler`` is jobs/bench.py's: the machine's used memory and the PSS of this process and
its descendants (an embedded Ray node), at their peaks.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass

PAGE = os.sysconf("SC_PAGE_SIZE")
SAMPLE_S = 0.5  # the engine's sampling period
# Ray's process titles of a worker that runs nothing of ours now: a task worker between tasks, a
# CPU prover actor between calls (one call at a time; a threaded GPU actor's title is not a
# reliable sign of rest, so it has none here). While a task runs, the title is its name.
RESTING_TITLES = (b"ray::IDLE", b"ray::CpuProver")


@dataclass(frozen=True)
class ProcessMemory:
    """One process now: its bytes (PSS, or RSS), the object store's shared pages among them
    (Pss_Shmem: partitions' Arrow batches live there), and whether its title says it is at rest."""

    bytes: int
    shmem: int = 0
    resting: bool = False


# (node -> {pid: ProcessMemory}) of our processes now
Probe = Callable[[], dict[str, dict[int, ProcessMemory]]]


def process_memory(pid: int) -> ProcessMemory | None:
    """``pid`` now: PSS and Pss_Shmem from smaps_rollup (RSS from statm where that is not
    readable); None when it is gone or unreadable."""
    pss = shm = None
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    pss = int(line.split()[1]) * 1024
                elif line.startswith(b"Pss_Shmem:"):
                    shm = int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    if pss is None:
        try:
            with open(f"/proc/{pid}/statm", "rb") as f:
                pss = int(f.read().split()[1]) * PAGE
        except (OSError, ValueError, IndexError):
            return None
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            title = f.read(64).split(b"\0")[0].strip()
    except OSError:
        title = b""
    return ProcessMemory(pss, shm or 0, title in RESTING_TITLES)


def process_bytes(pid: int) -> int | None:
    """PSS of ``pid`` in bytes (RSS where smaps_rollup is not readable); None when it is gone or
    unreadable."""
    m = process_memory(pid)
    return None if m is None else m.bytes


def processes_memory(pids: Iterable[int]) -> dict[int, ProcessMemory]:
    """{pid: ProcessMemory} of those of ``pids`` that can be read."""
    out = {}
    for pid in set(pids):
        m = process_memory(pid)
        if m is not None:
            out[pid] = m
    return out


def processes_bytes(pids: Iterable[int]) -> dict[int, int]:
    """{pid: bytes} of those of ``pids`` that can be read."""
    return {pid: m.bytes for pid, m in processes_memory(pids).items()}


def descendants(root: int) -> list[int]:
    """``root`` and every process below it (parents from /proc/<pid>/stat)."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(b")") + 2:].split()[1])  # after "(comm)": state, ppid
        children.setdefault(ppid, []).append(int(name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, ()))
    return out


RAY_AGENTS = (b"ray::DashboardAgent", b"ray::RuntimeEnvAgent")  # Ray's own agents, titled like workers


def ray_node_processes(root: int) -> list[int]:
    """Of ``root`` (a driver that started an embedded Ray) and its descendants, the ones that hold
    partitions: ``root``, the raylet (the object store's shared memory is mapped there) and the
    Ray workers (titled ``ray::<task or actor>``, ``ray::IDLE``); not Ray's control plane (GCS,
    dashboard, log monitor, the dashboard and runtime-env agents), which grows on its own clock."""
    out = []
    for pid in descendants(root):
        if pid == root:
            out.append(pid)
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read(200)
            with open(f"/proc/{pid}/comm", "rb") as f:
                comm = f.read().strip()
        except OSError:
            continue
        if comm == b"raylet" or (cmd.startswith(b"ray::") and not cmd.startswith(RAY_AGENTS)):
            out.append(pid)
    return out


def host_used() -> int:
    """The machine's used memory (MemTotal - MemAvailable), bytes."""
    info = {}
    with open("/proc/meminfo", "rb") as f:
        for line in f:
            k, v = line.split(b":", 1)
            info[k] = int(v.split()[0]) * 1024
    return info[b"MemTotal"] - info.get(b"MemAvailable", info.get(b"MemFree", 0))


def measurable() -> bool:
    """Whether this machine's processes can be measured here (Linux /proc)."""
    return os.path.isfile(f"/proc/{os.getpid()}/statm")


@dataclass
class NodeMemory:
    """One node's measured memory since the watch's last reset_peaks (bytes)."""

    node: str
    baseline: int  # our processes at rest (the last idle sample)
    peak_work: int  # the most above the baseline: what in-flight partitions used
    peak_total: int  # the most our processes held in all
    processes: int  # our processes on the node at the last sample
    samples: int
    now: int = 0  # what our processes held at the last sample


class MemoryWatch:
    """Samples ``probe`` every ``period_s`` in a thread (see the module's docstring).

    ``load``: a callable returning the partitions in flight and a counter of submissions (the
    scheduler's); a sample counts as idle when both reads, before and after it, say 0 in flight
    and the same counter."""

    def __init__(self, probe: Probe, period_s: float = SAMPLE_S):
        self.probe, self.period_s = probe, period_s
        self.load: Callable[[], tuple[int, Hashable]] = lambda: (0, 0)
        self._base: dict[str, dict[int, int]] = {}  # node -> pid -> bytes at rest
        self._base_shm: dict[str, dict[int, int]] = {}  # node -> pid -> its object-store pages then
        self._now: dict[str, dict[int, int]] = {}
        self._peak_work: dict[str, int] = {}
        self._peak_total: dict[str, int] = {}
        self._samples: dict[str, int] = {}
        self.last_in_flight = 0  # partitions in flight while the last sample was taken (the most)
        self.errors = 0  # probes that raised (a node's sampler unreachable ...): skipped
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        """Started (its baseline taken) and not stopped."""
        return self._thread is not None and self._thread.is_alive()

    def start(self, load: Callable[[], tuple[int, Hashable]] | None = None) -> MemoryWatch:
        """The first sample now (the baseline), then the thread."""
        if load is not None:
            self.load = load
        self.sample(force_idle=True)
        self._thread = threading.Thread(target=self._loop, daemon=True, name="cuzk-memory")
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=10)

    def _loop(self) -> None:
        while not self._stop.wait(self.period_s):
            self.sample()

    def sample(self, force_idle: bool = False, rebase: bool = True) -> None:
        """Take one sample now (the thread does this every period_s). rebase=False: an idle sample
        leaves the baselines as they are (a batch's closing sample: what it left is its work)."""
        before = self.load()
        try:
            now = self.probe()
        except Exception:  # noqa: BLE001  a sample missed is no reason to stop the run
            self.errors += 1
            return
        after = self.load()
        idle = force_idle or (rebase and before == after and before[0] == 0)
        with self._lock:
            self.last_in_flight = max(before[0], after[0])
            for node, mems in now.items():
                procs = {pid: m.bytes for pid, m in mems.items()}
                base, shm = self._base.setdefault(node, {}), self._base_shm.setdefault(node, {})
                if idle:
                    base.clear()
                    shm.clear()
                for pid in list(base):
                    if pid not in procs:  # gone: out of the baseline too
                        del base[pid], shm[pid]
                for pid, m in mems.items():
                    if pid not in base:  # first seen (or an idle sample): enters the baseline as it is
                        base[pid], shm[pid] = m.bytes, m.shmem
                    elif m.resting:  # a worker at rest: its growth is no partition's, but the object
                        base[pid] = m.bytes - m.shmem + shm[pid]  # store's pages may be (they count)
                self._now[node] = procs
                total = sum(procs.values())
                self._peak_total[node] = max(self._peak_total.get(node, 0), total)
                self._peak_work[node] = max(self._peak_work.get(node, 0), self._work(node))
                self._samples[node] = self._samples.get(node, 0) + 1

    def _work(self, node: str) -> int:
        return max(0, sum(self._now[node].values()) - sum(self._base[node].values()))

    def work(self) -> tuple[str | None, int]:
        """(node, bytes) of the node with the most work memory at the last sample ((None, 0) before any)."""
        with self._lock:
            if not self._now:
                return None, 0
            node = max(self._now, key=self._work)
            return node, self._work(node)

    def baseline(self, node: str | None) -> int:
        """``node``'s bytes at rest (0 for a node not sampled)."""
        with self._lock:
            return sum(self._base.get(node, {}).values())

    def nodes(self) -> list[NodeMemory]:
        """Per node: baseline, peaks since reset_peaks, processes, samples."""
        with self._lock:
            return [NodeMemory(n, sum(self._base[n].values()), self._peak_work.get(n, 0),
                               self._peak_total.get(n, 0), len(self._now[n]), self._samples.get(n, 0),
                               sum(self._now[n].values()))
                    for n in sorted(self._now)]

    def reset_peaks(self) -> None:
        """Peaks count afresh from the last sample (each batch reports its own); baselines stay."""
        with self._lock:
            for n in self._now:
                self._peak_work[n] = self._work(n)
                self._peak_total[n] = sum(self._now[n].values())
                self._samples[n] = 0


class MemorySampler:
    """jobs/bench.py's context manager: every ``period`` s, the machine's used memory above what it
    was when sampling started (__enter__) and the summed PSS of this process and its descendants
    (the embedded Ray node's raylet, object store and workers), at their peaks."""

    def __init__(self, period: float = 0.25):
        self.period = period
        self.base_used = 0
        self.peak_used = 0
        self.peak_pss = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="cuzk-mem")

    def _loop(self):
        while not self._stop.is_set():
            self.peak_used = max(self.peak_used, host_used() - self.base_used)
            self.peak_pss = max(self.peak_pss, sum(processes_bytes(descendants(os.getpid())).values()))
            self._stop.wait(self.period)

    def __enter__(self):
        if measurable():  # elsewhere: no memory figures rather than a failure
            self.base_used = host_used()
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
