"""jobs/bench_service_load.py at its smallest (a real service, two built-in clients and one circom
client at once, one request each, 2^10): every proof done and verified by its client, each resubmit
answered with the same proof id, nothing proved twice, and the table and its JSON written. The
load figures themselves are the benchmark's (docs/BENCHMARKS.md), not asserted here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_the_load_bench_serves_every_client_and_writes_its_table(tmp_path):
    r = subprocess.run([sys.executable, str(REPO / "jobs" / "bench_service_load.py"), "--clients", "2", "--requests",
                        "1", "--circom-clients", "1", "--no-batch", "--poll", "0.2", "--out", str(tmp_path), "--",
                        "circuit.constraints=1024", "circuit.partitions=2", "pw=1", "ray.num_cpus=2"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    table = json.loads((tmp_path / "load.json").read_text())
    assert table["proofs done / failed"] == "3 / 0"
    assert table["HTTP errors and exceptions"] == "0"
    assert table["partitions verified by the clients"] == "5/5"  # 2 x 2 built-in + 1 circom
    assert table["resubmits answered with the same proof id"] == "3/3"
    assert table["proofs with a partition proved twice"] == "none"
    assert "throughput, all proofs" in r.stdout
