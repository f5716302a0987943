"""The service tried as an operator would (issue 28), with a table at the end:

    python jobs/service_trial.py [--proofs 4] [--kill-after 2] [--circom 4] [--out DIR] -- OVERRIDES...
    python jobs/service_trial.py --kind filecoin-c2 --make-key -- circuit=filecoin circuit.c1=C1.json ...

1. `jobs/serve.py OVERRIDES` starts (its config's key preloaded: made on the first start) and a
   circom key (tests/fixtures/circom/linear) is made resident beside it (POST /v1/keys);
2. phase A: `jobs/prove.py service.url=... proofs=N` (the batch client) and --circom circom proofs
   sent over HTTP at the same time; s/proof steady state of the batch from the service's own
   database (finish times of its proofs);
   (--make-key first: the config's development key made in a process of its own, on the GPU when
   setup_backend allows: the service's engine actor holds no GPU, so its own setup would run on
   the CPU; for circuit=filecoin the partition cache is recorded there too);
   --kind filecoin-c2 (circuit=filecoin): a C1 is one proof, so each phase's batch is --proofs
   filecoin-c2 requests of the config's C1 sent over HTTP (class Requests) instead of the batch
   client, followed in the service's database across the restart, and each proof's results
   folder (its partitions and MultiProof) verified again; with --c1-copies each request names a
   copy of its own (OUT/c1/<phase>-<i>.json), so the service parses every request's C1 as it
   would distinct sectors' (at the POST, and once per proof by the engine's split task), where one
   shared C1 is parsed once at the POST and once per worker process after; each request's POST
   seconds are printed;
3. phase B: another batch; once --kill-after of its proofs are done, the service's process group
   is SIGKILLed and the service started again on the same database; the client waits the outage
   out (service.reconnect_s) and finishes; time from the restart to ready and to the first proof
   done after it;
4. every partition of both runs verified again here (jobs/verify.py --manifest), and each proof's
   journal checked for partitions proved twice; peak host memory (the machine's used memory) and
   peak VRAM (nvidia-smi) sampled every second throughout.

Everything binds to 127.0.0.1; the processes started are stopped by process group."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CIRCOM = ROOT / "tests" / "fixtures" / "circom" / "linear"


def child_env() -> dict:
    """This environment with the checkout first on PYTHONPATH (what is there already kept: the
    device machine's carried wheels)."""
    return dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Sampler:
    """Peak used host memory (MemTotal - MemAvailable) and VRAM (nvidia-smi), every second."""

    def __init__(self):
        self.host_peak, self.vram_peak, self._stop = 0, 0, threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(1.0):
            info = dict(ln.split(":", 1) for ln in Path("/proc/meminfo").read_text().splitlines())
            used = (int(info["MemTotal"].split()[0]) - int(info["MemAvailable"].split()[0])) * 1024
            self.host_peak = max(self.host_peak, used)
            try:
                out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                                     capture_output=True, text=True, timeout=10).stdout
                self.vram_peak = max(self.vram_peak, sum(int(x) for x in out.split()) * 2**20)
            except (OSError, ValueError, subprocess.TimeoutExpired):
                pass

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


class Service:
    """jobs/serve.py in its own process group (its embedded Ray with it)."""

    def __init__(self, out: Path, cache: Path, port: int, overrides: list[str], name: str):
        self.url, self.out, self.cache = f"http://127.0.0.1:{port}", out, cache
        cmd = [sys.executable, str(ROOT / "jobs" / "serve.py"), f"cache_dir={cache}", f"service.port={port}",
               f"service.input_roots=[{out},{ROOT / 'tests' / 'fixtures'}]", *overrides]
        self.log = open(out / f"serve-{name}.log", "w")
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True, env=child_env())

    def request(self, method: str, path: str, body=None):
        token = (self.cache / "service" / "token").read_text().strip()
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.loads(r.read())

    def wait_ready(self, timeout: float) -> float:
        t0 = time.time()
        while time.time() - t0 < timeout:
            if self.proc.poll() is not None:
                raise SystemExit(f"error: jobs/serve.py exited {self.proc.returncode} (log {self.log.name})")
            try:
                with urllib.request.urlopen(self.url + "/healthz", timeout=5) as r:
                    if r.status == 200:
                        return time.time() - t0
            except OSError:
                pass
            time.sleep(0.5)
        raise SystemExit(f"error: service not ready after {timeout:g} s (log {self.log.name})")

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            pass
        self.kill()


