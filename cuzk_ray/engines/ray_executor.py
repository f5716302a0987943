"""The Ray executor: a synthesis task per partition feeding prover actors.

    synth:<proof>:<partition>  Ray task (CPU, memory=, spread over nodes) -> Arrow RecordBatch
    prove:<proof>:<partition>  <Cpu|Gpu>Prover.prove, Ray actor (least loaded) -> PartitionOutcome

It only submits and reports completions; ordering, retries, budgets and verification are the
scheduler's. Tasks receive plain dicts and ObjectRefs only (never OmegaConf objects or big values).
"""

from __future__ import annotations

import logging
import os
import time

import numpy as np
import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from ..backends import cuda_backend_class
from ..partition import Partition, to_record_batch
from .actors import CpuProver, GpuProver
from .admission import expected_pw
from .metrics import RayMetrics
from .ray_setup import ship_package
from .types import BundleKey, Completion, StoreKey, WorkItem
from .worker import synthesize_witness

READY_TIMEOUT_S = 600


def init_ray(ray_cfg: dict, object_store_bytes: int | None = None) -> bool:
    """Connect to ``ray.address`` / RAY_ADDRESS when given, else start an embedded Ray bound to
    127.0.0.1 with an object store of ``object_store_bytes`` (None: Ray's default). Returns True
    when this call started or connected Ray (so the caller shuts it down)."""
    if ray.is_initialized():
        return False
    kwargs = {"logging_level": logging.INFO if ray_cfg.get("verbose") else logging.WARNING, "log_to_driver": True}
    address = ray_cfg.get("address") or os.environ.get("RAY_ADDRESS")
    if ship_package(ray_cfg, address):
        # Workers on other nodes (or without the package installed) import cuzk_ray from here.
        import cuzk_ray

        kwargs["runtime_env"] = {"py_modules": [os.path.dirname(cuzk_ray.__file__)]}
    if address:
        ray.init(address=address, **kwargs)
    else:
        ray.init(address="local", num_cpus=ray_cfg.get("num_cpus"), num_gpus=ray_cfg.get("num_gpus"),
                 include_dashboard=bool(ray_cfg.get("dashboard", False)), dashboard_host="127.0.0.1",
                 _node_ip_address="127.0.0.1", _metrics_export_port=ray_cfg.get("metrics_export_port"),
                 object_store_memory=object_store_bytes, **kwargs)
    return True


@ray.remote(num_cpus=1)
def synthesize_partition(spec: dict, proof_id: str, circuit_id: str, synth_fn=None):
    """The partition's witness as an Arrow batch, with where and how long synthesis ran."""
    t0, w0 = time.perf_counter(), time.time()
    witness = synthesize_witness(spec, synth_fn)
    extra = {"synthesis_node": ray.get_runtime_context().get_node_id(),
             "synthesis_s": f"{time.perf_counter() - t0:.6f}", "synthesis_start": f"{w0:.6f}",
             "synthesis_pid": str(os.getpid())}
    return to_record_batch(Partition(proof_id, spec["partition"], circuit_id, witness, extra))


class RayExecutor:
    """Prover actors placed on the cluster (key and matrices put in the object store once)."""

    def __init__(self, settings, pk, cs, circuit, part_bytes: int):
        self.settings, self.circuit, self.part_bytes = settings, circuit, part_bytes
        self.metrics = RayMetrics(circuit.circuit_id)
        key, matrices = key_source(pk, cs)
        self.key_refs = (key, matrices)  # what the actors got (held: a restarted actor needs them)
        self.provers, self.prover_info = start_provers(settings, key, matrices, tag=f"{os.getpid()}-{id(self):x}")
        self.load = [0] * len(self.provers)
        self._in_flight: dict = {}  # ObjectRef of the proof -> WorkItem
        # Input files (e.g. .wtns) live where the driver runs: read them there; else spread.
        self._synth_strategy = (NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
                                if circuit.local_files else "SPREAD")

    def pw(self, requested: int | None) -> int:
        """``requested``, or by default 2 for CPU provers and pw_per_gpu x GPUs for GPU provers
        (enough per GPU to keep synthesis ahead of the device)."""
        if requested is not None:
            return requested
        return expected_pw(self.settings, int(ray.cluster_resources().get("GPU", 0)))

    def submit(self, work: WorkItem, spec: dict) -> None:
        """Synthesis task, then the least-loaded prover on its output."""
        batch = synthesize_partition.options(
            name=f"synth:{work.proof_id}:{work.partition}", memory=self.part_bytes,
            scheduling_strategy=self._synth_strategy).remote(spec, work.proof_id, self.circuit.circuit_id,
                                                             work.proof.synth_fn)
        work.prover = int(np.argmin(self.load))
        self.load[work.prover] += 1
        prove = self.provers[work.prover].prove.options(name=f"prove:{work.proof_id}:{work.partition}")
        self._in_flight[prove.remote(batch, self.key_refs[0])] = work

    def next_completion(self, timeout: float | None = None) -> Completion | None:
        """The first proof to come back, or why its attempt failed (actor died, task raised)."""
        if not self._in_flight:
            return None
        ready, _ = ray.wait(list(self._in_flight), num_returns=1, timeout=timeout)
        if not ready:
            return None
        work = self._in_flight.pop(ready[0])
        self.load[work.prover] -= 1
        try:
            return Completion(work, ray.get(ready[0]))
        except (ray.exceptions.RayError, ValueError) as e:  # actor died, task raised, object lost
            return Completion(work, error=_short(e))

    def shutdown(self) -> None:
        """Kill the prover actors (no restart)."""
        for a in self.provers:
            ray.kill(a, no_restart=True)


