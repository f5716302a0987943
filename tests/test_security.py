"""Loopback really (issue 15), the job as a user runs it: every socket its embedded Ray listens on
is on 127.0.0.1 (`ss`, the job's process tree), Ray's temp dir is in a 0700 directory under
cache_dir, output files are 0644 under umask 000; an unreachable ray.address is one line within
30 s. Twins: with Ray told it may form a cluster (RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=1) the same
check sees listeners beyond loopback; a umask of 077 gives 0600; a port that listens passes."""

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from cuzk_ray.engines.ray_executor import probe_address
from cuzk_ray.formats.snarkjs_json import write_bytes_atomic

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.ray
LOOPBACK = ("127.", "[::ffff:127.", "[::1]")
HANG_S = 300  # a hang detector's bound for a small job on a shared 2-core machine


@pytest.fixture
def short_cache():
    """A cache dir short enough for Ray's socket paths under <cache>/ray/t (pytest's tmp_path is not)."""
    path = Path(tempfile.mkdtemp(prefix="cz", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def descendants(root: int) -> set[int]:
    """``root`` and every process below it (from /proc: parent pids)."""
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                ppid = int(Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d))
    found, todo = set(), [root]
    while todo:
        p = todo.pop()
        if p not in found:
            found.add(p)
            todo.extend(children.get(p, []))
    return found


def listeners(pids: set[int]) -> list[tuple[str, str]]:
    """(local address:port, process name) of every TCP/UDP socket these processes listen on."""
    out = subprocess.run(["ss", "-ltunpH"], capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        owners = {int(p) for p in re.findall(r"pid=(\d+)", line)}
        if owners & pids:
            name = re.search(r'\(\("([^"]+)"', line)
            found.append((line.split()[4], name.group(1) if name else "?"))
    return found


def run_job_watching(cache: Path, out: Path, env_extra: dict, umask: int = 0o022):
    """Run prove.py (embedded Ray); once its provers are up, list what its process tree listens on.
    Returns (exit code, output lines, listeners, the tree's command lines)."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.update(env_extra)
    job = subprocess.Popen([sys.executable, str(ROOT / "jobs" / "prove.py"), "proofs=2", "pw=2",
                            "circuit.constraints=512", "circuit.partitions=6", "ray.num_cpus=2",
                            f"output_dir={out}", f"cache_dir={cache}"], cwd=ROOT, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
                           preexec_fn=lambda: os.umask(umask))
    lines, seen, cmdlines = [], set(), []
    try:
        for line in job.stdout:
            lines.append(line.rstrip("\n"))
            if line.startswith("provers:"):  # Ray, its agents, workers and the provers are all up
                for _ in range(3):  # command lines read as the tree is seen (a fast job may be ending)
                    tree = descendants(job.pid)
                    seen |= set(listeners(tree))
                    for p in tree:
                        try:
                            cmdlines.append(Path(f"/proc/{p}/cmdline").read_text().replace("\0", " "))
                        except OSError:
                            pass
                    time.sleep(0.5)
        job.wait(timeout=HANG_S)
    finally:
        if job.poll() is None:
            os.killpg(job.pid, 9)
            job.wait()
    return job.returncode, lines, sorted(seen), cmdlines


def test_embedded_ray_listens_on_loopback_only_with_a_private_temp_dir(short_cache, tmp_path):
    out = tmp_path / "out"
    code, lines, seen, cmdlines = run_job_watching(short_cache, out, {}, umask=0)
    assert code == 0, "\n".join(lines)
    assert lines[-1].startswith("total ") and "manifest:" in lines[-1]
    assert len(seen) >= 5, seen  # gcs, raylet, agents, workers, the driver: the check saw them
    beyond = [(a, n) for a, n in seen if not a.startswith(LOOPBACK)]
    assert beyond == [], beyond
    # Ray's temp root is <cache>/ray/t inside a 0700 <cache>/ray, and Ray used it (not /tmp/ray)
    assert stat.S_IMODE((short_cache / "ray").stat().st_mode) == 0o700
    assert list((short_cache / "ray" / "t").glob("session_*/sockets"))
    assert any("raylet" in c and str(short_cache / "ray" / "t") in c for c in cmdlines)
    # outputs 0644 although the job ran with umask 000
    files = [json.loads((out / "manifest.json").read_text())["proofs"][0]["proof"], "manifest.json",
             "verification_key.json", "journal.jsonl"]
    modes = {f: oct(stat.S_IMODE((out / f).stat().st_mode)) for f in files}
    assert modes == {f: "0o644" for f in files}, modes
    written = [p for p in (out / "proofs").rglob("*.json")]
    assert len(written) == 24 and all(stat.S_IMODE(p.stat().st_mode) == 0o644 for p in written)
    # and Hydra's record of the run (jobs/prove.py tightens the umask before Hydra writes it)
    hydra = [out / ".hydra" / "config.yaml", out / "prove.log"]
    assert {str(p): oct(stat.S_IMODE(p.stat().st_mode)) for p in hydra} == {str(p): "0o644" for p in hydra}


def test_twin_a_ray_allowed_to_form_a_cluster_listens_beyond_loopback(short_cache, tmp_path):
    code, lines, seen, _ = run_job_watching(short_cache, tmp_path / "out", {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "1"})
    assert code == 0, "\n".join(lines)
    assert lines[-1].startswith("total ")
    beyond = [(a, n) for a, n in seen if not a.startswith(LOOPBACK)]
    assert beyond, seen  # the check above would have caught these: gcs and raylet on *, agents on the node's IP
    assert any(a.startswith(("*:", "0.0.0.0:", "[::]:")) for a, _ in beyond)


def test_atomic_writes_are_0644_or_tighter_whatever_the_umask(tmp_path):
    old = os.umask(0)
    try:
        write_bytes_atomic(tmp_path / "a.json", b"{}")
        os.umask(0o077)
        write_bytes_atomic(tmp_path / "b.json", b"{}")  # the twin: a tighter umask is kept
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.json").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "b.json").stat().st_mode) == 0o600


def prove_at(address: str, tmp_path) -> tuple[subprocess.CompletedProcess, float, str]:
    """jobs/prove.py with ray.address=address (RAY_ADDRESS unset): the run, its seconds, its last line."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    t0 = time.monotonic()
    res = subprocess.run([sys.executable, str(ROOT / "jobs" / "prove.py"), f"ray.address={address}",
                          "circuit.constraints=256", "circuit.partitions=2", f"output_dir={tmp_path / 'out'}",
                          f"cache_dir={tmp_path / 'cache'}"], capture_output=True, text=True, cwd=ROOT, env=env,
                         timeout=HANG_S)
    return res, time.monotonic() - t0, res.stderr.strip().splitlines()[-1]


def test_unreachable_cluster_address_is_one_line_within_30_s(tmp_path):
    res, took, last = prove_at("127.0.0.1:1", tmp_path)
    assert res.returncode == 2, res.stdout + res.stderr
    assert took <= 30, took
    assert last.startswith("error: ray.address=127.0.0.1:1: no Ray cluster answers there (Connection refused)")
    assert "Traceback" not in res.stderr
    assert not (tmp_path / "out" / "manifest.json").exists() and not list((tmp_path / "out").glob("proofs/*"))


def test_an_address_that_listens_but_is_no_ray_cluster_is_one_line_within_30_s(tmp_path):
    """Something accepts connections at ray.address but no GCS answers: Ray's own retries are
    bounded (engines.ray_env.CONNECT_ENV) and end in one line."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(64)  # the kernel completes the handshakes; nothing ever answers
        res, took, last = prove_at(f"127.0.0.1:{s.getsockname()[1]}", tmp_path)
    assert res.returncode == 2, res.stdout + res.stderr
    assert took <= 30, took
    assert re.fullmatch(r"error: ray.address=127.0.0.1:\d+: no Ray cluster answered there \(.*\); need a running "
                        r"head \(`ray start --head`\) at that address", last), last
    assert "Traceback" not in res.stderr and not (tmp_path / "out" / "manifest.json").exists()


def test_probe_passes_a_port_that_listens_and_refuses_a_malformed_address():
    with socket.socket() as s:  # the twin of the unreachable address: something answers
        s.bind(("127.0.0.1", 0))
        s.listen()
        probe_address(f"127.0.0.1:{s.getsockname()[1]}")
    with pytest.raises(RuntimeError, match=r"ray.address=nohost: need host:port"):
        probe_address("nohost")


def test_prepare_env_sets_only_what_is_unset_and_restore_removes_only_that(monkeypatch):
    from cuzk_ray.engines.ray_env import CONNECT_ENV, LOOPBACK_ENV, METRIC_PORT_ENV, prepare_env, restore_env

    for k in (LOOPBACK_ENV, "RAY_ADDRESS", *CONNECT_ENV, *METRIC_PORT_ENV):
        monkeypatch.delenv(k, raising=False)
    added = prepare_env({})  # embedded: loopback, and metrics ports of its own
    assert added == [LOOPBACK_ENV, *METRIC_PORT_ENV] and os.environ[LOOPBACK_ENV] == "0"
    ports = [int(os.environ[k]) for k in METRIC_PORT_ENV]
    assert len(set(ports)) == 2 and not {44217, 44227} & set(ports) and all(p > 1024 for p in ports)
    assert not any(k in os.environ for k in CONNECT_ENV)
    restore_env(added)
    assert not any(k in os.environ for k in (LOOPBACK_ENV, *METRIC_PORT_ENV))  # nothing left for later Rays
    monkeypatch.setenv(LOOPBACK_ENV, "1")  # the twin: the user's values are kept, and stay
    monkeypatch.setenv("DASHBOARD_METRIC_PORT", "45000")
    assert prepare_env({}) == ["AUTOSCALER_METRIC_PORT"] and os.environ[LOOPBACK_ENV] == "1"
    assert os.environ["DASHBOARD_METRIC_PORT"] == "45000"
    restore_env(["AUTOSCALER_METRIC_PORT"])
    monkeypatch.delenv("DASHBOARD_METRIC_PORT")
    added = prepare_env({"address": "10.0.0.1:6379"})  # a cluster: bounded connection, no loopback
    assert sorted(added) == sorted(CONNECT_ENV) and os.environ[LOOPBACK_ENV] == "1"
    restore_env(added)
    assert not any(k in os.environ for k in CONNECT_ENV)


def test_two_embedded_rays_at_once_get_metrics_ports_of_their_own(tmp_path):
    """Two jobs on one machine, each with its embedded Ray, up at the same time: both finish, and
    neither listens on Ray's fixed metrics ports (44227 dashboard head, 44217 autoscaler monitor:
    each Ray gets free ones, engines.ray_env.METRIC_PORT_ENV); no port is held by both. The
    dashboard agent's 52365 has no setting (docs/SECURITY.md): at most one of them holds it."""
    import threading

    caches = [Path(tempfile.mkdtemp(prefix="cz", dir="/tmp")) for _ in range(2)]
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "DASHBOARD_METRIC_PORT",
                                                            "AUTOSCALER_METRIC_PORT")}
    jobs, lines, seen = [], [[], []], [set(), set()]
    up, end, ready = [None, None], [None, None], [threading.Event(), threading.Event()]

    def read(i):
        for line in jobs[i].stdout:
            lines[i].append(line.rstrip("\n"))
            if line.startswith("provers:"):  # its Ray, agents and provers are up: what does its tree listen on
                up[i] = time.monotonic()
                for _ in range(3):
                    seen[i] |= set(listeners(descendants(jobs[i].pid)))
                    time.sleep(0.3)
                ready[i].set()
                # the first one up waits for the other (its driver stopped, its Ray still up and
                # listening): on a loaded machine the two starts may lie further apart than a proof
                with contextlib.suppress(ProcessLookupError):  # already gone: the premise check says so
                    os.kill(jobs[i].pid, signal.SIGSTOP)
                    ready[1 - i].wait(timeout=HANG_S)
                    os.kill(jobs[i].pid, signal.SIGCONT)
        end[i] = time.monotonic()

    try:
        for i in range(2):
            jobs.append(subprocess.Popen(
                [sys.executable, str(ROOT / "jobs" / "prove.py"), "engine=ray", "proofs=3", "pw=2",
                 "circuit.constraints=2048", "circuit.partitions=8", "ray.num_cpus=2",
                 f"output_dir={tmp_path / f'out{i}'}", f"cache_dir={caches[i]}"], cwd=ROOT, env=env,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True))
        readers = [threading.Thread(target=read, args=(i,), daemon=True) for i in range(2)]
        for t in readers:
            t.start()
        for j in jobs:
            j.wait(timeout=HANG_S)
        for t in readers:
            t.join(timeout=30)
    finally:
        for j in jobs:
            if j.poll() is None:
                os.killpg(j.pid, 9)
                j.wait()
        for c in caches:
            shutil.rmtree(c, ignore_errors=True)
    for i in range(2):
        assert jobs[i].returncode == 0, "\n".join(lines[i])
        assert lines[i][-1].startswith("total ") and "manifest:" in lines[i][-1]
    assert None not in up and max(up) < min(end), "the two jobs' provers were not up at the same time"
    ports = [{a.rsplit(":", 1)[1] for a, _ in s} for s in seen]
    assert all(len(p) >= 5 for p in ports), seen  # gcs, raylet, agents, workers, the driver: both seen
    assert not ports[0] & ports[1], (ports[0] & ports[1], seen)
    assert not {"44217", "44227"} & (ports[0] | ports[1]), seen