MAKE_KEY = """
import sys
from cuzk_ray.circuits import make_circuit
from cuzk_ray.job import compose
cfg = compose(sys.argv[1:])
make_circuit(cfg["circuit"]).load_key(cfg["cache_dir"], cfg["setup_seed"], cfg["setup_backend"])
"""


def make_key(cache: Path, overrides: list[str]) -> float:
    """The config's development key, made (or found) in a subprocess; its seconds."""
    t0 = time.time()
    subprocess.run([sys.executable, "-c", MAKE_KEY, f"cache_dir={cache}", *overrides], cwd=ROOT, check=True,
                   env=child_env())
    return time.time() - t0


def client(out: Path, cache: Path, url: str, name: str, proofs: int, seed: int,
           overrides: list[str]) -> subprocess.Popen:
    """The batch client (jobs/prove.py service.url=...), its output in client-<name>.log."""
    cmd = [sys.executable, str(ROOT / "jobs" / "prove.py"), f"service.url={url}", f"cache_dir={cache}",
           f"output_dir={out / name}", f"proofs={proofs}", f"seed={seed}", "service.reconnect_s=900", "progress_s=5",
           *overrides]
    return subprocess.Popen(cmd, cwd=ROOT, stdout=open(out / f"client-{name}.log", "w"), stderr=subprocess.STDOUT,
                            start_new_session=True, env=child_env())


def finished(db: Path, since: float, after: float = 0.0, kind: str = "porep") -> list[float]:
    """Finish times (after ``after``) of the done proofs of ``kind`` created after ``since`` (the
    service's database)."""
    with sqlite3.connect(db, timeout=30) as con:
        rows = con.execute("SELECT finished, circuit FROM proofs WHERE state = 'done' AND created >= ? AND "
                           "finished >= ?", (since, after)).fetchall()
    return sorted(f for f, c in rows if json.loads(c).get("kind") == kind)


def wait_gone(port: int, timeout: float = 60) -> None:
    """Until nothing accepts a connection on the port (a killed service's HTTP proxy may outlive
    its process group's leader by a moment)."""
    end = time.time() + timeout
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            return
        time.sleep(0.2)
    raise SystemExit(f"error: port {port} still answers {timeout:g} s after the kill")


def circom_proofs(svc: Service, n: int, tag: str) -> list[str]:
    body = {"kind": "snarkjs", "zkey": str(CIRCOM / "linear.zkey"), "witness": str(CIRCOM / "witness_2.wtns"),
            "r1cs": str(CIRCOM / "linear.r1cs")}
    return [svc.request("POST", "/v1/proofs", {"request_id": f"{tag}-{i}", "circuit": body, "priority": "high"})
            ["proof_id"] for i in range(n)]


class Requests:
    """--kind filecoin-c2: ``n`` requests of one C1 sent over HTTP; poll() / wait() as a client
    process's (None while any is queued or running, then 0 when all are done, else 1), from the
    service's database, so they outlive a restart."""

    def __init__(self, svc: Service, db: Path, circuits: list[dict], tag: str):
        self.db, self.returncode, self.ids, self.post_s = db, None, [], []
        for i, circuit in enumerate(circuits):
            t0 = time.perf_counter()
            self.ids.append(svc.request("POST", "/v1/proofs", {"request_id": f"{tag}-{i}", "circuit": circuit})
                            ["proof_id"])
            self.post_s.append(time.perf_counter() - t0)

    def poll(self) -> int | None:
        with sqlite3.connect(self.db, timeout=30) as con:
            states = [con.execute("SELECT state FROM proofs WHERE proof_id = ?", (p,)).fetchone()[0] for p in self.ids]
        if any(st in ("queued", "running") for st in states):
            return None
        self.returncode = 0 if all(st == "done" for st in states) else 1
        return self.returncode

    def wait(self) -> int:
        while self.poll() is None:
            time.sleep(0.5)
        return self.returncode


