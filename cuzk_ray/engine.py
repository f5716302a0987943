"""The proving engine on Ray: synthesis tasks feed prover actors through a bounded pipeline.

    driver: for each (proof, partition), oldest proof first, lowest partition first:
      reserve the partition's host bytes (memory.host_budget; Ray does not enforce memory=)
      synth:<proof>:<partition>  Ray task (CPU, memory=, spread over nodes) -> Arrow RecordBatch
      <Cpu|Gpu>Prover.prove      Ray actor (least loaded)                  -> proof, stage seconds
      verify in the driver (pairing check); release the bytes
    at most ``pw`` partitions are in flight (synthesizing, queued or proving) at any time.
    A failed attempt (actor died, task error) is retried up to ``max_attempts``; a partition that
    keeps failing, or whose proof does not verify, fails its proof while the others complete.

Tasks receive plain dicts and ObjectRefs only (never OmegaConf objects or big values).
"""

from __future__ import annotations

import heapq
import logging
import os
import time

import numpy as np
import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from .actors.prover import CpuProver, GpuProver
from .pipeline import BatchResult, PartitionResult, _verified_result, _Work, check_budget, partition_host_bytes
from .backends import cuda_backend_class, resolve_backend_name
from .circuits import synthesize
from .groth16.keys import ProvingKey
from .memory import HostBudget
from .metrics import engine_metrics
from .partition import Partition, to_record_batch
from .r1cs import ConstraintSystem

log = logging.getLogger(__name__)


def init_ray(ray_cfg: dict) -> bool:
    """Connect to ``ray.address`` / RAY_ADDRESS when given, else start an embedded Ray bound to
    127.0.0.1. Returns True when this call started or connected Ray (so the caller shuts it down)."""
    if ray.is_initialized():
        return False
    kwargs = {"logging_level": logging.WARNING, "log_to_driver": True}
    if ray_cfg.get("ship_package", True):
        # Workers on other nodes (or without the package installed) import cuzk_ray from here.
        import cuzk_ray

        kwargs["runtime_env"] = {"py_modules": [os.path.dirname(cuzk_ray.__file__)]}
    address = ray_cfg.get("address") or os.environ.get("RAY_ADDRESS")
    if address:
        ray.init(address=address, **kwargs)
    else:
        ray.init(address="local", num_cpus=ray_cfg.get("num_cpus"), num_gpus=ray_cfg.get("num_gpus"),
                 include_dashboard=bool(ray_cfg.get("dashboard", False)), dashboard_host="127.0.0.1",
                 _node_ip_address="127.0.0.1", _metrics_export_port=ray_cfg.get("metrics_export_port"), **kwargs)
    return True


@ray.remote(num_cpus=1)
def _synthesize_task(spec: dict, pid: str, circuit_id: str, synth_fn=None):
    t0, w0 = time.perf_counter(), time.time()
    witness = (synth_fn or synthesize)(spec)
    extra = {"synthesis_node": ray.get_runtime_context().get_node_id(),
             "synthesis_s": f"{time.perf_counter() - t0:.6f}", "synthesis_start": f"{w0:.6f}",
             "synthesis_pid": str(os.getpid())}
    return to_record_batch(Partition(pid, spec["partition"], circuit_id, witness, extra))


