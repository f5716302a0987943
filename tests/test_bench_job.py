"""jobs/bench.py end to end on the CPU (small circuit): results.json, plots, the comparison table."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.ray, pytest.mark.slow]


def test_bench_writes_results_and_plots(tmp_path):
    out = tmp_path / "bench"
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    res = subprocess.run([sys.executable, str(ROOT / "jobs" / "bench.py"), f"output_dir={out}",
                          f"cache_dir={tmp_path / 'cache'}", "circuit.constraints=256", "circuit.partitions=3",
                          "proofs=2", "warmup=1", "pw=2"], capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    r = json.loads((out / "results.json").read_text())
    assert r["partitions"] == 6 and r["all_verified"] is True and not r["failed"]
    assert r["s_per_proof"] > 0 and 0 < r["prover_busy_fraction"] <= 1.0
    assert r["peak_node_pss_bytes"] > 0
    assert {"h", "msm_h", "msm_b_g2", "synthesis"} <= set(r["stage_median_s"])
    assert r["host_peak_reserved"] <= r["max_in_flight"] * r["bytes_per_partition"]
    [node] = r["host_measured"]  # the embedded Ray's one node, measured (engines.memory)
    assert node["baseline"] > 0 and node["samples"] >= 1 and r["host_peak_measured"] == node["peak_work"]
    assert "host memory: measured peak " in res.stdout
    assert (out / "timeline.png").stat().st_size > 1000 and (out / "stages.png").stat().st_size > 1000
    # cuzk's figures are of 2^27 partitions: not printed beside a 2^8 run (the twin is the 2^27 run
    # on the GPU machine, docs/gpu-runs/2026-12-01-scale/call2, which prints them)
    assert "s per proof (steady)" in res.stdout and "32.1 isolated" not in res.stdout
    assert "cuzk publishes 2^27 partitions only; this run is 2^8" in res.stdout


def test_timeline_rows_give_concurrent_partitions_their_own_slot():
    from cuzk_ray.bench import timeline_rows

    def rec(prover, start, end):
        return {"prover": prover, "spans": [["synthesis", start - 5, start], ["h", start, end]]}

    # prover 0: a and b overlap, c starts after a ends; prover 1: one partition
    records = [rec(0, 0.0, 2.0), rec(0, 1.0, 3.0), rec(0, 2.5, 4.0), rec(1, 0.0, 1.0)]
    rows, labels = timeline_rows(records)
    assert rows == [(0, 0), (0, 1), (0, 0), (1, 0)]
    assert labels == [(0, 0), (0, 1), (1, 0)]
    # sequential partitions (no overlap) share one slot; synthesis spans do not count as overlap
    rows, labels = timeline_rows([rec(0, 0.0, 1.0), rec(0, 1.0, 2.0)])
    assert rows == [(0, 0), (0, 0)] and labels == [(0, 0)]


def test_steady_window_starts_when_the_warm_up_proofs_complete():
    from types import SimpleNamespace

    from cuzk_ray.bench import steady_window, summarize

    def part(pid, start, end, gpu):
        return SimpleNamespace(proof_id=pid, spans=[("h", start, end)], times={"gpu": gpu, "prove_total": end - start},
                               prover_index=0, vram_peak=None)

    # proof 0 (warm-up, pipeline fill) done at t=10; proofs 1 and 2 done at 14 and 18
    parts = [part("proof-000", 0, 8, 1.0), part("proof-000", 2, 10, 1.0), part("proof-001", 9, 14, 2.0),
             part("proof-002", 12, 18, 2.0)]
    batch = SimpleNamespace(results=parts, wall_s=20.0, failed={}, max_in_flight=2, host_budget=None,
                            host_peak=0, host_bytes_per_partition=1,
                            host_measured=[])
    measured, window = steady_window(batch, warmup=1)
    assert window == 8 and {r.proof_id for r in measured} == {"proof-001", "proof-002"}
    s = summarize(batch, 2, n_devices=1, warmup=1)  # no "gpu" spans: the partitions' GPU seconds
    assert s["s_per_proof"] == 4 and s["partitions"] == 2 and s["gpu_busy_fraction"] == 0.5
    assert s["batch_wall_s"] == 20.0 and s["gpu_busy_method"] == "partition_seconds"
    # with "gpu" spans only the device time inside the window [10, 18] counts, whatever the proof:
    # proof-000's span (9, 10) none, proof-001's (9.5, 11.5) 1.5 s, proof-002's (13, 17) 4 s
    parts[1].spans.append(("gpu", 9.0, 10.0))
    parts[2].spans.append(("gpu", 9.5, 11.5))
    parts[3].spans.append(("gpu", 13.0, 17.0))
    s = summarize(batch, 2, n_devices=1, warmup=1)
    assert s["gpu_busy_method"] == "spans" and s["gpu_busy_fraction"] == 5.5 / 8
    assert summarize(batch, 2, n_devices=2, warmup=1)["gpu_busy_fraction"] == 5.5 / 16
    # no warm-up: everything, the batch's wall time (the twin)
    measured, window = steady_window(batch, warmup=0)
    assert window == 20.0 and len(measured) == 4
