"""What the jobs print about a batch: the per-stage table, the host-memory line."""

from __future__ import annotations

import numpy as np

from .admission import format_bytes
from .types import BatchResult, PartitionResult

STAGES = ["split", "synthesis", "upload", "abc", "h", "gather", "msm_a", "msm_b_g1", "msm_b_g2", "msm_b_g2_hi",
          "msm_l", "msm_h", "msm_h_hi", "assemble", "gpu", "prove_total", "verify"]

# What each stage is, in the words of docs/ARCHITECTURE.md (the table's legend column).
LEGEND = {
    "split": "a proof's input read once and cut into its partitions' shares (Filecoin's C1, Ray engine; one a proof)",
    "synthesis": "the witness: a .wtns file read, or the built-in circuit synthesized",
    "upload": "the witness copied to the GPU (pinned buffer, own stream)",
    "abc": "a, b, c = A.w, B.w, C.w (sparse matrix-vector products)",
    "h": "H: iNTT, coset NTT of a, b, c, then a.b - c (the key's convention: snarkjs's or bellperson's)",
    "gather": "witness values of the wires the key has points for (key by density)",
    "msm_a": "MSM in G1 over the A query (pi_a)",
    "msm_b_g1": "MSM in G1 over the B query (for pi_c)",
    "msm_b_g2": "MSM in G2 over the B query (pi_b); CPU: its first half",
    "msm_b_g2_hi": "CPU: the second half of the G2 MSM, on the other thread",
    "msm_l": "MSM in G1 over the private wires' L query (pi_c)",
    "msm_h": "MSM in G1 over the H query with h (pi_c); CPU, from 2^16: its first half",
    "msm_h_hi": "CPU: the second half of the H MSM, on the other thread",
    "assemble": "pi_a, pi_b, pi_c from the MSMs and random r, s",
    "gpu": "GPU busy seconds of the partition (kernels only)",
    "prove_total": "the partition on its prover: every stage above but synthesis",
    "verify": "pairing check of the proof, before it is written",
}


def gpu_sections(results: list[PartitionResult]) -> list[str]:
    """The "gpu.<section>" keys of the results' times (the device time by what held it, see
    backends.base.DeviceTime), in stage order; sections that are not stages last."""
    keys = {k for r in results for k in r.times if k.startswith("gpu.")}
    order = {f"gpu.{st}": i for i, st in enumerate(STAGES)}
    return sorted(keys, key=lambda k: (order.get(k, len(order)), k))


def stage_table(results: list[PartitionResult], wall_s: float, proofs: int | None = None) -> str:
    """Per-stage median and summed seconds over the partitions, with what each stage is; then the
    batch's wall time and seconds per proof. Summed time counts stages of partitions that ran at
    once (and the MSM threads of one partition) separately, so it can exceed the wall time."""
    lines = [f"{'stage':<12}{'median s':>10}{'summed s':>10}  what"]
    for st in STAGES:
        for key in [st] + (gpu_sections(results) if st == "gpu" else []):
            vals = [r.times[key] for r in results if key in r.times and np.isfinite(r.times[key])]
            if vals:
                what = LEGEND.get(key, f"of which the device held for {key[4:]}" if key.startswith("gpu.") else "")
                lines.append(f"{key:<12}{np.median(vals):>10.3f}{sum(vals):>10.3f}  {what}".rstrip())
    n_proofs = proofs if proofs is not None else len({r.proof_id for r in results})
    per = f", {wall_s / n_proofs:.3f} s/proof" if n_proofs else ""
    lines.append(f"{'wall':<12}{wall_s:>10.3f}{'':>10}  {len(results)} partition(s) of {n_proofs} proof(s){per}; "
                 f"the batch from first submission to last proof (start-up not included)")
    return "\n".join(lines)


def load_line(prover_info: list[dict]) -> str:
    """How long the provers took to start (the slowest one per step): mapping the key's bundle,
    the key's upload (into VRAM on the cuda backend), the matrices', the kernels' warm-up."""
    steps: dict[str, float] = {}
    for p in prover_info:
        for step, s in (p.get("load_seconds") or {}).items():
            steps[step] = max(steps.get(step, 0.0), float(s))
    if not steps:
        return "prover start: not measured"
    return "prover start (slowest prover): " + ", ".join(f"{k} {v:.1f} s" for k, v in steps.items())


def memory_record(batch: BatchResult) -> dict:
    """What manifest.json and results.json keep of the batch's host memory (bytes): the budget,
    the reserved (estimated) peak, the measured peak work memory (the busiest node's) and each
    node's baseline and peaks."""
    nodes = [dict(vars(n)) for n in batch.host_measured]
    return {"host_budget": batch.host_budget, "host_peak_reserved": batch.host_peak,
            "host_peak_measured": max((n["peak_work"] for n in nodes), default=None), "host_measured": nodes}


def memory_line(batch: BatchResult) -> str:
    """One line: the measured peak work memory (node, at rest, in all) next to the reserved peak
    and the budget."""
    size = format_bytes
    budget = size(batch.host_budget) if batch.host_budget is not None else "none"
    each = size(batch.host_bytes_per_partition)
    reserved = f"reserved peak {size(batch.host_peak)} ({batch.max_in_flight} in flight x {each} estimated)"
    if not batch.host_measured:
        return f"host memory: not measured here (no /proc); {reserved}; budget {budget}"
    top = max(batch.host_measured, key=lambda n: n.peak_work)
    procs = f"{top.processes} process{'es' if top.processes != 1 else ''}"
    return (f"host memory: measured peak {size(top.peak_work)} of work on node {top.node[:12]} (our {procs}: "
            f"{size(top.baseline)} at rest, {size(top.peak_total)} at most); {reserved}; budget {budget}")
