"""The client side of the service across a restart (issue 28): ServiceClient and `jobs/prove.py
service.url=...` against a small real HTTP server that goes away (Connection refused) and comes
back. The server answers with the service's API shape and a real result: the proofs of a local
run of the same batch (the client checks each with a pairing before writing it). The service
itself, killed and restarted mid-batch, is tests/test_service_restart.py's."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from cluster import free_port

from cuzk_ray.service.client import ServiceClient

ROOT = Path(__file__).resolve().parent.parent
SMALL = ("circuit.constraints=64", "circuit.partitions=2", "proofs=1", "seed=3")
pytestmark = pytest.mark.slow


def prove_job(*overrides, timeout=300) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    return subprocess.run([sys.executable, str(ROOT / "jobs" / "prove.py"), *map(str, overrides)],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)


@pytest.fixture(scope="module")
def result(tmp_path_factory) -> dict:
    """GET /v1/proofs/{id}/result as the service answers it, from a local run of the batch."""
    tmp = tmp_path_factory.mktemp("local")
    out = tmp / "out"
    res = prove_job("engine=local", *SMALL, f"output_dir={out}", f"cache_dir={tmp / 'cache'}")
    assert res.returncode == 0, res.stdout + res.stderr
    m = json.loads((out / "manifest.json").read_text())
    parts = [{"proof": json.loads((out / e["proof"]).read_text()), "seconds": e["seconds"], "synthesis_node": "n",
              "public": json.loads((out / e["public"]).read_text()), "prover_node": "n"} for e in m["proofs"]]
    return {"partitions": parts, "verification_key": json.loads((out / "verification_key.json").read_text()),
            "run": m["run"], "key": "/srv/keys/dev-key"}


class FakeService:
    """The service's routes on 127.0.0.1:port in a thread; ``down()`` closes the port (clients get
    Connection refused), ``up()`` listens again on the same port; the proof is "running" until
    ``done`` is set."""

    def __init__(self, result: dict):
        self.result, self.port, self.done, self.polls, self.server = result, free_port(), False, 0, None
        self.url = f"http://127.0.0.1:{self.port}"

    def answer(self, path: str) -> tuple[int, dict]:
        if path == "/healthz":
            return 200, {"status": "ok"}
        if path == "/v1/proofs":
            return 202, {"proof_id": "p0", "state": "queued"}
        if path in ("/v1/proofs/p0", "/v1/proofs?ids=p0"):  # one proof's status, or the batch's (the client's poll)
            self.polls += 1
            n = len(self.result["partitions"])
            view = {"proof_id": "p0", "request_id": "r", "state": "done" if self.done else "running",
                    "partitions": n, "partitions_done": n if self.done else 0, "timings": {}, "error": None}
            return 200, view if path == "/v1/proofs/p0" else {"proofs": [view]}
        if path == "/v1/proofs/p0/result" and self.done:
            return 200, self.result
        return 404, {"error": f"no route {path}"}

    def up(self) -> None:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def reply(self):
                if self.headers.get("Content-Length"):
                    self.rfile.read(int(self.headers["Content-Length"]))
                code, body = fake.answer(self.path)
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = reply

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def down(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def wait_polls(self, n: int, job: subprocess.Popen | None = None, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while self.polls < n:
            assert job is None or job.poll() is None, job.communicate()
            assert time.monotonic() < deadline, f"{self.polls} status polls after {timeout} s"
            time.sleep(0.02)


@pytest.fixture
def fake(result):
    f = FakeService(result)
    f.up()
    yield f
    f.down()


def test_service_client_waits_out_an_outage_and_says_so_once(fake):
    said = []
    client = ServiceClient(fake.url, "t", reconnect_s=30, say=said.append, retry_s=0.1)
    assert client.call("GET", "/healthz") == (200, {"status": "ok"})
    fake.down()
    threading.Timer(1.0, fake.up).start()
    t0 = time.monotonic()
    code, ans = client.call("GET", "/v1/proofs/p0")
    assert code == 200 and ans["state"] == "running" and time.monotonic() - t0 >= 0.9
    assert said[0] == f"service at {fake.url} unreachable (Connection refused); retrying for up to 30 s"
    assert len(said) == 2 and said[1].startswith(f"service at {fake.url} is back after ")


def test_service_client_gives_up_after_reconnect_s_with_one_line(fake):
    said = []
    client = ServiceClient(fake.url, "t", reconnect_s=1, say=said.append, retry_s=0.1)
    assert client.call("GET", "/healthz")[0] == 200
    fake.down()
    t0 = time.monotonic()
    with pytest.raises(RuntimeError) as e:
        client.call("GET", "/v1/proofs/p0")
    assert 1 <= time.monotonic() - t0 < 5
    assert str(e.value) == (f"service.url={fake.url}: cannot reach the service (Connection refused) for 1 s "
                            f"(service.reconnect_s=1); is jobs/serve.py running there?")
    assert said == [f"service at {fake.url} unreachable (Connection refused); retrying for up to 1 s"]
    # a URL where no service ever answered (a typo) is the one line at once, not a wait
    fresh = ServiceClient(fake.url, "t", reconnect_s=30, say=said.append)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match=r"cannot reach the service \(Connection refused\); is jobs"):
        fresh.call("GET", "/healthz")
    assert time.monotonic() - t0 < 5 and len(said) == 1
    fake.up()  # for the fixture's down()


def client_job(fake, out, cache, *extra):
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    return subprocess.Popen([sys.executable, str(ROOT / "jobs" / "prove.py"), *SMALL, f"service.url={fake.url}",
                             "service.token=t", "service.poll_s=0.1", f"output_dir={out}", f"cache_dir={cache}",
                             "progress_s=0", *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT, env=env)


def test_prove_job_client_survives_a_service_restart_and_says_insecure(fake, tmp_path):
    out = tmp_path / "out"
    job = client_job(fake, out, tmp_path / "cache", "service.reconnect_s=60")
    fake.wait_polls(3, job)
    fake.down()
    time.sleep(1.5)  # the client polls into a closed port meanwhile
    fake.done = True
    fake.up()
    stdout, stderr = job.communicate(timeout=120)
    assert job.returncode == 0, stdout + stderr
    lines = stdout.splitlines()
    # refused, or reset when the port closed under a poll in flight
    outage = (rf"service at {re.escape(fake.url)} unreachable \(Connection (refused|reset by peer)\); "
              rf"retrying for up to 60 s")
    assert sum(bool(re.fullmatch(outage, ln)) for ln in lines) == 1, stdout
    assert sum(ln.startswith(f"service at {fake.url} is back after ") for ln in lines) == 1
    assert ("INSECURE: /srv/keys/dev-key comes from the development setup (setup_seed=0): anyone who knows the seed "
            "can forge its proofs; use a ceremony key (circuit=snarkjs) for anything real") in lines
    m = json.loads((out / "manifest.json").read_text())
    assert m["complete"] and m["insecure_dev_setup"] is True and len(m["proofs"]) == 2
    assert all(e["verified"] for e in m["proofs"])


def test_prove_job_client_gives_up_after_reconnect_s(fake, tmp_path):
    out = tmp_path / "out"
    job = client_job(fake, out, tmp_path / "cache", "service.reconnect_s=2")
    fake.wait_polls(2, job)
    fake.down()
    t0 = time.monotonic()
    stdout, stderr = job.communicate(timeout=120)
    assert job.returncode == 2 and "Traceback" not in stderr, stdout + stderr
    assert 2 <= time.monotonic() - t0 < 30
    assert stderr.strip().splitlines()[-1] == (
        f"error: service.url={fake.url}: cannot reach the service (Connection refused) for 2 s "
        f"(service.reconnect_s=2); is jobs/serve.py running there?")
    assert not (out / "manifest.json").exists() and not (out / "proofs").exists()
    fake.up()


def test_prove_job_client_with_a_ceremony_key_says_nothing_insecure(fake, tmp_path, result):
    """Negative twin of the INSECURE line: the service's result says its key is not a dev key."""
    fake.result = dict(result, run=dict(result["run"], insecure_dev_setup=False, setup_seed=None))
    fake.done = True
    job = client_job(fake, tmp_path / "out", tmp_path / "cache")
    stdout, stderr = job.communicate(timeout=120)
    assert job.returncode == 0, stdout + stderr
    assert "INSECURE" not in stdout + stderr
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["insecure_dev_setup"] is False
