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
from dataclasses import dataclass, field

import numpy as np
import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from .actors.prover import CpuProver, GpuProver
from .backends import cuda_backend_class, resolve_backend_name
from .circuits import synthesize
from .groth16.keys import ProvingKey
from .groth16.verifier import verify
from .memory import HostBudget
from .metrics import engine_metrics
from .partition import Partition, to_record_batch
from .r1cs import ConstraintSystem

log = logging.getLogger(__name__)


class ProofFailed(RuntimeError):
    """One or more proofs of a batch failed; the message names them and why."""


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
def _synthesize_task(spec: dict, proof_id: str, circuit_id: str, synth_fn=None):
    t0, w0 = time.perf_counter(), time.time()
    witness = (synth_fn or synthesize)(spec)
    extra = {"synthesis_node": ray.get_runtime_context().get_node_id(),
             "synthesis_s": f"{time.perf_counter() - t0:.6f}", "synthesis_start": f"{w0:.6f}",
             "synthesis_pid": str(os.getpid())}
    return to_record_batch(Partition(proof_id, spec["partition"], circuit_id, witness, extra))


@dataclass
class PartitionResult:
    proof_id: str
    partition: int
    proof: object
    public: list[int]
    times: dict
    synthesis_node: str | None
    prover_node: str | None
    verified: bool
    attempts: int = 1
    prover_pid: int | None = None
    prover_index: int = -1
    spans: list = field(default_factory=list)  # (stage, start, end), epoch seconds, for timelines
    vram_peak: int | None = None
    proof_index: int = 0


@dataclass
class BatchResult:
    results: list[PartitionResult]  # partitions of the proofs that completed, sorted
    failed: dict[str, str]  # proof_id -> why it failed
    wall_s: float
    provers: list[dict] = field(default_factory=list)
    max_in_flight: int = 0
    host_bytes_per_partition: int = 0
    host_budget: int | None = None
    host_peak: int = 0
    retries: int = 0


@dataclass(order=True)
class _Work:
    proof: int
    partition: int
    attempts: int = field(default=0, compare=False)
    prover: int = field(default=-1, compare=False)

    @property
    def proof_id(self) -> str:
        return proof_id(self.proof)


def proof_id(proof: int) -> str:
    """The id of the proof-th proof of a batch (directory name under proofs/)."""
    return f"proof-{proof:03d}"


def proof_index(pid: str) -> int:
    return int(pid.rsplit("-", 1)[1])


def partition_host_bytes(circuit, backend: str, domain_size: int | None = None) -> int:
    """Host bytes one in-flight partition holds: its witness (the Arrow batch in the object store),
    plus a, b, c (domain x 32 B each) while a CPU prover evaluates them."""
    domain = domain_size or circuit.domain_size()
    return circuit.witness_bytes() + (3 * domain * 32 if backend == "cpu" else 0)


def check_budget(host_budget: int | None, part_bytes: int, circuit_id: str) -> None:
    if host_budget is not None and host_budget < part_bytes:
        raise ValueError(f"memory.host_budget={host_budget} B is below one partition "
                         f"({part_bytes} B for {circuit_id})")


