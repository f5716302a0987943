"""Host memory measured per node on a real two-node `ray start` cluster: the job's manifest has a
record for each node with a prover (the driver's read here, the other's by a NodeSampler actor
on that node), and the job prints its host-memory line."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from cluster import LocalCluster

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.ray, pytest.mark.slow]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = LocalCluster(tmp_path_factory.mktemp("cluster"), nodes=2, cpus=2)
    yield c
    c.stop()


def test_each_node_with_a_prover_is_measured(cluster, tmp_path):
    env = dict(cluster.env, RAY_ADDRESS=cluster.address)
    p = subprocess.Popen([sys.executable, str(ROOT / "jobs" / "prove.py"), "circuit.constraints=2048",
                          "circuit.partitions=8", "proofs=2", "pw=2", "memory.host_budget=4GiB",
                          f"output_dir={tmp_path / 'out'}", f"cache_dir={tmp_path / 'cache'}"], cwd=tmp_path,
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=600)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert p.returncode == 0, out
    assert "provers: 2 x cpu" in out
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    nodes = manifest["host_measured"]
    assert len(nodes) == 2 and len({n["node"] for n in nodes}) == 2, nodes
    assert all(n["baseline"] > 10 << 20 and n["processes"] >= 1 and n["samples"] >= 1 for n in nodes), nodes
    assert manifest["host_peak_measured"] == max(n["peak_work"] for n in nodes)
    line = next(ln for ln in out.splitlines() if ln.startswith("host memory: measured peak "))
    assert "budget 4.0 GiB" in line
