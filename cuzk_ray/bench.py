"""Benchmark measurements shared by jobs/bench.py: summaries, plots (host-memory sampling:
cuzk_ray.engines.memory.MemorySampler)."""

from __future__ import annotations

import os

import numpy as np

from .engines.report import memory_record

# Published figures of the system we measure ourselves against (DESIGN.md section 8).
CUZK_PUBLISHED = {
    "hardware": "RTX 5070 Ti + 96 cores, 2^27-constraint PoRep partitions (10 per proof)",
    "s_per_proof_isolated": 32.1,
    "s_per_proof_pw12": 37.7,
    "peak_rss_gib_pw12": 400,
    "gpu_s_per_partition": 1.8,
}


def _proof_done_times(results) -> dict[str, float]:
    done: dict[str, float] = {}
    for r in results:
        end = max((e for _, _, e in r.spans), default=0.0)
        done[r.proof_id] = max(done.get(r.proof_id, 0.0), end)
    return done


def _window_bounds(batch, warmup: int) -> tuple[set | None, float, float]:
    """(ids of the measured proofs or None for all, start, end) in epoch seconds: from the
    completion of the warmup-th proof to the last one's, or from the first span to the end."""
    done = _proof_done_times(batch.results)
    order = sorted(done, key=done.get)
    if warmup >= 1 and len(order) > warmup:
        return set(order[warmup:]), done[order[warmup - 1]], done[order[-1]]
    starts = [a for r in batch.results for _, a, _ in r.spans]
    return None, (min(starts) if starts else 0.0), (max(done.values()) if starts else 0.0)


def steady_window(batch, warmup: int) -> tuple[list, float]:
    """(measured partitions, window seconds) of a batch run as ``warmup`` + measured proofs in
    one go, so the pipeline is full when measuring starts: a proof completes when its last
    partition does; the window runs from the completion of the warmup-th proof to the last one's,
    and the measured partitions are those of the proofs completing inside it. Without warm-up
    proofs: every partition and the batch's wall time (pipeline fill included)."""
    measured, start, end = _window_bounds(batch, warmup)
    if measured is None:
        return list(batch.results), batch.wall_s
    return [r for r in batch.results if r.proof_id in measured], end - start


def gpu_busy_in_window(results, start: float, end: float) -> float | None:
    """Seconds the device was held (the backend's "gpu" spans: kernels under its lock) inside
    [start, end], over every partition whatever proof it belongs to; None without GPU spans."""
    spans = [(a, b) for r in results for name, a, b in r.spans if name == "gpu"]
    if not spans:
        return None
    return sum(max(0.0, min(b, end) - max(a, start)) for a, b in spans)


def summarize(batch, proofs: int, n_devices: int | None, warmup: int = 0) -> dict:
    """Steady-state numbers of a batch of ``warmup`` + ``proofs`` proofs (see steady_window).
    GPU busy: device-held time inside the window (spans) over window x devices; results without
    spans (older runs) fall back to the measured partitions' GPU seconds, which also counts their
    kernels from before the window (an overestimate by up to the work in flight at its start)."""
    results, wall = steady_window(batch, warmup)
    stages = sorted({k for r in results for k in r.times})
    med = {st: float(np.median([r.times[st] for r in results if st in r.times])) for st in stages}
    provers = max(1, len({r.prover_index for r in results}))
    out = {
        "proofs": proofs, "warmup": warmup, "partitions": len(results), "wall_s": wall,
        "batch_wall_s": batch.wall_s, "s_per_proof": wall / max(1, proofs), "stage_median_s": med,
        # > 100 % when a prover works on several partitions at once (gpu_concurrency)
        "prover_busy_fraction": sum(r.times.get("prove_total", 0.0) for r in results) / (wall * provers),
        "failed": batch.failed, "max_in_flight": batch.max_in_flight,
        **memory_record(batch), "bytes_per_partition": batch.host_bytes_per_partition,
    }
    if n_devices:
        _, start, end = _window_bounds(batch, warmup)
        held = gpu_busy_in_window(batch.results, start, end) if end > start else None
        if held is not None:
            out["gpu_busy_fraction"], out["gpu_busy_method"] = held / ((end - start) * n_devices), "spans"
        else:
            out["gpu_busy_fraction"] = sum(r.times.get("gpu", 0.0) for r in results) / (wall * n_devices)
            out["gpu_busy_method"] = "partition_seconds"
        peaks = [r.vram_peak for r in batch.results if r.vram_peak]
        out["vram_peak_bytes"] = max(peaks) if peaks else None
    return out