def key_source(pk, cs):
    """What the prover actors get for the key: on one node, a key memory-mapped from a bundle is
    passed as its path (BundleKey: the actors map the same file, one page-cache copy in all, none
    in the object store: at 2^26 a second ~50 GiB copy ran the H200 box out of memory); else the
    key and matrices are put in the object store once (each node fetches one copy), their refs
    wrapped in a StoreKey."""
    path = pk.meta.get("bundle_path")
    one_node = len([n for n in ray.nodes() if n["Alive"]]) == 1
    if path and cs is not None and one_node and os.path.isfile(os.path.join(path, "manifest.json")):
        return BundleKey(path), None
    return StoreKey(ray.put(pk), ray.put(cs)), None  # refs inside a value: see StoreKey


def start_provers(settings, pk_ref, cs_ref, tag: str) -> tuple[list, list[dict]]:
    """Create the prover actors and wait until each is ready (key resident, kernels warm):
    (actor handles, their ready() info). One clear RuntimeError when they cannot start."""
    cls, placements = _placements(settings)
    # the key goes to ready(), not the constructor (see actors.ProverActor); cs_ref is None (in pk_ref)
    actors = [ray.remote(cls).options(name=f"{cls.__name__}-{i}-{tag}", **p).remote(
        settings.backend, settings.cpu_threads) for i, p in enumerate(placements)]
    try:
        info = ray.get([a.ready.remote(pk_ref) for a in actors], timeout=READY_TIMEOUT_S)
    except ray.exceptions.GetTimeoutError:
        raise RuntimeError(f"{cls.__name__}: actors not ready after {READY_TIMEOUT_S} s (is the cluster short "
                           f"of {'GPUs' if settings.backend == 'cuda' else 'CPUs'}?)") from None
    except ray.exceptions.OutOfMemoryError as e:  # Ray's memory monitor killed it while it loaded the key
        _kill(actors)
        first = next((ln.strip() for ln in str(e).splitlines() if "Memory on the node" in ln), _short(e))
        raise RuntimeError(f"{cls.__name__} could not start: host memory ran out while it loaded the key "
                           f"({first[:240]})") from None
    except (ray.exceptions.RayActorError, ray.exceptions.RayTaskError) as e:  # e.g. the key does not fit in VRAM
        _kill(actors)
        raise RuntimeError(f"{cls.__name__} could not start: {_start_error(e)}") from None
    return actors, info


def _kill(actors) -> None:
    for a in actors:
        ray.kill(a, no_restart=True)


def _placements(settings) -> tuple[type, list[dict]]:
    """The prover class and each actor's options: GPU provers one per GPU x
    gpu_workers_per_device (num_cpus=0); CPU provers one per node, round-robin beyond."""
    opts = {"max_restarts": settings.max_restarts, "max_task_retries": 0}  # the scheduler re-runs partitions
    if settings.prover_placement == "gpu":
        n_gpus = _gpus_for(settings.backend)
        gpw = max(1, int(settings.gpu_workers_per_device))
        # max_concurrency: partitions on threads of one actor, so one's upload, host work and
        # assembly overlap another's kernels (the backend runs one partition's kernels at a time).
        one = dict(opts, num_gpus=1.0 / gpw, num_cpus=0, max_concurrency=settings.gpu_concurrency)
        return GpuProver, [one] * (settings.provers or n_gpus * gpw)
    nodes = [n for n in ray.nodes() if n["Alive"] and n["Resources"].get("CPU", 0) >= 1]
    count = settings.provers or len(nodes)
    cpus = int(sum(n["Resources"].get("CPU", 0) for n in nodes))
    if cpus < count + 1:  # each CPU prover holds a CPU; synthesis tasks need one more, or wait forever
        raise RuntimeError(f"ray: the cluster has {cpus} CPU(s) and the {count} CPU prover(s) take {count}; "
                           f"synthesis needs at least one more (ray.num_cpus>={count + 1}, or fewer provers)")
    return CpuProver, [dict(opts, num_cpus=1, scheduling_strategy=NodeAffinitySchedulingStrategy(
        nodes[i % len(nodes)]["NodeID"], soft=True)) for i in range(count)]


def _gpus_for(backend: str) -> int:
    """The cluster's GPU count, or one line saying why GPU provers cannot run."""
    n_gpus = int(ray.cluster_resources().get("GPU", 0))
    if backend == "cuda" and cuda_backend_class() is None:
        raise RuntimeError("backend=cuda: the CUDA proving backend is not available in this build; "
                           "use backend=cpu (or backend=auto)")
    if n_gpus == 0:
        raise RuntimeError(f"backend={backend}: the Ray cluster has no GPUs; use backend=cpu or add GPU nodes")
    return n_gpus


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
