"""Thin Ray actor wrappers around engines.worker.ProverWorker (created with ``ray.remote(...)``
at the call site, so this module does not import Ray at load time)."""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from contextlib import contextmanager

from ..partition import from_record_batch
from .types import BundleKey, DeviceRoom, KeyRef, PartitionOutcome, StoreKey
from .worker import ProverWorker, device_room


class ProverActor:
    """One prover of the pool: a backend and the keys resident in it (engines.worker.ProverWorker).
    Lifecycle: construct (nothing loaded) -> ready(keys) (where it runs; keys resident, kernels
    warm) -> prove(batch, key) for partitions of any key, each key loaded on first use; evict(keys).

    Keys reach the actor through its methods, never its constructor: Ray reports constructor
    arguments that live in the object store (or hold ObjectRefs) with max_restarts > 0 as an
    error-level line on every run. A restarted actor holds no key until a call hands it one again
    (the executor passes the key's small KeyRef with every call), so a restart still works.

    Device memory: a key that does not load, or a partition that does not prove, beside the other
    keys (MemoryError from the backend) is retried after evicting this actor's least recently used
    key that no partition is using (``_making_room``)."""

    def __init__(self, backend: str, threads: int = 2):
        self.backend_arg, self.threads = backend, threads
        self.worker: ProverWorker | None = None
        self.backend_name = backend
        self.load_seconds: dict = {}  # the last key loaded: map, key, matrices, warm_up, total
        self.in_use: dict[str, int] = {}  # key id -> partitions proving with it now (never evicted then)
        self._lock = threading.RLock()  # GPU actors are threaded: one load or eviction at a time
        self._use_lock = threading.Lock()  # in_use (held briefly: a load does not hold up other keys' partitions)
        self.slots = PartitionSlots()  # partitions at once under the keys' own limits (KeyRef.concurrency)

    def _ensure_worker(self) -> ProverWorker:
        if self.worker is not None:  # without the lock: a load holds it for seconds, partitions go on
            return self.worker
        with self._lock:
            if self.worker is None:
                self.worker = ProverWorker(self.backend_arg, threads=self.threads)
                self.backend_name = self.worker.backend.name
            return self.worker

    def _load(self, key: KeyRef | None) -> None:
        """Make the key resident (once): map a bundle, or fetch the key and matrices from the store."""
        if key is None:
            raise RuntimeError("this prover has no key (restarted, and no key came with the call)")
        if key.key_id in self._ensure_worker().keys:
            return
        with self._lock:
            if key.key_id in self.worker.keys:
                return
            t0 = time.perf_counter()
            pk, cs = fetch_key(key.source)
            mapped = time.perf_counter() - t0
            seconds = self._making_room(key.key_id, lambda: self.worker.load(key.key_id, pk, cs))
            self.load_seconds = {"map": round(mapped, 3), **seconds, "total": round(time.perf_counter() - t0, 3)}

    def _making_room(self, key_id: str, step):
        """``step()``, run again after evicting this prover's least recently used idle key (no
        partition using it, not ``key_id``) each time the device is full (MemoryError from the
        backend); the MemoryError, naming the key, when no idle key is left. Keys are fitted to
        the card as if each were alone on it (the service's VRAM reading): one loading, or a
        partition proving, beside other resident keys takes their room when they are idle."""
        while True:
            try:
                return step()
            except MemoryError as e:
                # (the load lock is held already when a load makes room); idle and evicted under
                # the use lock: a partition cannot take the key up in between
                with self._lock, self._use_lock:
                    idle = [k for k in self.worker.keys if k != key_id and not self.in_use.get(k)]
                    if idle:
                        self.worker.evict(idle[0])
                if not idle:
                    raise MemoryError(f"key {key_id}: {e} (no idle key left to evict on this prover)") from None

    def evict(self, key_ids: list[str]) -> list[str]:
        """Free these keys (the pool evicting them); the ids of those that were resident."""
        with self._lock:
            if self.worker is None:
                return []
            with self._use_lock:  # (a partition cannot take a key up while it is evicted)
                return [k for k in key_ids if not self.in_use.get(k) and self.worker.evict(k)]

    def ready(self, keys: list[KeyRef] | None = None) -> dict:
        """Load the keys (those not yet resident); where this prover runs and what it holds."""
        import ray

        for key in keys or ():
            self._load(key)
        return {"node_id": ray.get_runtime_context().get_node_id(), "pid": os.getpid(),
                "backend": self.backend_name, "gpu_ids": [str(g) for g in ray.get_gpu_ids()],
                "load_seconds": self.load_seconds, "keys": list(self.worker.keys) if self.worker else [],
                **device_memory(self.worker)}

    def device_room(self) -> DeviceRoom | None:
        """This prover's reading of its device (None on the CPU backend): what a key may use."""
        import ray

        return device_room(self._ensure_worker(), ray.get_runtime_context().get_node_id())

    def prove(self, batch, key: KeyRef, r: int | None = None, s: int | None = None) -> PartitionOutcome:
        """Prove the partition in an Arrow batch made by the synthesis task with ``key`` (loaded
        first when not resident)."""
        import ray

        with self._use_lock:  # before the load: an eviction on another thread leaves it alone from here
            self.in_use[key.key_id] = self.in_use.get(key.key_id, 0) + 1
        try:
            self._load(key)
            with self.slots.hold(key.concurrency):  # the wait is not the partition's time
                t0 = time.perf_counter()
                part = from_record_batch(batch)
                out = self._making_room(key.key_id, lambda: self.worker.prove(key.key_id, part, r, s))
        finally:
            with self._use_lock:
                self.in_use[key.key_id] -= 1
        out.prover_node = ray.get_runtime_context().get_node_id()
        out.prover_pid = os.getpid()
        out.synthesis_node = part.extra.get("synthesis_node")
        if part.extra.get("synthesis_pid", "").isdigit():
            out.synthesis_pid = int(part.extra["synthesis_pid"])
        out.times["synthesis"] = float(part.extra.get("synthesis_s", "nan"))
        if "split_s" in part.extra:  # partition 0 of a proof whose input was split (SplitShare)
            out.times["split"] = float(part.extra["split_s"])
        if "synthesis_start" in part.extra:
            s0 = float(part.extra["synthesis_start"])
            out.spans.append(("synthesis", s0, s0 + out.times["synthesis"]))
        out.times["prove_total"] = time.perf_counter() - t0
        if "gpu" in out.times:
            from .metrics import prover_metrics

            prover_metrics()["gpu_busy"].inc(out.times["gpu"], tags={"backend": self.backend_name})
        return out