def batch(svc: Service, out: Path, cache: Path, name: str, proofs: int, seed: int, overrides: list[str], kind: str,
          copies: bool = False):
    """The phase's batch: the batch client (jobs/prove.py service.url=...), or --kind filecoin-c2's
    Requests of the C1 (and variant, params) the overrides name; ``copies``: each request its own
    copy of that C1 under OUT/c1."""
    if kind == "porep":
        return client(out, cache, svc.url, name, proofs, seed, overrides)
    fields = ("circuit.c1=", "circuit.variant=", "circuit.params=")
    given = dict(o.removeprefix("circuit.").split("=", 1) for o in overrides if o.startswith(fields))
    circuits = [{"kind": "filecoin-c2", **given} for _ in range(proofs)]
    if copies:
        (out / "c1").mkdir(exist_ok=True)
        for i, circuit in enumerate(circuits):
            circuit["c1"] = str(out / "c1" / f"{name}-{i}.json")
            shutil.copyfile(given["c1"], circuit["c1"])
    return Requests(svc, cache / "service" / "service.db", circuits, f"trial-{name}-c1")


def verify_batch(out: Path, cache: Path, name: str, job) -> tuple[bool, str]:
    """Every partition of the phase's batch verified again: the client's output, or each request's
    results folder."""
    if isinstance(job, Requests):
        runs = [verify_run(cache / "service" / "proofs" / p) for p in job.ids]
        parts = [tuple(map(int, msg.split()[0].split("/"))) for _, msg in runs]
        return all(ok for ok, _ in runs), f"{sum(k for k, _ in parts)}/{sum(n for _, n in parts)} partitions OK"
    return verify_run(out / name)


def verify_run(out: Path) -> tuple[bool, str]:
    """jobs/verify.py --manifest on a client's output: (exit 0, "k/n partitions OK")."""
    res = subprocess.run([sys.executable, str(ROOT / "jobs" / "verify.py"), "--manifest", str(out / "manifest.json")],
                         capture_output=True, text=True, env=child_env())
    lines = res.stdout.splitlines()
    ok = sum(ln.startswith("OK ") for ln in lines)
    return res.returncode == 0, f"{ok}/{sum(ln.endswith('proof.json') for ln in lines)} partitions OK"