STAGE_COLORS = {"synthesis": "#999999", "upload": "#bcbd22", "abc": "#8c564b", "h": "#1f77b4", "msm_a": "#2ca02c",
                "msm_b_g1": "#98df8a", "msm_b_g2": "#d62728", "msm_b_g2_hi": "#ff9896", "msm_l": "#ff7f0e",
                "msm_h": "#9467bd", "msm_h_hi": "#c5b0d5", "assemble": "#17becf", "gather": "#e377c2"}


def partition_records(batch) -> list[dict]:
    """Per-partition timings and spans (what results.json keeps, and what the plots are made of)."""
    return [{"proof_id": r.proof_id, "partition": r.partition, "prover": r.prover_index,
             "times": r.times, "spans": [list(x) for x in r.spans]} for r in batch.results]


def timeline_rows(records: list[dict]) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(row of each record, row labels): one row per (prover, slot), where a prover working on
    several partitions at once (gpu_concurrency) gets a slot per concurrent partition (greedy
    interval partitioning of the partitions' proving spans), so overlapping work stays visible."""
    def proving(r):
        sp = [(s, e) for name, s, e in r["spans"] if name != "synthesis"] or [(0.0, 0.0)]
        return min(s for s, _ in sp), max(e for _, e in sp)

    slot_of, slot_ends = {}, {}
    for i in sorted(range(len(records)), key=lambda i: proving(records[i])[0]):
        start, end = proving(records[i])
        ends = slot_ends.setdefault(records[i]["prover"], [])
        k = next((k for k, e in enumerate(ends) if e <= start), len(ends))
        if k == len(ends):
            ends.append(end)
        else:
            ends[k] = end
        slot_of[i] = (records[i]["prover"], k)
    labels = sorted(set(slot_of.values()))
    return [slot_of[i] for i in range(len(records))], labels


def plot(records: list[dict], summary: dict, out_dir) -> list[str]:
    """timeline.png (each partition's stages per worker on a time axis) and stages.png (medians)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t0 = min(s for r in records for _, s, _ in r["spans"])
    slots, labels = timeline_rows(records)
    fig, ax = plt.subplots(figsize=(12, 1.2 + 0.9 * len(labels)))
    for r, slot in zip(records, slots):
        row = labels.index(slot)
        for name, s, e in r["spans"]:
            if name == "gpu":  # when this partition held the device: a thin black lane
                ax.barh(row - 0.4, e - s, left=s - t0, height=0.08, color="#000000")
                continue
            lane = 0.35 if name == "synthesis" else (-0.2 if name.startswith("msm_b_g2") else 0.0)
            ax.barh(row + lane, e - s, left=s - t0, height=0.3, color=STAGE_COLORS.get(name, "#444444"))
    ax.set_yticks(range(len(labels)), [f"prover {w}" + (f" / {k}" if k else "") for w, k in labels])
    ax.set_xlabel("seconds")
    ax.set_title(f"{summary['partitions']} partitions, {summary['s_per_proof']:.2f} s/proof "
                 "(grey: synthesis; lower lane: B_G2 MSM; black: device held; "
                 "'prover w / k': k-th concurrent partition)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in STAGE_COLORS.values()]
    ax.legend(handles, STAGE_COLORS.keys(), ncol=5, fontsize=7, loc="upper right")
    fig.tight_layout()
    paths = [os.path.join(out_dir, "timeline.png"), os.path.join(out_dir, "stages.png")]
    fig.savefig(paths[0], dpi=110)
    plt.close(fig)
    med = {k: v for k, v in summary["stage_median_s"].items() if k in STAGE_COLORS or k == "gpu"}
    fig, ax = plt.subplots(figsize=(8, 3.5))
    ax.bar(list(med), list(med.values()), color=[STAGE_COLORS.get(k, "#444444") for k in med])
    ax.set_ylabel("median seconds per partition")
    ax.tick_params(axis="x", rotation=30)
    fig.tight_layout()
    fig.savefig(paths[1], dpi=110)
    plt.close(fig)
    return paths


if __name__ == "__main__":  # re-render the plots of a results.json (e.g. one made on a GPU machine)
    import json
    import sys

    res = json.loads(open(sys.argv[1]).read())
    print(plot(res["partition_records"], res, os.path.dirname(os.path.abspath(sys.argv[1]))))
