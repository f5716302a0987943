"""What both engines share, free of Ray: work items, results, budgets, verification, the stage
table, and ``LocalEngine`` (the pipeline in one process, for small jobs where Ray's start-up would
dominate). cuzk_ray.engine builds the Ray pipeline on top of it."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

import numpy as np

from .backends import resolve_backend_name
from .circuits import synthesize
from .groth16.keys import ProvingKey
from .groth16.verifier import verify
from .partition import Partition
from .r1cs import ConstraintSystem


class ProofFailed(RuntimeError):
    """One or more proofs of a batch failed; the message names them and why."""


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


INT_BYTES = 72  # a reduced Fr value as a Python int in an object array: 8 B pointer + ~60 B object


def partition_host_bytes(circuit, domain_size: int | None = None, backend: str = "cpu") -> int:
    """Estimated peak host bytes of one partition in flight. An estimate for admission control,
    not a measurement.

    cpu: the witness as limbs (the Arrow batch in the object store) and as ints, a, b, c as ints
    and h as limbs. cuda: a, b, c and h live in VRAM; the host holds the witness limbs twice
    (the Arrow batch and its pinned staging copy)."""
    domain = domain_size or circuit.domain_size()
    wires = circuit.witness_bytes() // 32
    if backend == "cuda":
        return wires * 64
    return wires * (32 + INT_BYTES) + domain * (3 * INT_BYTES + 32)


def check_budget(host_budget: int | None, part_bytes: int, circuit_id: str) -> None:
    if host_budget is not None and host_budget < part_bytes:
        raise ValueError(f"memory.host_budget={host_budget} B is below one partition "
                         f"({part_bytes} B for {circuit_id})")


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


def stage_table(results: list[PartitionResult], wall_s: float) -> str:
    """Per-stage median and total seconds over the partitions, then the wall time."""
    stages = ["synthesis", "upload", "abc", "h", "msm_a", "msm_b_g1", "msm_b_g2", "msm_b_g2_hi", "msm_l", "msm_h", "assemble",
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
        self.part_bytes = partition_host_bytes(circuit, pk.domain_size, self.backend)

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
                except Exception as e:  # noqa: BLE001  as the Ray engine: this proof fails, others go on
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


def open_engine(name: str, ray_cfg: dict):
    """(engine class, close) for ``engine=ray|local``. Ray is imported (and started or connected)
    only for "ray": a local run does not pay for it."""
    if name == "local":
        return LocalEngine, lambda: None
    if name != "ray":
        raise ValueError(f"engine={name!r} is not one of ray, local")
    import ray

    from .engine import ProvingEngine, init_ray

    started = init_ray(ray_cfg)
    return ProvingEngine, (ray.shutdown if started else lambda: None)
