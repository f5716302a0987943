"""The service under many clients at once (a load test), with a table at the end:

    python jobs/bench_service_load.py [--clients 16] [--requests 4] [--circom-clients 4] [--out DIR] \
        -- OVERRIDES...          (e.g. circuit.constraints=4096 circuit.partitions=2 pw=2)

1. `jobs/serve.py OVERRIDES` starts (its config's key preloaded) and waits for /healthz;
2. --clients threads, each a client as a storage provider's sealing pipeline would write one:
   it sends --requests built-in-circuit requests (POST /v1/proofs, each its own statement: seed =
   the client, proof = the request), polls each (GET /v1/proofs/ID) until it is done, reads its
   result and verifies every partition with the service's verification key, and sends its first
   request again at the end (it must get the same proof id: submit is idempotent);
   --circom-clients more threads do the same with the circom fixture (a second key resident
   beside the first: two keys under load); --batch-client N adds the project's own client at the
   same time, `jobs/prove.py service.url=... proofs=N` (one process following N proofs);
3. every proof's journal checked for a partition proved twice; peak host memory sampled every
   second; then the batch job (jobs/prove.py) proves the same number of built-in proofs with the
   same overrides, for the comparison: the service's proofs/s under load against the batch's.

Table: proofs done, failed, HTTP errors, partitions verified, the latency of each request (submit
to done as the client saw it), of POST and GET, throughput. Everything binds to 127.0.0.1; the
service is stopped by its process group."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
import urllib.error
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from service_trial import CIRCOM, ROOT, Sampler, Service, child_env, free_port, proved_twice  # noqa: E402

sys.path.insert(0, str(ROOT))
from cuzk_ray.formats.snarkjs_json import proof_from_json, public_from_json, verification_key_from_json  # noqa: E402
from cuzk_ray.groth16.verifier import verify  # noqa: E402


@dataclass
class ClientLog:
    """What one client thread saw."""

    done: int = 0
    failed: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # HTTP errors and exceptions, one line each
    latency: list[float] = field(default_factory=list)  # submit -> done, per request
    post: list[float] = field(default_factory=list)  # seconds per POST /v1/proofs
    get: list[float] = field(default_factory=list)  # seconds per GET
    partitions: int = 0
    verified: int = 0
    idempotent: bool | None = None
    first_submit: float = float("inf")
    last_done: float = 0.0


def timed(svc: Service, times: list[float], method: str, path: str, body=None):
    """svc.request, its seconds appended to ``times``."""
    t0 = time.perf_counter()
    try:
        return svc.request(method, path, body)
    finally:
        times.append(time.perf_counter() - t0)


def run_client(svc: Service, name: str, bodies: list[dict], poll_s: float, log: ClientLog) -> None:
    """Submit every body, follow each to its end, verify each done proof's partitions, resubmit the first."""
    try:
        sent = {}
        for i, circuit in enumerate(bodies):
            body = {"request_id": f"{name}-{i}", "circuit": circuit}
            log.first_submit = min(log.first_submit, time.time())
            sent[timed(svc, log.post, "POST", "/v1/proofs", body)["proof_id"]] = time.time()
        left = set(sent)
        while left:
            time.sleep(poll_s)
            for pid in sorted(left):
                st = timed(svc, log.get, "GET", f"/v1/proofs/{pid}")
                if st["state"] in ("queued", "running"):
                    continue
                left.discard(pid)
                if st["state"] != "done":
                    log.failed.append(f"{pid}: {st['state']} {st.get('error')}")
                    continue
                log.latency.append(time.time() - sent[pid])
                log.last_done = max(log.last_done, time.time())
                log.done += 1
                check_result(timed(svc, log.get, "GET", f"/v1/proofs/{pid}/result"), pid, log)
        again = timed(svc, log.post, "POST", "/v1/proofs", {"request_id": f"{name}-0", "circuit": bodies[0]})
        log.idempotent = again["proof_id"] == next(iter(sent))
    except (urllib.error.URLError, OSError, ValueError, KeyError) as e:
        log.errors.append(f"{name}: {type(e).__name__}: {e}")