def proved_twice(results: Path) -> list[str]:
    """Proof ids whose journal holds a partition more than once."""
    bad = []
    for journal in results.glob("*/journal.jsonl"):
        parts = [json.loads(x)["partition"] for x in journal.read_text().splitlines()[1:]]
        if len(parts) != len(set(parts)):
            bad.append(journal.parent.name)
    return bad


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--proofs", type=int, default=4)
    ap.add_argument("--kill-after", type=int, default=2)
    ap.add_argument("--circom", type=int, default=4)
    ap.add_argument("--out", type=Path, default=ROOT / "outputs" / "service-trial")
    ap.add_argument("--ready-timeout", type=float, default=1200)
    ap.add_argument("--cache", type=Path, default=None, help="cache_dir (default OUT/cache)")
    ap.add_argument("--make-key", action="store_true", help="make the config's dev key first, in its own process")
    ap.add_argument("--kind", default="porep", choices=("porep", "filecoin-c2"), help="the batch's request kind")
    ap.add_argument("--c1-copies", action="store_true",
                    help="filecoin-c2: each request names its own copy of the C1 (parsed as distinct sectors' are)")
    ap.add_argument("overrides", nargs="*")
    args = ap.parse_args()
    out = args.out.absolute()
    out.mkdir(parents=True, exist_ok=True)
    overrides = args.overrides
    job_overrides = [o for o in overrides if o.startswith(("circuit", "setup_seed", "setup_backend", "hardware"))]
    cache = (args.cache or out / "cache").absolute()
    db = cache / "service" / "service.db"
    sampler, port, rows = Sampler(), free_port(), []
    if args.make_key:
        rows.append(("development key made or found", f"{make_key(cache, job_overrides):.1f} s"))
    svc = Service(out, cache, port, overrides, "1")
    try:
        rows.append(("service start (key made or loaded, provers up)", f"{svc.wait_ready(args.ready_timeout):.1f} s"))
        kid = svc.request("POST", "/v1/keys", {"circuit": {"kind": "snarkjs", "zkey": str(CIRCOM / "linear.zkey")}})
        while kid["key_id"] not in [k["key_id"] for k in svc.request("GET", "/v1/status")["keys"]]:
            time.sleep(0.5)
        st = svc.request("GET", "/v1/status")
        rows.append(("keys resident", ", ".join(f"{k['key_id']} ({k['bytes'] / 2**30:.2f} GiB)" for k in st["keys"])))
        # phase A: steady state
        t_a = time.time()
        a = batch(svc, out, cache, "a", args.proofs, 1, job_overrides, args.kind, args.c1_copies)
        circom_a = circom_proofs(svc, args.circom, "trial-a")
        code_a = a.wait()
        done_a = finished(db, t_a, kind=args.kind)
        per = (done_a[-1] - done_a[0]) / (len(done_a) - 1) if len(done_a) > 1 else float("nan")
        rows += [("A: batch exit (client, or requests all done)", code_a),
                 (f"A: {args.kind} proofs done", len(done_a)),
                 ("A: s/proof (steady, finish to finish)", f"{per:.3f}"),
                 ("A: circom proofs done", sum(svc.request("GET", f"/v1/proofs/{p}")["state"] == "done"
                                               for p in circom_a))]
        st = svc.request("GET", "/v1/status")
        rows.append(("A: provers (keys; VRAM used)", "; ".join(
            f"{p['backend']} {p['gpu']} {len(p['keys'])} key(s) {(p['vram_used'] or 0) / 2**30:.1f} GiB"
            for p in st["provers"])))
        # phase B: SIGKILL mid-batch, restart, the client finishes
        t_b = time.time()
        b = batch(svc, out, cache, "b", args.proofs, 2, job_overrides, args.kind, args.c1_copies)
        circom_proofs(svc, args.circom, "trial-b")
        while len(finished(db, t_b, kind=args.kind)) < args.kill_after:
            if b.poll() is not None:
                raise SystemExit(f"error: client b exited {b.returncode} before the kill")
            time.sleep(0.2)
        done_at_kill = len(finished(db, t_b, kind=args.kind))
        svc.kill()
        t_kill = time.time()
        wait_gone(port)
        svc = Service(out, cache, port, overrides, "2")
        rows += [("B: proofs done at the kill", done_at_kill),
                 ("B: restart to ready (key loaded again)", f"{svc.wait_ready(args.ready_timeout):.1f} s")]
        while not finished(db, t_b, t_kill, args.kind) and b.poll() is None:
            time.sleep(0.2)
        after = finished(db, t_b, t_kill, args.kind)
        rows.append(("B: kill to first proof done after the restart",
                     f"{after[0] - t_kill:.1f} s" if after else "none"))
        code_b = b.wait()
        rows += [("B: batch exit (client, or requests all done)", code_b),
                 (f"B: {args.kind} proofs done", len(finished(db, t_b, kind=args.kind)))]
    finally:
        svc.stop()
        sampler.stop()
    ok_a, msg_a = verify_batch(out, cache, "a", a)
    ok_b, msg_b = verify_batch(out, cache, "b", b)
    twice = proved_twice(cache / "service" / "proofs")
    for name, job in (("A", a), ("B", b)):
        if isinstance(job, Requests):  # each POST's seconds, in the order sent (the check parses its C1)
            rows.append((f"{name}: POST seconds, each filecoin-c2 request", " ".join(f"{t:.3f}" for t in job.post_s)))
    rows += [("A: every partition verified again (jobs/verify.py)", f"{ok_a} {msg_a}"),
             ("B: every partition verified again (jobs/verify.py)", f"{ok_b} {msg_b}"),
             ("proofs with a partition proved twice", twice or "none"),
             ("peak host memory used (machine)", f"{sampler.host_peak / 2**30:.1f} GiB"),
             ("peak VRAM used (nvidia-smi)", f"{sampler.vram_peak / 2**30:.1f} GiB" if sampler.vram_peak else "n/a")]
    width = max(len(r[0]) for r in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    (out / "trial.json").write_text(json.dumps({k: str(v) for k, v in rows}, indent=1))
    return 0 if (code_a == 0 and code_b == 0 and ok_a and ok_b and not twice) else 1


if __name__ == "__main__":
    sys.exit(main())
