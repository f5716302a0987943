"""Thin Ray actor wrappers around engines.worker.PartitionProver (created with ``ray.remote(...)``
at the call site, so this module does not import Ray at load time)."""

from __future__ import annotations

import os
import time

from ..partition import from_record_batch
from .types import BundleKey, PartitionOutcome
from .worker import PartitionProver


class ProverActor:
    """Lifecycle: construct (backend, key and matrices resident, kernels warm) -> ready() -> prove()."""

    def __init__(self, backend: str, pk, cs, threads: int = 2):
        t0 = time.perf_counter()
        if isinstance(pk, BundleKey):  # memory-mapped from the node's disk (shared page cache)
            from ..formats.native import load_bundle

            pk, cs = load_bundle(pk.path, verify_hashes=False)
        mapped = time.perf_counter() - t0
        self.worker = PartitionProver(backend, pk, cs, threads=threads)
        self.backend_name = self.worker.backend.name
        self.load_seconds = {"map": round(mapped, 3), **self.worker.load_seconds,
                             "total": round(time.perf_counter() - t0, 3)}

    def ready(self) -> dict:
        """Where this prover runs (the engine's prover_info)."""
        import ray

        return {"node_id": ray.get_runtime_context().get_node_id(), "pid": os.getpid(),
                "backend": self.backend_name, "gpu_ids": [str(g) for g in ray.get_gpu_ids()],
                "load_seconds": self.load_seconds}

    def prove(self, batch, r: int | None = None, s: int | None = None) -> PartitionOutcome:
        """Prove the partition in an Arrow batch made by the synthesis task."""
        import ray

        t0 = time.perf_counter()
        part = from_record_batch(batch)
        out = self.worker.prove(part, r, s)
        out.prover_node = ray.get_runtime_context().get_node_id()
        out.prover_pid = os.getpid()
        out.synthesis_node = part.extra.get("synthesis_node")
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