def check_result(res: dict, pid: str, log: ClientLog) -> None:
    """Every partition of a done proof verified with the verification key the service returned."""
    vk = verification_key_from_json(res["verification_key"], f"proof {pid} verification key")
    for k, part in enumerate(res["partitions"]):
        where = f"proof {pid} partition {k}"
        log.partitions += 1
        log.verified += verify(vk, public_from_json(part["public"], where), proof_from_json(part["proof"], where))


def porep_bodies(overrides: list[str], client: int, n: int) -> list[dict]:
    """The built-in circuit of the service's config (its key preloaded), a statement per request."""
    given = dict(o.removeprefix("circuit.").split("=", 1) for o in overrides if o.startswith("circuit."))
    sizes = {k: int(given[k]) for k in ("constraints", "partitions", "public") if k in given}
    return [{"kind": "porep", **sizes, "seed": 1000 + client, "proof": i} for i in range(n)]


def circom_bodies(n: int) -> list[dict]:
    body = {"kind": "snarkjs", "zkey": str(CIRCOM / "linear.zkey"), "witness": str(CIRCOM / "witness_2.wtns"),
            "r1cs": str(CIRCOM / "linear.r1cs")}
    return [body] * n  # one statement, distinct requests (ids): each proved


def quantiles(xs: list[float]) -> str:
    if not xs:
        return "-"
    q = np.quantile(np.asarray(xs), [0.5, 0.9, 0.99])
    return f"p50 {q[0]:.3f} / p90 {q[1]:.3f} / p99 {q[2]:.3f} / max {max(xs):.3f}"


def start_batch_client(svc: Service, out: Path, cache: Path, overrides: list[str], proofs: int):
    """jobs/prove.py service.url=... proofs=N, its output in batch-client.log."""
    cmd = [sys.executable, str(ROOT / "jobs" / "prove.py"), f"service.url={svc.url}", f"cache_dir={cache}",
           f"output_dir={out / 'batch-client'}", f"proofs={proofs}", "seed=7", "overwrite=true", "progress_s=0",
           *[o for o in overrides if o.startswith("circuit.")]]
    return subprocess.Popen(cmd, cwd=ROOT, stdout=open(out / "batch-client.log", "w"), stderr=subprocess.STDOUT,
                            env=child_env())


