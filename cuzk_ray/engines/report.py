"""What the jobs print about a batch: the per-stage table."""

from __future__ import annotations

import numpy as np

from .types import PartitionResult

STAGES = ["synthesis", "upload", "abc", "h", "gather", "msm_a", "msm_b_g1", "msm_b_g2", "msm_b_g2_hi", "msm_l", "msm_h",
          "assemble", "gpu", "prove_total", "verify"]


def stage_table(results: list[PartitionResult], wall_s: float) -> str:
    """Per-stage median and total seconds over the partitions, then the wall time."""
    lines = [f"{'stage':<12}{'median s':>10}{'total s':>10}"]
    for st in STAGES:
        vals = [r.times[st] for r in results if st in r.times and np.isfinite(r.times[st])]
        if vals:
            lines.append(f"{st:<12}{np.median(vals):>10.3f}{sum(vals):>10.3f}")
    lines.append(f"{'wall':<12}{'':>10}{wall_s:>10.3f}   ({len(results)} partitions)")
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
