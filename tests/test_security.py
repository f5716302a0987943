"""Loopback really (issue 15), the job as a user runs it: every socket its embedded Ray listens on
is on 127.0.0.1 (`ss`, the job's process tree), Ray's temp dir is in a 0700 directory under
cache_dir, output files are 0644 under umask 000; an unreachable ray.address is one line within
30 s. Twins: with Ray told it may form a cluster (RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=1) the same
check sees listeners beyond loopback; a umask of 077 gives 0600; a port that listens passes."""

import json
import os
import re
import shutil
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


def test_unreachable_cluster_address_is_one_line_within_30_s(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    t0 = time.monotonic()
    res = subprocess.run([sys.executable, str(ROOT / "jobs" / "prove.py"), "ray.address=127.0.0.1:1",
                          "circuit.constraints=256", "circuit.partitions=2", f"output_dir={tmp_path / 'out'}",
                          f"cache_dir={tmp_path / 'cache'}"], capture_output=True, text=True, cwd=ROOT, env=env,
                         timeout=HANG_S)
    took = time.monotonic() - t0
    last = res.stderr.strip().splitlines()[-1]
    assert res.returncode == 2, res.stdout + res.stderr
    assert took <= 30, took
    assert last.startswith("error: ray.address=127.0.0.1:1: no Ray cluster answers there (Connection refused)")
    assert "Traceback" not in res.stderr
    assert not (tmp_path / "out" / "manifest.json").exists() and not list((tmp_path / "out").glob("proofs/*"))


def test_an_address_that_listens_but_is_no_ray_cluster_is_one_line_within_30_s(tmp_path):
    """Something accepts connections at ray.address but no GCS answers: Ray's own retries are
    bounded (engines.ray_env.CONNECT_ENV) and end in one line."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(64)  # the kernel completes the handshakes; nothing ever answers
        t0 = time.monotonic()
        address = f"127.0.0.1:{s.getsockname()[1]}"
        res = subprocess.run([sys.executable, str(ROOT / "jobs" / "prove.py"), f"ray.address={address}",
                              "circuit.constraints=256", "circuit.partitions=2", f"output_dir={tmp_path / 'out'}",
                              f"cache_dir={tmp_path / 'cache'}"], capture_output=True, text=True, cwd=ROOT, env=env,
                             timeout=HANG_S)
        took = time.monotonic() - t0
    last = res.stderr.strip().splitlines()[-1]
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
    from cuzk_ray.engines.ray_env import CONNECT_ENV, LOOPBACK_ENV, prepare_env, restore_env

    for k in (LOOPBACK_ENV, "RAY_ADDRESS", *CONNECT_ENV):
        monkeypatch.delenv(k, raising=False)
    added = prepare_env({})  # embedded: loopback
    assert added == [LOOPBACK_ENV] and os.environ[LOOPBACK_ENV] == "0"
    assert not any(k in os.environ for k in CONNECT_ENV)
    restore_env(added)
    assert LOOPBACK_ENV not in os.environ  # nothing left for later `ray start` clusters or jobs
    monkeypatch.setenv(LOOPBACK_ENV, "1")  # the twin: the user's value is kept, and stays
    assert prepare_env({}) == [] and os.environ[LOOPBACK_ENV] == "1"
    added = prepare_env({"address": "10.0.0.1:6379"})  # a cluster: bounded connection, no loopback
    assert sorted(added) == sorted(CONNECT_ENV) and os.environ[LOOPBACK_ENV] == "1"
    restore_env(added)
    assert not any(k in os.environ for k in CONNECT_ENV)