def batch_job(out: Path, cache: Path, overrides: list[str], proofs: int) -> tuple[int, float]:
    """jobs/prove.py proves the same number of built-in proofs: (exit, proving seconds from its manifest)."""
    run = out / "batch"
    res = subprocess.run([sys.executable, str(ROOT / "jobs" / "prove.py"), f"cache_dir={cache}", f"output_dir={run}",
                          f"proofs={proofs}", "overwrite=true", "progress_s=0",
                          *[o for o in overrides if not o.startswith(("service.", "ray.metrics"))]],
                         cwd=ROOT, capture_output=True, text=True, env=child_env())
    if res.returncode != 0:
        return res.returncode, float("nan")
    return 0, json.loads((run / "manifest.json").read_text())["wall_seconds"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--requests", type=int, default=4, help="requests per client")
    ap.add_argument("--circom-clients", type=int, default=4)
    ap.add_argument("--batch-client", type=int, default=0, metavar="N",
                    help="also jobs/prove.py service.url=... proofs=N at the same time")
    ap.add_argument("--poll", type=float, default=0.5, help="seconds between a client's status polls")
    ap.add_argument("--out", type=Path, default=ROOT / "outputs" / "service-load")
    ap.add_argument("--ready-timeout", type=float, default=600)
    ap.add_argument("--no-batch", action="store_true", help="skip the batch job's comparison")
    ap.add_argument("overrides", nargs="*")
    args = ap.parse_args()
    out = args.out.absolute()
    out.mkdir(parents=True, exist_ok=True)
    cache = out / "cache"
    sampler = Sampler()
    svc = Service(out, cache, free_port(), args.overrides, "load")
    logs: list[ClientLog] = []
    try:
        ready = svc.wait_ready(args.ready_timeout)
        work = [(f"porep-{c}", porep_bodies(args.overrides, c, args.requests)) for c in range(args.clients)]
        work += [(f"circom-{c}", circom_bodies(args.requests)) for c in range(args.circom_clients)]
        threads = []
        for name, bodies in work:
            logs.append(ClientLog())
            threads.append(threading.Thread(target=run_client, args=(svc, name, bodies, args.poll, logs[-1])))
        t0 = time.time()
        client = start_batch_client(svc, out, cache, args.overrides, args.batch_client) if args.batch_client else None
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        client_code = client.wait() if client else None
        wall = time.time() - t0
    finally:
        svc.stop()
        sampler.stop()
    twice = proved_twice(cache / "service" / "proofs")
    done = sum(g.done for g in logs)
    porep = [g for g, (name, _) in zip(logs, work, strict=True) if name.startswith("porep")]
    porep_done = sum(g.done for g in porep)
    span = max(g.last_done for g in logs) - min(g.first_submit for g in logs) if done else float("nan")
    porep_span = max(g.last_done for g in porep) - min(g.first_submit for g in porep) if porep_done else float("nan")
    errors = [e for g in logs for e in g.errors]
    verified, partitions = sum(g.verified for g in logs), sum(g.partitions for g in logs)
    rows = [("service start (key made or loaded, provers up)", f"{ready:.1f} s"),
            ("clients (built-in / circom) x requests", f"{args.clients} / {args.circom_clients} x {args.requests}"),
            ("proofs done / failed", f"{done} / {sum(len(g.failed) for g in logs)}"),
            ("HTTP errors and exceptions", f"{len(errors)}" + (f" (first: {errors[0]})" if errors else "")),
            ("partitions verified by the clients", f"{verified}/{partitions}"),
            ("resubmits answered with the same proof id", f"{sum(bool(g.idempotent) for g in logs)}/{len(logs)}"),
            ("proofs with a partition proved twice", twice or "none"),
            ("latency submit -> done (s)", quantiles([x for g in logs for x in g.latency])),
            ("POST /v1/proofs (s)", quantiles([x for g in logs for x in g.post])),
            ("GET (status, result) (s)", quantiles([x for g in logs for x in g.get])),
            ("wall, first submit to last done", f"{span:.1f} s ({wall:.1f} s with the clients' last calls)"),
            ("throughput, all proofs", f"{done / span:.2f} proofs/s"),
            ("throughput, built-in proofs", f"{porep_done / porep_span:.2f} proofs/s"),
            ("peak host memory used (machine)", f"{sampler.host_peak / 2**30:.1f} GiB")]
    if client is not None:
        rows.append((f"batch client: jobs/prove.py service.url, {args.batch_client} proofs",
                     f"exit {client_code}, {wall:.1f} s, {args.batch_client / wall:.2f} proofs/s"))
    ok = not errors and not twice and client_code in (None, 0) and done == len(logs) * args.requests
    ok &= all(g.idempotent for g in logs) and verified == partitions
    if not args.no_batch:
        n = porep_done + args.batch_client  # every built-in proof the service made
        code, seconds = batch_job(out, cache, args.overrides, n)
        rows.append((f"batch job: {n} built-in proofs (jobs/prove.py, same overrides)",
                     f"exit {code}, proving {seconds:.1f} s, {n / seconds:.2f} proofs/s"))
    width = max(len(r[0]) for r in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    (out / "load.json").write_text(json.dumps({k: str(v) for k, v in rows}, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