class PartitionSlots:
    """The partitions one prover runs at once, admitted in arrival order. A key's own limit
    (KeyRef.concurrency: its working sets fit the GPU only that many at a time, the 32 GiB PoRep
    on an 80 GB card) bounds every partition on the prover while one of that key's runs, and a
    partition of it waits until fewer than its limit run: the VRAM is the card's, so a partition
    of another key beside it would take the room its limit was fitted for. A prover's threads are
    fixed when it starts (gpu_concurrency), before a key's need is known. ``limit`` 0 (or None):
    no limit of the key's own."""

    def __init__(self):
        self._cond = threading.Condition()
        self._running: list[int] = []  # the limit of each partition inside (0: none of its own)
        self._line: deque[object] = deque()  # callers waiting, first come first admitted

    @contextmanager
    def hold(self, limit: int | None):
        limit = int(limit or 0)
        me = object()
        with self._cond:
            self._line.append(me)
            try:
                self._cond.wait_for(lambda: self._line[0] is me and self._admits(limit))
            finally:  # admitted, or interrupted while waiting: out of the line either way
                self._line.remove(me)
                self._cond.notify_all()  # the next in line may be admitted too
            self._running.append(limit)
        try:
            yield
        finally:
            with self._cond:
                self._running.remove(limit)
                self._cond.notify_all()

    def _admits(self, limit: int) -> bool:
        """One more partition keeps every limit of those inside (and its own)."""
        return all(len(self._running) < c for c in (*self._running, limit) if c)


def fetch_key(source):
    """(pk, cs) from a key's source: a bundle memory-mapped from the node's disk (shared page
    cache), or the key and matrices fetched from the object store by reference."""
    if isinstance(source, BundleKey):
        from ..formats.native import load_bundle

        return load_bundle(source.path, verify_hashes=False)
    if isinstance(source, StoreKey):
        import ray

        return tuple(ray.get([source.pk, source.cs]))
    raise TypeError(f"key source {type(source).__name__}: expected BundleKey or StoreKey")


def device_memory(worker: ProverWorker | None) -> dict:
    """{"vram_used": bytes in use on the prover's device (all processes), "vram_total": bytes}, or
    {} without a device (the CPU backend)."""
    if worker is None or worker.backend.name != "cuda":
        return {}
    free, total = worker.backend.cp.cuda.runtime.memGetInfo()
    return {"vram_used": int(total - free), "vram_total": int(total)}


class CpuProver(ProverActor):
    """Prover actor on the CPU backend (one per node without a GPU)."""


class GpuProver(ProverActor):
    """Prover actor holding (a fraction of) one GPU; the key stays resident in VRAM."""


class NodeSampler:
    """On a node other than the driver's: the memory of the given processes of that node
    (engines.memory.processes_memory; the driver reads its own node's /proc itself)."""

    def sample(self, pids: list[int]) -> dict:
        from .memory import processes_memory

        return processes_memory(pids)
