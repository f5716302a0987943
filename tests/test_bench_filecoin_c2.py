"""jobs/bench_filecoin_c2.py's engine form at its small size (2 KiB, the inputs stand-in, CPU, the
local engine: seconds): two proofs of one C1, every partition verified, the figures JSON written
with the steady-state and per-partition numbers; a bad --repeat refused. The 32 GiB run is the
lead's (jobs/gpu_issue30.sh), not a test."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def bench(tmp_path, *extra):
    return subprocess.run([sys.executable, str(REPO / "jobs" / "bench_filecoin_c2.py"), "--sector-size", "2KiB",
                           "--backend", "cpu", "--variant", "inputs", "--engine", "local", "--cache-dir",
                           str(tmp_path / "cache"), "--work", str(tmp_path / "work"), *extra],
                          capture_output=True, text=True, timeout=300)


def test_small_engine_bench_proves_verifies_and_writes_figures(tmp_path):
    r = bench(tmp_path, "--repeat", "2", "--out", str(tmp_path / "fig.json"))
    assert r.returncode == 0, r.stderr[-2000:]
    fig = json.loads((tmp_path / "fig.json").read_text())
    assert fig["all_verified"] is True and fig["partitions_proved"] == 2 and not fig["failed"]
    assert fig["s_per_proof_steady"] > 0 and fig["witness_s_per_partition"] > 0 and fig["params_made"]
    assert "[phase] C1:" in r.stdout and "s/proof, steady state" in r.stdout
    assert list(fig["phases_s"])[0] == "C1"


def test_distinct_c1s_each_get_their_own_verified_multiproof(tmp_path):
    """--distinct: three sealed sectors (sector ids 77..79), one proof each, each MultiProof checked
    against its own C1, and proof 0's refused against C1 1's inputs (the bench fails otherwise)."""
    r = bench(tmp_path, "--repeat", "3", "--distinct", "--out", str(tmp_path / "fig.json"))
    assert r.returncode == 0, r.stderr[-2000:]
    fig = json.loads((tmp_path / "fig.json").read_text())
    assert fig["all_verified"] is True and fig["partitions_proved"] == 3 and fig["distinct_c1s"] is True
    work = tmp_path / "work"
    assert sorted(p.name for p in work.glob("c1*.json")) == ["c1-1.json", "c1-2.json", "c1.json"]
    assert len({(work / n).read_bytes() for n in ("c1.json", "c1-1.json", "c1-2.json")}) == 3
    assert "[phase] every MultiProof vs its C1's inputs" in r.stdout
    assert "[phase] MultiProof 0 refused against C1 1's inputs" in r.stdout and "one C1 each" in r.stdout


def test_bench_refuses_a_bad_repeat(tmp_path):
    r = bench(tmp_path, "--repeat", "0")
    assert r.returncode != 0 and "--repeat 0: need at least 1" in r.stderr
