"""The proving engine on Ray: synthesis tasks feed prover actors through a bounded pipeline.

    driver: for each (proof, partition), oldest proof first, lowest partition first:
      synth:<proof>:<partition>  (Ray task, CPU)  -> Arrow RecordBatch with the witness
      <Cpu|Gpu>Prover.prove      (Ray actor)      -> proof, public inputs, stage seconds
      verify (driver, pairing check)              -> written only when it verifies
    at most ``pw`` partitions are in flight (synthesizing, queued or proving) at any time.

Tasks receive plain dicts and ObjectRefs only (never OmegaConf objects or big values).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import numpy as np
import ray

from .actors.prover import CpuProver, GpuProver
from .backends import _cuda_backend_class, resolve_backend_name
from .circuits import synthesize
from .groth16.keys import ProvingKey
from .groth16.verifier import verify
from .partition import Partition, to_record_batch
from .r1cs import ConstraintSystem

log = logging.getLogger(__name__)


class ProofFailed(RuntimeError):
    """A partition's proof did not verify or its proving failed."""


def init_ray(ray_cfg: dict) -> bool:
    """Connect to ``ray.address`` / RAY_ADDRESS when given, else start an embedded Ray bound to
    127.0.0.1. Returns True when this call started Ray (so the caller shuts it down)."""
    if ray.is_initialized():
        return False
    address = ray_cfg.get("address")
    kwargs = {"logging_level": logging.WARNING, "log_to_driver": True}
    if ray_cfg.get("ship_package", True):
        # Workers on other nodes (or without the package installed) import cuzk_ray from here.
        import os

        import cuzk_ray

        kwargs["runtime_env"] = {"py_modules": [os.path.dirname(cuzk_ray.__file__)]}
    if address:
        ray.init(address=address, **kwargs)
    else:
        import os

        if os.environ.get("RAY_ADDRESS"):
            ray.init(**kwargs)
        else:
            ray.init(num_cpus=ray_cfg.get("num_cpus"), include_dashboard=bool(ray_cfg.get("dashboard", False)),
                     dashboard_host="127.0.0.1", _node_ip_address="127.0.0.1", **kwargs)
    return True


@ray.remote(num_cpus=1)
def _synthesize_task(spec: dict, proof_id: str, circuit_id: str):
    t0 = time.perf_counter()
    witness = synthesize(spec)
    extra = {"synthesis_node": ray.get_runtime_context().get_node_id(),
             "synthesis_s": f"{time.perf_counter() - t0:.6f}"}
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


@dataclass
class BatchResult:
    results: list[PartitionResult]
    wall_s: float
    provers: list[dict] = field(default_factory=list)
    max_in_flight: int = 0


class ProvingEngine:
    """Drives a batch of proofs of one circuit through synthesis tasks and prover actors."""

    def __init__(self, pk: ProvingKey, cs: ConstraintSystem, circuit, backend: str = "auto",
                 pw: int = 2, provers: int | None = None, threads: int = 2):
        self.circuit, self.pw = circuit, max(1, int(pw))
        self.backend = resolve_backend_name(backend)
        self.pk = pk
        pk_ref, cs_ref = ray.put(pk), ray.put(cs)  # once; actors get zero-copy views
        self.provers = self._start_provers(pk_ref, cs_ref, provers, threads)

    def _start_provers(self, pk_ref, cs_ref, count, threads):
        if self.backend == "cuda":
            n_gpus = int(ray.cluster_resources().get("GPU", 0))
            if _cuda_backend_class() is None:
                raise RuntimeError("backend=cuda: the CUDA proving backend is not available in this build; "
                                   "use backend=cpu (or backend=auto)")
            if n_gpus == 0:
                raise RuntimeError("backend=cuda: the Ray cluster has no GPUs; use backend=cpu or add GPU nodes")
            cls, opts = GpuProver, {"num_gpus": 1, "num_cpus": 0}
            count = count or max(1, n_gpus)
        else:
            cls, opts = CpuProver, {"num_cpus": 1}
            count = count or 1
        actor_cls = ray.remote(**opts)(cls)
        actors = [actor_cls.options(name=f"{cls.__name__}-{i}-{id(self):x}").remote(self.backend, pk_ref, cs_ref, threads)
                  for i in range(count)]
        try:
            self.prover_info = ray.get([a.ready.remote() for a in actors], timeout=600)
        except ray.exceptions.GetTimeoutError:
            raise RuntimeError(f"{cls.__name__}: actors not ready after 600 s (is the cluster short of "
                               f"{'GPUs' if self.backend == 'cuda' else 'CPUs'}?)") from None
        return actors

    def run(self, proofs: int, seed: int = 0, progress=None) -> BatchResult:
        """Prove ``proofs`` proofs (each circuit.partitions partitions); every partition verified."""
        queue = [(p, k) for p in range(proofs) for k in range(self.circuit.partitions)]
        queue.reverse()  # pop() takes the oldest proof, lowest partition first
        in_flight: dict = {}
        results, t0, max_in_flight, next_actor = [], time.perf_counter(), 0, 0
        while queue or in_flight:
            while queue and len(in_flight) < self.pw:
                p, k = queue.pop()
                proof_id = f"proof-{p:03d}"
                spec = self.circuit.synth_spec(seed, p, k)
                batch = _synthesize_task.options(name=f"synth:{proof_id}:{k}").remote(
                    spec, proof_id, self.circuit.circuit_id)
                actor = self.provers[next_actor % len(self.provers)]
                next_actor += 1
                in_flight[actor.prove.remote(batch)] = (proof_id, k)
                max_in_flight = max(max_in_flight, len(in_flight))
            done, _ = ray.wait(list(in_flight), num_returns=1)
            proof_id, k = in_flight.pop(done[0])
            out = ray.get(done[0])
            res = self._check(out)
            results.append(res)
            if progress:
                progress(res, len(results), proofs * self.circuit.partitions)
        results.sort(key=lambda r: (r.proof_id, r.partition))
        return BatchResult(results, time.perf_counter() - t0, self.prover_info, max_in_flight)

    def _check(self, out: dict) -> PartitionResult:
        t0 = time.perf_counter()
        ok = verify(self.pk.vk, out["public"], out["proof"])
        out["times"]["verify"] = time.perf_counter() - t0
        if not ok:
            raise ProofFailed(f"{out['proof_id']} partition {out['partition']}: the proof does not verify")
        return PartitionResult(out["proof_id"], out["partition"], out["proof"], out["public"], out["times"],
                               out.get("synthesis_node"), out.get("prover_node"), ok)

    def shutdown(self):
        for a in self.provers:
            ray.kill(a)


def stage_table(results: list[PartitionResult], wall_s: float) -> str:
    """Per-stage median and total seconds over the partitions, then the wall time."""
    stages = ["synthesis", "abc", "h", "msm_a", "msm_b_g1", "msm_b_g2", "msm_l", "msm_h", "assemble",
              "prove_total", "verify"]
    lines = [f"{'stage':<12}{'median s':>10}{'total s':>10}"]
    for st in stages:
        vals = [r.times[st] for r in results if st in r.times and np.isfinite(r.times[st])]
        if vals:
            lines.append(f"{st:<12}{np.median(vals):>10.3f}{sum(vals):>10.3f}")
    lines.append(f"{'wall':<12}{'':>10}{wall_s:>10.3f}   ({len(results)} partitions)")
    return "\n".join(lines)