class ProvingEngine:
    """Drives batches of proofs of one circuit through synthesis tasks and prover actors."""

    def __init__(self, pk: ProvingKey, cs: ConstraintSystem, circuit, backend: str = "auto", pw: int | None = 2,
                 provers: int | None = None, threads: int = 2, host_budget: int | None = None,
                 pw_per_gpu: int = 8,
                 gpu_workers_per_device: int = 1, max_attempts: int = 3, max_restarts: int = 3,
                 placement: str = "auto", gpu_concurrency: int = 2):
        self.circuit, self.pk = circuit, pk
        self.backend = resolve_backend_name(backend)
        # Where prover actors go: "gpu" = one per GPU (x gpu_workers_per_device), "cpu" = one per node.
        # "auto" follows the backend; placement="gpu" with backend="cpu" exercises GPU placement on
        # Ray logical GPUs without CUDA (tests of multi-GPU scheduling).
        self.placement = ("gpu" if self.backend == "cuda" else "cpu") if placement == "auto" else placement
        self.max_attempts = max(1, int(max_attempts))
        self.part_bytes = partition_host_bytes(circuit, pk.domain_size, self.backend)
        check_budget(host_budget, self.part_bytes, circuit.circuit_id)
        self.budget = HostBudget(host_budget)
        if pw is None:  # 2 for CPU provers; enough per GPU to keep synthesis ahead of the device
            pw = 2 if self.placement != "gpu" else int(pw_per_gpu) * max(1, int(ray.cluster_resources().get("GPU", 0)))
        self.pw = max(1, int(pw))
        if host_budget is not None:
            self.pw = min(self.pw, host_budget // self.part_bytes)
        self.metrics = engine_metrics()
        pk_ref, cs_ref = ray.put(pk), ray.put(cs)  # once; actors get zero-copy views
        self._key_refs = (pk_ref, cs_ref)  # held for the engine's life: a restarted actor needs them
        if int(gpu_concurrency) < 1:
            raise ValueError(f"gpu_concurrency={gpu_concurrency}: must be at least 1")
        self.gpu_concurrency = int(gpu_concurrency)
        self.provers, self.prover_info = self._start_provers(pk_ref, cs_ref, provers, threads,
                                                             gpu_workers_per_device, max_restarts)
        self.load = [0] * len(self.provers)
        # Input files (e.g. .wtns) live where the driver runs: read them there; else spread.
        self._synth_strategy = (NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
                                if getattr(circuit, "local_files", False) else "SPREAD")

    # -- actors -------------------------------------------------------------------------------

    def _start_provers(self, pk_ref, cs_ref, count, threads, gpw, max_restarts):
        opts = {"max_restarts": max_restarts, "max_task_retries": 0}  # the engine re-runs partitions
        if self.placement == "gpu":
            n_gpus = int(ray.cluster_resources().get("GPU", 0))
            if self.backend == "cuda" and cuda_backend_class() is None:
                raise RuntimeError("backend=cuda: the CUDA proving backend is not available in this build; "
                                   "use backend=cpu (or backend=auto)")
            if n_gpus == 0:
                raise RuntimeError(f"backend={self.backend}: the Ray cluster has no GPUs; use backend=cpu "
                                   f"or add GPU nodes")
            gpw = max(1, int(gpw))
            cls, count = GpuProver, count or n_gpus * gpw
            # max_concurrency: partitions on threads of one actor, so one's upload, host work and
            # assembly overlap another's kernels (the backend runs one partition's kernels at a time).
            placements = [dict(opts, num_gpus=1.0 / gpw, num_cpus=0, max_concurrency=self.gpu_concurrency)
                          for _ in range(count)]
        else:
            cls = CpuProver
            nodes = [n for n in ray.nodes() if n["Alive"] and n["Resources"].get("CPU", 0) >= 1]
            count = count or len(nodes)
            placements = []
            for i in range(count):  # one per node by default, round-robin beyond
                node = nodes[i % len(nodes)]["NodeID"]
                placements.append(dict(opts, num_cpus=1,
                                       scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=True)))
        tag = f"{os.getpid()}-{id(self):x}"
        actors = [ray.remote(cls).options(name=f"{cls.__name__}-{i}-{tag}", **p).remote(self.backend, pk_ref, cs_ref,
                                                                                         threads)
                  for i, p in enumerate(placements)]
        try:
            info = ray.get([a.ready.remote() for a in actors], timeout=600)
        except ray.exceptions.GetTimeoutError:
            raise RuntimeError(f"{cls.__name__}: actors not ready after 600 s (is the cluster short of "
                               f"{'GPUs' if self.backend == 'cuda' else 'CPUs'}?)") from None
        except ray.exceptions.RayActorError as e:  # e.g. the key or matrices do not fit in VRAM
            for a in actors:
                ray.kill(a, no_restart=True)
            raise RuntimeError(f"{cls.__name__} could not start: {_start_error(e)}") from None
        return actors, info

    def shutdown(self):
        for a in self.provers:
            ray.kill(a, no_restart=True)

    # -- pipeline -----------------------------------------------------------------------------

    def run(self, proofs: int, seed: int = 0, progress=None, synth_fn=None) -> BatchResult:
        """Prove ``proofs`` proofs of circuit.partitions partitions each; every partition verified.

        ``progress(result, done, total)`` is called after each verified partition.
        ``synth_fn`` replaces the circuit's synthesis (tests use it to inject failures)."""
        parts = self.circuit.partitions
        pending = [_Work(p, k) for p in range(proofs) for k in range(parts)]
        heapq.heapify(pending)  # oldest proof first, lowest partition first (retries too)
        in_flight: dict = {}
        done_parts: dict[str, list[PartitionResult]] = {}
        failed: dict[str, str] = {}
        t0, max_in_flight, retries, n_done = time.perf_counter(), 0, 0, 0
        m = self.metrics
        tags = {"circuit": self.circuit.circuit_id}
        while pending or in_flight:
            while pending and len(in_flight) < self.pw and self.budget.fits(self.part_bytes):
                work = heapq.heappop(pending)
                if work.proof_id in failed:
                    continue
                self.budget.reserve(self.part_bytes)
                in_flight[self._submit(work, seed, synth_fn)] = work
                max_in_flight = max(max_in_flight, len(in_flight))
            m["in_flight"].set(len(in_flight))
            m["host_bytes"].set(self.budget.reserved)
            if not in_flight:
                break
            (ref,), _ = ray.wait(list(in_flight), num_returns=1)
            work = in_flight.pop(ref)
            self.budget.release(self.part_bytes)
            self.load[work.prover] -= 1
            try:
                out = ray.get(ref)
            except (ray.exceptions.RayError, ValueError) as e:  # actor died, task raised, object lost
                m["partitions_failed"].inc(tags=tags)
                work.attempts += 1
                reason = _short(e)
                if work.attempts < self.max_attempts:
                    retries += 1
                    log.warning("%s partition %d: attempt %d failed (%s); retrying", work.proof_id,
                                work.partition, work.attempts, reason)
                    heapq.heappush(pending, work)
                else:
                    failed.setdefault(work.proof_id, f"partition {work.partition} failed {work.attempts} times: {reason}")
                continue
            res = _verified_result(self.pk.vk, out, work)
            if res is None:
                failed.setdefault(work.proof_id, f"partition {work.partition}: the proof does not verify "
                                                 f"(does the witness satisfy the circuit?)")
                continue
            for st, sec in res.times.items():
                if np.isfinite(sec):
                    m["stage_seconds"].observe(sec, tags={"stage": st})
            m["partitions_done"].inc(tags=tags)
            got = done_parts.setdefault(work.proof_id, [])
            got.append(res)
            if len(got) == parts:
                m["proofs_done"].inc(tags=tags)
            n_done += 1
            if progress:
                progress(res, n_done, proofs * parts)
        m["in_flight"].set(0)
        m["host_bytes"].set(0)
        results = sorted((r for pid, rs in done_parts.items() if pid not in failed and len(rs) == parts for r in rs),
                         key=lambda r: (r.proof_id, r.partition))
        return BatchResult(results, failed, time.perf_counter() - t0, self.prover_info, max_in_flight,
                           self.part_bytes, self.budget.limit, self.budget.peak, retries)

    def _submit(self, work: _Work, seed: int, synth_fn):
        spec = self.circuit.synth_spec(seed, work.proof, work.partition)
        batch = _synthesize_task.options(name=f"synth:{work.proof_id}:{work.partition}", memory=self.part_bytes,
                                         scheduling_strategy=self._synth_strategy).remote(
            spec, work.proof_id, self.circuit.circuit_id, synth_fn)
        work.prover = int(np.argmin(self.load))
        self.load[work.prover] += 1
        return self.provers[work.prover].prove.remote(batch)


def _start_error(e: BaseException) -> str:
    """The error an actor's constructor raised (MemoryError: GPU memory ...), from Ray's report."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    for ln in reversed(lines):  # the remote traceback ends with "<Type>: <message>"
        head = ln.split(":", 1)[0]
        if head.endswith(("Error", "Exception")) and " " not in head:
            return ln[:300]
    return _short(e)


def _short(e: BaseException) -> str:
    """The last meaningful line of a (possibly remote) exception."""
    cause = getattr(e, "cause", None)
    if cause is not None and not isinstance(cause, ray.exceptions.RayError):
        return f"{type(cause).__name__}: {cause}"
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return f"{type(e).__name__}: {lines[0] if lines else ''}"[:300]
