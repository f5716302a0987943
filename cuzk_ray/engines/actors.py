"""Thin Ray actor wrappers around engines.worker.PartitionProver (created with ``ray.remote(...)``
at the call site, so this module does not import Ray at load time)."""

from __future__ import annotations

import os
import time

from ..partition import from_record_batch
from .types import BundleKey, PartitionOutcome, StoreKey
from .worker import PartitionProver


class ProverActor:
    """Lifecycle: construct (nothing loaded) -> ready(key) (backend, key and matrices resident,
    kernels warm) -> prove(batch, key).

    The key reaches the actor through its methods, not its constructor: Ray reports constructor
    arguments that live in the object store (or hold ObjectRefs) with max_restarts > 0 as an
    error-level line on every run. A restarted actor has no key until the next prove() hands it
    one again (the executor passes the key's small source with every call: a BundleKey path or
    a StoreKey of refs it holds), so a restart still works."""

    def __init__(self, backend: str, threads: int = 2):
        import threading

        self.backend_arg, self.threads = backend, threads
        self.worker: PartitionProver | None = None
        self.backend_name = backend
        self.load_seconds: dict = {}
        self._lock = threading.Lock()  # GPU actors are threaded: load the key once

    def _load(self, key) -> None:
        """Make the key resident (once): map a bundle, or fetch the key and matrices from the store."""
        with self._lock:
            if self.worker is not None:
                return
            if key is None:
                raise RuntimeError("this prover has no key (restarted, and no key came with the call)")
            t0 = time.perf_counter()
            if isinstance(key, BundleKey):  # memory-mapped from the node's disk (shared page cache)
                from ..formats.native import load_bundle

                pk, cs = load_bundle(key.path, verify_hashes=False)
            elif isinstance(key, StoreKey):  # in the object store, by reference
                import ray

                pk, cs = ray.get([key.pk, key.cs])
            else:
                raise TypeError(f"key source {type(key).__name__}: expected BundleKey or StoreKey")
            mapped = time.perf_counter() - t0
            worker = PartitionProver(self.backend_arg, pk, cs, threads=self.threads)
            self.backend_name = worker.backend.name
            self.load_seconds = {"map": round(mapped, 3), **worker.load_seconds,
                                 "total": round(time.perf_counter() - t0, 3)}
            self.worker = worker

    def ready(self, key=None) -> dict:
        """Load the key (when given and not yet loaded); where this prover runs (prover_info)."""
        import ray

        if key is not None:
            self._load(key)
        return {"node_id": ray.get_runtime_context().get_node_id(), "pid": os.getpid(),
                "backend": self.backend_name, "gpu_ids": [str(g) for g in ray.get_gpu_ids()],
                "load_seconds": self.load_seconds}

    def prove(self, batch, key=None, r: int | None = None, s: int | None = None) -> PartitionOutcome:
        """Prove the partition in an Arrow batch made by the synthesis task (``key``: the key's
        source, loaded first if this actor was restarted since ready())."""
        import ray

        self._load(key)
        t0 = time.perf_counter()
        part = from_record_batch(batch)
        out = self.worker.prove(part, r, s)
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
