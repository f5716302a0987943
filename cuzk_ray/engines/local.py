"""The in-process executor: no Ray. A submitted work item runs (synthesis, then proving) when the
scheduler asks for the next completion, one partition at a time. For a single small job Ray's
start-up (seconds) would dominate; results and failure semantics are the Ray executor's."""

from __future__ import annotations

import os
import time
from collections import deque

from ..partition import Partition
from .memory import ProcessMemory, processes_memory
from .metrics import Metrics
from .types import Completion, DeviceRoom, PartitionOutcome, SideOutcome, WorkItem
from .worker import ProverWorker, device_room, synthesize_witness


class LocalExecutor:
    """One ProverWorker in this process, holding every key added; pw is always 1."""

    def __init__(self, settings):
        self.worker = ProverWorker(settings.backend, threads=settings.cpu_threads)
        self.provers = [self.worker]
        self.prover_info = [{"node_id": "local", "pid": os.getpid(), "backend": self.worker.backend.name,
                             "load_seconds": {}}]
        self.metrics = Metrics()
        self._queue: deque[tuple[WorkItem, dict]] = deque()

    def add_key(self, key_id: str, pk, cs, warm: bool = True, concurrency: int = 0) -> None:
        """Load the key into this process's backend (now: there is nothing to gain by waiting;
        one partition at a time, whatever ``concurrency``)."""
        self.prover_info[0]["load_seconds"] = self.worker.load(key_id, pk, cs)

    def remove_key(self, key_id: str) -> None:
        """Free the key."""
        self.worker.evict(key_id)

    def device_rooms(self) -> list[DeviceRoom]:
        """This process's device reading ([] on the CPU backend)."""
        room = device_room(self.worker, "local")
        return [] if room is None else [room]

    def cancel(self, proof_ids) -> None:
        """Nothing to cancel: work runs in this process only when the scheduler asks for it."""

    def pw(self, requested: int | None) -> int:
        """One partition at a time, whatever was asked."""
        return 1

    def submit(self, work: WorkItem, spec: dict) -> None:
        """Queue ``work``; it runs in next_completion."""
        work.prover = 0
        self._queue.append((work, spec))

    def beside(self, fn, *args, name: str) -> SideOutcome:
        """``fn(*args)`` now, in this thread (there is no other process to run it in); ``name``
        unused. Its result() as RayExecutor.beside's."""
        return SideOutcome.of(fn, args)

    def can_submit(self) -> bool:
        """Always: the one prover is this process."""
        return True

    def blocked(self) -> str | None:
        """Never: work runs in this process when asked for, nothing waits on a resource."""
        return None

    def next_completion(self, timeout: float | None = None) -> Completion | None:
        """Run the oldest submitted work item now (``timeout`` does not apply: it runs here);
        with none submitted, wait ``timeout`` (a retry's backoff) and return None."""
        if not self._queue:
            if timeout:
                time.sleep(timeout)
            return None
        work, spec = self._queue.popleft()
        try:
            return Completion(work, self._prove(work, spec))
        except Exception as e:  # noqa: BLE001  as on Ray: this attempt fails, the scheduler decides
            return Completion(work, error=f"{type(e).__name__}: {e}")

    def _prove(self, work: WorkItem, spec: dict) -> PartitionOutcome:
        t0 = time.perf_counter()
        witness = synthesize_witness(spec, work.proof.synth_fn)
        synth_s = time.perf_counter() - t0
        key = work.proof.key
        out = self.worker.prove(key.key_id, Partition(work.proof_id, work.partition, key.circuit.circuit_id, witness))
        out.times["synthesis"] = synth_s
        out.synthesis_node = out.prover_node = "local"
        return out

    def sample_memory(self) -> dict[str, dict[int, ProcessMemory]]:
        """This process: it proves everything."""
        return {"local": processes_memory([os.getpid()])}

    def shutdown(self) -> None:
        """Nothing to stop."""
