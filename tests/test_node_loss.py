"""Scheduling that cannot deadlock on a real two-node `ray start` cluster (issue 15): the job's
watchdog names the CPU synthesis lacks (its twin: the same job once the CPUs are back), and a
worker node lost mid-batch (its raylet killed by pid at k/N) costs time, not proofs."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cluster import LocalCluster, hold_one_cpu_per_node

from cuzk_ray.formats.snarkjs_json import read_proof, read_public, read_verification_key
from cuzk_ray.groth16.verifier import verify

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.ray, pytest.mark.slow]
HANG_S = 600  # a hang detector's bound, far above what these small batches take

@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = LocalCluster(tmp_path_factory.mktemp("cluster"), nodes=2, cpus=2)
    yield c
    c.stop()


def job(cluster, tmp_path, *overrides, constraints: int = 1024):
    env = dict(cluster.env, RAY_ADDRESS=cluster.address)
    tmp_path.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen([sys.executable, str(ROOT / "jobs" / "prove.py"), f"circuit.constraints={constraints}",
                             "circuit.partitions=10", "pw=2", "progress_s=0", f"output_dir={tmp_path / 'out'}",
                             f"cache_dir={tmp_path / 'cache'}", *overrides], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)


def finish(p: subprocess.Popen) -> list[str]:
    try:
        out, _ = p.communicate(timeout=HANG_S)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    return [ln for ln in re.split(r"[\r\n]", out) if ln.strip()]


def test_watchdog_names_the_missing_cpu_and_the_twin_runs(cluster, tmp_path):
    """Another driver holds one CPU on each node; the job's two CPU provers take the rest, so its
    synthesis tasks can never run: one line within the watchdog's limit, exit 2 (issue 15: 400+ s
    stuck at 13/40). The twin: the same job once the other driver is gone."""
    hogs = hold_one_cpu_per_node(cluster)
    try:
        t0 = time.monotonic()
        lines = finish(job(cluster, tmp_path / "a", "proofs=1", "watchdog_s=5"))
        took = time.monotonic() - t0
    finally:
        os.killpg(hogs.pid, signal.SIGTERM)
        hogs.wait(timeout=60)
    assert took < HANG_S
    assert lines[-1].startswith("error: no progress for "), "\n".join(lines)
    assert "(watchdog_s=5): 2 synthesis task(s) wait for 1 CPU each and no node has one free: CPU 0 of 4 " \
           "available; the 2 CPU prover actor(s) hold one each" in lines[-1]
    assert not (tmp_path / "a" / "out" / "manifest.json").exists()
    time.sleep(3)  # the hogs' CPUs go back to the cluster
    p = job(cluster, tmp_path / "b", "proofs=1", "watchdog_s=5")
    lines = finish(p)
    assert p.returncode == 0, "\n".join(lines)
    assert lines[-1].startswith("total ") and "manifest:" in lines[-1]
    assert len(json.loads((tmp_path / "b" / "out" / "manifest.json").read_text())["proofs"]) == 10


def loading_prover(raylets: set[int]) -> int | None:
    """The pid of a CpuProver of this cluster (a child of one of its raylets) that has been
    running ready() -- loading its key -- for at least 0.3 s (the keyless ready() at its start
    takes milliseconds), or None."""
    seen: dict[int, float] = {}
    deadline = time.monotonic() + HANG_S
    while time.monotonic() < deadline:
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                title = Path(f"/proc/{d}/cmdline").read_bytes().split(b"\0")[0]
                ppid = int(Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid in raylets and title.startswith(b"ray::CpuProver.ready"):
                first = seen.setdefault(int(d), time.monotonic())
                if time.monotonic() - first >= 0.3:
                    return int(d)
        time.sleep(0.02)
    return None


def test_a_prover_killed_while_it_loads_its_key_is_restarted(cluster, tmp_path):
    """Issue 28: a CpuProver's process SIGKILLed while it loads the key (its ready() running)
    is restarted by Ray and loads the key again; the batch finishes, 40/40 verified (it ended the
    job with "CpuProver could not start: ActorUnavailableError ... Socket closed")."""
    raylets = {cluster.raylet_pid(n) for n in cluster.procs if n.poll() is None}
    p = job(cluster, tmp_path, "proofs=4", "restart_wait_s=60", constraints=4096)
    victim = loading_prover(raylets)
    assert victim is not None, "no prover seen loading its key"
    os.kill(victim, signal.SIGKILL)
    lines = finish(p)
    assert p.returncode == 0, "\n".join(lines)
    assert lines[-1].startswith("total ") and "40 partitions proved and verified" in lines[-1], "\n".join(lines)
    assert any("lost while it loaded key" in ln for ln in lines), "\n".join(lines)
    entries = json.loads((tmp_path / "out" / "manifest.json").read_text())["proofs"]
    vk = read_verification_key(tmp_path / "out" / "verification_key.json")
    assert len(entries) == 40
    assert all(verify(vk, read_public(tmp_path / "out" / e["public"]), read_proof(tmp_path / "out" / e["proof"]))
               for e in entries)
    # negative twin of the check above: a changed public input does not verify
    e = entries[0]
    public = read_public(tmp_path / "out" / e["public"])
    assert not verify(vk, [public[0] + 1, *public[1:]], read_proof(tmp_path / "out" / e["proof"]))


def kill_node_at(p: subprocess.Popen, k: int, total: int, kill, then=None) -> tuple[str, int | None]:
    """Read the job's output until it ends; call ``kill()`` once k/total partitions are verified
    (and ``then = (k2, f)``: f() once k2 are). Returns (the output, the count kill was called at)."""
    buf, killed_at, later = "", None, then
    try:
        while True:  # the progress line is rewritten with \r: read it character by character
            ch = p.stdout.read(1)
            if not ch:
                break
            buf += ch
            m = re.findall(rf"(\d+)/{total} partitions verified", buf[-40:])
            if killed_at is None and m and int(m[-1]) >= k:
                kill()
                killed_at = int(m[-1])
            if killed_at is not None and later and m and int(m[-1]) >= later[0]:
                later[1]()
                later = None
        p.wait(timeout=HANG_S)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    return buf, killed_at


def test_a_node_lost_mid_batch_costs_time_not_proofs(cluster, tmp_path):
    p = job(cluster, tmp_path, "proofs=4", "restart_wait_s=30")
    # the worker node is gone at 10/40: its raylet killed by pid
    buf, killed_at = kill_node_at(p, 10, 40, lambda: os.kill(cluster.raylet_pid(cluster.procs[1]), signal.SIGKILL))
    lines = [ln for ln in re.split(r"[\r\n]", buf) if ln.strip()]
    assert killed_at is not None, "\n".join(lines)
    assert p.returncode == 0, "\n".join(lines)
    assert lines[-1].startswith("total ") and "40 partitions proved and verified" in lines[-1]
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    entries = manifest["proofs"]
    assert len(entries) == 40 and not manifest.get("failed")
    vk = read_verification_key(tmp_path / "out" / "verification_key.json")
    assert all(verify(vk, read_public(tmp_path / "out" / e["public"]), read_proof(tmp_path / "out" / e["proof"]))
               for e in entries)
    assert len({e["prover_node"] for e in entries}) == 2  # both nodes proved before the loss
    # the work cut short on the lost node was resubmitted: through the lost prover's call failing
    # (RayActorError: "prover N is down"), or its synthesized input lost with the node (NodeDiedError,
    # ObjectLostError: the prover is not blamed). Once (CI on a fresh clone, 2026-12-06) the run
    # proved all 40 without "is down" in its output; the cause was not found (the output was cut)
    assert "attempt cut short by its prover" in buf, "\n".join(lines[-30:])


def test_a_node_that_joins_replaces_the_lost_one(cluster, tmp_path):
    """The head and a worker node B (after the node loss above: a new one) run the batch; node C
    joins (no prover of ours: they are placed at the start); B is lost at 5/100: its prover is
    given up and started again on C, which proves partitions of the same batch."""
    deadline = time.monotonic() + 120
    # a node lost by an earlier test is listed alive until the GCS's health checks say otherwise
    # (its `ray start --block` exits with its raylet): wait until the list matches what runs
    while cluster.alive_nodes() != sum(p.poll() is None for p in cluster.procs):
        assert time.monotonic() < deadline, "the node list does not settle"
        time.sleep(1)
    workers = [p for p in cluster.procs[1:] if p.poll() is None]
    b = workers[0] if workers else cluster.add_node()
    while cluster.alive_nodes() < 2:
        assert time.monotonic() < deadline + 120, "node B did not join"
        time.sleep(1)
    # enough work left after the loss for the head alone to outlast the give-up (restart_wait_s),
    # the replacement's start (every 5 s) and its key load: 8192 constraints per partition (4096 let
    # the head alone finish in 19 s before any replacement, once the CPU prover overlapped its MSMs)
    p = job(cluster, tmp_path, "proofs=10", "restart_wait_s=3", constraints=8192)
    joined = []

    def lose_b():
        os.kill(cluster.raylet_pid(b), signal.SIGKILL)

    def c_joins_then_b_is_lost():
        if not joined:
            joined.append(cluster.add_node())

    # C is started at 1/100 (it joins while the batch runs), B lost at 5/100
    buf, _ = kill_node_at(p, 1, 100, c_joins_then_b_is_lost, then=(5, lose_b))
    (tmp_path / "job.log").write_text(buf)
    lines = [ln for ln in re.split(r"[\r\n]", buf) if ln.strip()]
    assert p.returncode == 0, "\n".join(lines[-30:])
    assert lines[-1].startswith("total ") and "100 partitions proved and verified" in lines[-1]
    entries = json.loads((tmp_path / "out" / "manifest.json").read_text())["proofs"]
    assert len(entries) == 100
    assert "a replacement starts on node" in buf, "\n".join(lines[-30:])
    # C's prover proved partitions of this batch; B may have proved none before it was lost (on
    # loaded cores its first partition can still be running at 5/100: seen once in CI)
    c_node = re.search(r"a replacement starts on node ([0-9a-f]+)", buf).group(1)
    nodes = {e["prover_node"] for e in entries}
    assert any(n.startswith(c_node) for n in nodes) and len(nodes) >= 2, "\n".join(lines[-30:])
