"""Thin Ray actor wrappers around engines.worker.ProverWorker (created with ``ray.remote(...)``
at the call site, so this module does not import Ray at load time)."""

from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager

from ..partition import from_record_batch
from .types import BundleKey, KeyRef, PartitionOutcome, StoreKey
from .worker import ProverWorker


class ProverActor:
    """One prover of the pool: a backend and the keys resident in it (engines.worker.ProverWorker).
    Lifecycle: construct (nothing loaded) -> ready(keys) (where it runs; keys resident, kernels
    warm) -> prove(batch, key) for partitions of any key, each key loaded on first use; evict(keys).

    Keys reach the actor through its methods, never its constructor: Ray reports constructor
    arguments that live in the object store (or hold ObjectRefs) with max_restarts > 0 as an
    error-level line on every run. A restarted actor holds no key until a call hands it one again
    (the executor passes the key's small KeyRef with every call), so a restart still works.

    Device memory: a key that does not fit beside the others (MemoryError from the backend) is
    retried after evicting this actor's least recently used key that no partition is using."""

    def __init__(self, backend: str, threads: int = 2):
        self.backend_arg, self.threads = backend, threads
        self.worker: ProverWorker | None = None
        self.backend_name = backend
        self.load_seconds: dict = {}  # the last key loaded: map, key, matrices, warm_up, total
        self.in_use: dict[str, int] = {}  # key id -> partitions proving with it now (never evicted then)
        self._lock = threading.Lock()  # GPU actors are threaded: one load or eviction at a time
        self._use_lock = threading.Lock()  # in_use (held briefly: a load does not hold up other keys' partitions)
        self.slots = KeySlots()  # a key's own limit of partitions at once (KeyRef.concurrency)

    def _load(self, key: KeyRef | None) -> None:
        """Make the key resident (once): map a bundle, or fetch the key and matrices from the store."""
        if key is None:
            raise RuntimeError("this prover has no key (restarted, and no key came with the call)")
        if self.worker is not None and key.key_id in self.worker.keys:
            return
        with self._lock:
            if self.worker is None:
                self.worker = ProverWorker(self.backend_arg, threads=self.threads)
                self.backend_name = self.worker.backend.name
            if key.key_id in self.worker.keys:
                return
            t0 = time.perf_counter()
            pk, cs = fetch_key(key.source)
            mapped = time.perf_counter() - t0
            while True:
                try:
                    seconds = self.worker.load(key.key_id, pk, cs)
                    break
                except MemoryError as e:  # the device is full: the least recently used idle key goes
                    with self._use_lock:
                        idle = [k for k in self.worker.keys if not self.in_use.get(k)]
                    if not idle:
                        raise MemoryError(f"key {key.key_id}: {e} (no idle key left to evict on this prover)") \
                            from None
                    self.worker.evict(idle[0])
            self.load_seconds = {"map": round(mapped, 3), **seconds, "total": round(time.perf_counter() - t0, 3)}

    def evict(self, key_ids: list[str]) -> list[str]:
        """Free these keys (the pool evicting them); the ids of those that were resident."""
        with self._lock:
            if self.worker is None:
                return []
            with self._use_lock:
                idle = [k for k in key_ids if not self.in_use.get(k)]
            return [k for k in idle if self.worker.evict(k)]

    def ready(self, keys: list[KeyRef] | None = None) -> dict:
        """Load the keys (those not yet resident); where this prover runs and what it holds."""
        import ray

        for key in keys or ():
            self._load(key)
        return {"node_id": ray.get_runtime_context().get_node_id(), "pid": os.getpid(),
                "backend": self.backend_name, "gpu_ids": [str(g) for g in ray.get_gpu_ids()],
                "load_seconds": self.load_seconds, "keys": list(self.worker.keys) if self.worker else [],
                **device_memory(self.worker)}

    def prove(self, batch, key: KeyRef, r: int | None = None, s: int | None = None) -> PartitionOutcome:
        """Prove the partition in an Arrow batch made by the synthesis task with ``key`` (loaded
        first when not resident)."""
        import ray

        with self._use_lock:  # before the load: an eviction on another thread leaves it alone from here
            self.in_use[key.key_id] = self.in_use.get(key.key_id, 0) + 1
        try:
            self._load(key)
            with self.slots.hold(key.key_id, key.concurrency):  # the wait is not the partition's time
                t0 = time.perf_counter()
                part = from_record_batch(batch)
                out = self.worker.prove(key.key_id, part, r, s)
        finally:
            with self._use_lock:
                self.in_use[key.key_id] -= 1
        out.prover_node = ray.get_runtime_context().get_node_id()
        out.prover_pid = os.getpid()
        out.synthesis_node = part.extra.get("synthesis_node")
        if part.extra.get("synthesis_pid", "").isdigit():
            out.synthesis_pid = int(part.extra["synthesis_pid"])
        out.times["synthesis"] = float(part.extra.get("synthesis_s", "nan"))
        if "synthesis_start" in part.extra:
            s0 = float(part.extra["synthesis_start"])
            out.spans.append(("synthesis", s0, s0 + out.times["synthesis"]))
        out.times["prove_total"] = time.perf_counter() - t0
        if "gpu" in out.times:
            from .metrics import prover_metrics

            prover_metrics()["gpu_busy"].inc(out.times["gpu"], tags={"backend": self.backend_name})
        return out


class KeySlots:
    """Per key, at most ``limit`` callers inside ``hold`` at once (the others wait their turn):
    a GPU prover's threads are fixed when it starts, and a key whose working sets fit the VRAM
    only one at a time (the 32 GiB PoRep on an 80 GB card) must not run two of its partitions
    together. ``limit`` 0 (or None): no limit of the key's own."""

    def __init__(self):
        self._lock = threading.Lock()
        self._sems: dict[tuple[str, int], threading.Semaphore] = {}

    @contextmanager
    def hold(self, key_id: str, limit: int | None):
        if not limit:
            yield
            return
        with self._lock:  # keyed by the limit too: a key added again with another limit gets its own
            sem = self._sems.setdefault((key_id, limit), threading.Semaphore(limit))
        with sem:
            yield


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