class ProvingEngine:
    """Drives batches of proofs of one circuit through synthesis tasks and prover actors."""

    def __init__(self, pk: ProvingKey, cs: ConstraintSystem, circuit, backend: str = "auto", pw: int = 2,
                 provers: int | None = None, threads: int = 2, host_budget: int | None = None,
                 gpu_workers_per_device: int = 1, max_attempts: int = 3, max_restarts: int = 3,
                 placement: str = "auto"):
        self.circuit, self.pk = circuit, pk
        self.backend = resolve_backend_name(backend)
        # Where prover actors go: "gpu" = one per GPU (x gpu_workers_per_device), "cpu" = one per node.
        # "auto" follows the backend; placement="gpu" with backend="cpu" exercises GPU placement on
        # Ray logical GPUs without CUDA (tests of multi-GPU scheduling).
        self.placement = ("gpu" if self.backend == "cuda" else "cpu") if placement == "auto" else placement
        self.max_attempts = max(1, int(max_attempts))
        self.part_bytes = partition_host_bytes(circuit, self.backend, pk.domain_size)
        check_budget(host_budget, self.part_bytes, circuit.circuit_id)
        self.budget = HostBudget(host_budget)
        self.pw = max(1, int(pw))
        if host_budget is not None:
            self.pw = min(self.pw, host_budget // self.part_bytes)
        self.metrics = engine_metrics()
        pk_ref, cs_ref = ray.put(pk), ray.put(cs)  # once; actors get zero-copy views
        self._key_refs = (pk_ref, cs_ref)  # held for the engine's life: a restarted actor needs them
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
            placements = [dict(opts, num_gpus=1.0 / gpw, num_cpus=0) for _ in range(count)]
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


def _verified_result(vk, out: dict, work: _Work) -> PartitionResult | None:
    """The partition's result after a pairing check (timed as "verify"), or None if it fails."""
    t0 = time.perf_counter()
    ok = verify(vk, out["public"], out["proof"])
    out["times"]["verify"] = time.perf_counter() - t0
    if not ok:
        return None
    return PartitionResult(out["proof_id"], out["partition"], out["proof"], out["public"], out["times"],
                           out.get("synthesis_node"), out.get("prover_node"), True, work.attempts + 1,
                           out.get("prover_pid"), work.prover, out.get("spans", []), out.get("vram_peak"),
                           work.proof)


def _short(e: BaseException) -> str:
    """The last meaningful line of a (possibly remote) exception."""
    cause = getattr(e, "cause", None)
    if cause is not None and not isinstance(cause, ray.exceptions.RayError):
        return f"{type(cause).__name__}: {cause}"
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return f"{type(e).__name__}: {lines[0] if lines else ''}"[:300]


def stage_table(results: list[PartitionResult], wall_s: float) -> str:
    """Per-stage median and total seconds over the partitions, then the wall time."""
    stages = ["synthesis", "abc", "h", "msm_a", "msm_b_g1", "msm_b_g2", "msm_l", "msm_h", "assemble",
              "gpu", "prove_total", "verify"]
    lines = [f"{'stage':<12}{'median s':>10}{'total s':>10}"]
    for st in stages:
        vals = [r.times[st] for r in results if st in r.times and np.isfinite(r.times[st])]
        if vals:
            lines.append(f"{st:<12}{np.median(vals):>10.3f}{sum(vals):>10.3f}")
    lines.append(f"{'wall':<12}{'':>10}{wall_s:>10.3f}   ({len(results)} partitions)")
    return "\n".join(lines)


class LocalEngine:
    """The same pipeline in this process, without Ray: synthesis, proving and verification one
    partition after another. For a single small job Ray's start-up (seconds) would dominate; the
    output (BatchResult) and failure semantics are those of ProvingEngine."""

    def __init__(self, pk: ProvingKey, cs: ConstraintSystem, circuit, backend: str = "auto", threads: int = 2,
                 **_ignored):
        from .worker import PartitionProver

        self.circuit, self.pk = circuit, pk
        self.backend = resolve_backend_name(backend)
        self.worker = PartitionProver(self.backend, pk, cs, threads=threads)
        self.provers = [self.worker]
        self.prover_info = [{"node_id": "local", "pid": os.getpid(), "backend": self.worker.backend.name}]
        self.pw = 1
        self.part_bytes = partition_host_bytes(circuit, self.backend, pk.domain_size)

    def run(self, proofs: int, seed: int = 0, progress=None, synth_fn=None) -> BatchResult:
        t0 = time.perf_counter()
        results, failed, n_done = [], {}, 0
        for p in range(proofs):
            for k in range(self.circuit.partitions):
                work = _Work(p, k)
                if work.proof_id in failed:
                    break
                try:
                    t_s = time.perf_counter()
                    witness = (synth_fn or synthesize)(self.circuit.synth_spec(seed, p, k))
                    synth_s = time.perf_counter() - t_s
                    out = self.worker.prove(Partition(work.proof_id, k, self.circuit.circuit_id, witness))
                except (ValueError, OSError) as e:
                    failed[work.proof_id] = f"partition {k} failed: {type(e).__name__}: {e}"
                    break
                out["times"]["synthesis"] = synth_s
                out["synthesis_node"] = out["prover_node"] = "local"
                res = _verified_result(self.pk.vk, out, work)
                if res is None:
                    failed[work.proof_id] = (f"partition {k}: the proof does not verify "
                                             f"(does the witness satisfy the circuit?)")
                    break
                results.append(res)
                n_done += 1
                if progress:
                    progress(res, n_done, proofs * self.circuit.partitions)
        results = [r for r in results if r.proof_id not in failed]
        return BatchResult(results, failed, time.perf_counter() - t0, self.prover_info, 1, self.part_bytes)

    def shutdown(self):
        pass
