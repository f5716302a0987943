"""A real proving service for tests: `python jobs/serve.py` in its own process group (its embedded
Ray's processes with it) on 127.0.0.1 and a free port, talked to over HTTP, stopped by process
group id (SIGTERM, then SIGKILL) -- never by name."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from cluster import free_port

ROOT = Path(__file__).resolve().parent.parent


class ServiceProcess:
    def __init__(self, tmp: Path, *overrides: str, cache: Path | None = None, env: dict | None = None,
                 port: int | None = None, log_name: str = "serve.log"):
        self.tmp, self.cache = tmp, cache or tmp / "cache"
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = tmp / log_name
        cmd = [sys.executable, str(ROOT / "jobs" / "serve.py"), f"cache_dir={self.cache}",
               f"service.port={self.port}", *overrides]
        base = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
        self.env = dict(base, RAY_AUTH_MODE="disabled", PYTHONPATH=str(ROOT), **(env or {}))
        self._log = open(self.log, "w")
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT, env=self.env,
                                     start_new_session=True)

    @property
    def token(self) -> str:
        return (self.cache / "service" / "token").read_text().strip()

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_text(self, *needles: str, timeout: float = 30) -> str:
        """The log once it holds any of ``needles`` (a line a Ray worker logs reaches this file
        through Ray's log monitor, a moment after the action it reports); AssertionError with the
        log's tail after ``timeout`` seconds."""
        deadline = time.time() + timeout
        while True:
            text = self.text()
            if any(n in text for n in needles):
                return text
            if time.time() > deadline:
                raise AssertionError(f"none of {needles} in the service's log after {timeout} s:\n{text[-3000:]}")
            time.sleep(0.1)

    def request(self, method: str, path: str, body=None, token: str | None | bool = True, raw: bytes | None = None,
                timeout: float = 30):
        """(status, JSON answer); ``token``: True = the service's, False/None = no header, a str = that one."""
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if token:
            req.add_header("Authorization", f"Bearer {self.token if token is True else token}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def wait_ready(self, timeout: float = 180) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"jobs/serve.py exited ({self.proc.returncode}):\n{self.text()[-3000:]}")
            try:
                if self.request("GET", "/healthz", token=False, timeout=5)[0] == 200:
                    return
            except (OSError, ValueError):
                pass
            time.sleep(0.2)
        raise RuntimeError(f"service not ready after {timeout} s:\n{self.text()[-3000:]}")

    def submit(self, request_id: str, circuit: dict, priority: str | None = None) -> str:
        body = {"request_id": request_id, "circuit": circuit}
        if priority:
            body["priority"] = priority
        code, ans = self.request("POST", "/v1/proofs", body)
        assert code == 202, (code, ans)
        return ans["proof_id"]

    def wait_state(self, proof_id: str, states=("done",), timeout: float = 120) -> dict:
        deadline = time.time() + timeout
        while time.time() < deadline:
            code, ans = self.request("GET", f"/v1/proofs/{proof_id}")
            assert code == 200, (code, ans)
            if ans["state"] in states:
                return ans
            time.sleep(0.1)
        raise AssertionError(f"{proof_id} not in {states} after {timeout} s: {ans}\n{self.text()[-2000:]}")

    def signal(self, sig) -> None:
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass

    def stop(self, timeout: float = 60) -> int | None:
        """SIGTERM to jobs/serve.py (a clean stop: it stops Serve, the engine actor and its Ray),
        then SIGKILL to whatever is left of its process group; returns its exit code."""
        try:
            os.kill(self.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
        code = self.proc.returncode
        self.kill()
        return code

    def kill(self) -> None:
        self.signal(signal.SIGKILL)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
        self._log.close()
