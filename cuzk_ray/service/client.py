"""The batch job's client mode: ``python jobs/prove.py service.url=http://HOST:PORT ...`` sends
the batch to a running service instead of proving it, shows the same progress, and writes the
same output contract and manifest into output_dir (outputs.OutputDir), so scripts do not change.

Each proof of the batch is one request whose request_id is derived from the run (output_dir,
circuit, seeds, the proof's number): running the same command again, or with resume=true after
an interrupt, finds the proofs the service already has (200, the same proof_id) instead of
proving them twice. Every partition fetched is checked against the verification key here (a
pairing check) before it is written, as a local run checks what its provers return."""

from __future__ import annotations

import hashlib
import http.client
import json
import logging
import os
import time
import urllib.error
import urllib.request

from ..console import LOG_FILE, Console, Progress
from ..engines.types import PartitionResult, batch_proof_id
from .models import STATUS_IDS_MAX, one_line

log = logging.getLogger(__name__)

TIMEOUT_S = 60  # one HTTP request
RECONNECT_S = 300.0  # service.reconnect_s's default: how long an outage (a restart) is waited out
RETRY_S = 1.0  # seconds between attempts while the service is unreachable
UNAVAILABLE = (502, 503, 504)  # a proxy in front, or Serve's, while the service behind it restarts


class Unreachable(Exception):
    """Nothing (or not the service: a non-JSON answer) answered at the URL, or the service's own
    ingress said its engine is not available (``ours``: the service is there, starting or
    restarting); the message says why."""

    def __init__(self, why: str, ours: bool = False):
        super().__init__(why)
        self.ours = ours


class ServiceClient:
    """The service's HTTP API, each answer (status, JSON). A service that stops answering (a
    restart) is waited for up to ``reconnect_s`` seconds, said once per outage through ``say``
    and again when it is back; after that, or when it never answered yet (a wrong URL), a
    failure to connect is one line (RuntimeError). ``say``: a callable taking one line (default:
    the cuzk_ray.service.client logger's warnings). Every call may be repeated: a submit carries
    its request_id, which the service answers with the same proof."""

    def __init__(self, url: str, token: str, reconnect_s: float = RECONNECT_S, say=None, retry_s: float = RETRY_S):
        self.url, self.token = url.rstrip("/"), token
        self.reconnect_s, self.retry_s = float(reconnect_s), float(retry_s)
        self.say = say or log.warning
        self.answered = False  # a service answered here once: from then on an outage is waited out
        self.down_since: float | None = None

    def call(self, method: str, path: str, body=None) -> tuple[int, dict]:
        while True:
            try:
                answer = self.once(method, path, body)
            except Unreachable as e:
                self.answered |= e.ours  # the service is there: its start (or restart) is waited for
                self.outage(str(e))
                time.sleep(self.retry_s)
                continue
            self.back()
            return answer

    def once(self, method: str, path: str, body=None) -> tuple[int, dict]:
        """One request: (status, JSON answer); Unreachable when no service answered it."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT_S) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                answer = json.loads(raw)
            except ValueError:  # not the service's JSON: a proxy's page, or Serve before the app is up
                text = one_line(raw.decode(errors="replace"), 200) or e.reason
                if e.code in UNAVAILABLE or e.code == 404:
                    raise Unreachable(f"HTTP {e.code}: {text}") from None
                return e.code, {"error": text}
            if e.code in UNAVAILABLE:  # the ingress is up, the engine actor behind it is not (yet)
                raise Unreachable(f"HTTP {e.code}: {one_line(str(answer.get('error', answer)), 200)}", ours=True) \
                    from None
            return e.code, answer
        except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
            reason = getattr(e, "reason", None) or e
            raise Unreachable(getattr(reason, "strerror", None) or str(reason)) from None

    def outage(self, why: str) -> None:
        """A failed attempt: the first of an outage is said; past reconnect_s (or before the service
        ever answered) it is the one-line error."""
        now = time.monotonic()
        since = now if self.down_since is None else self.down_since
        if not self.answered or now - since >= self.reconnect_s:
            waited = f" for {now - since:.0f} s (service.reconnect_s={self.reconnect_s:g})" if self.answered else ""
            raise RuntimeError(f"service.url={self.url}: cannot reach the service ({why}){waited}; is jobs/serve.py "
                               f"running there?")
        if self.down_since is None:
            self.down_since = now
            self.say(f"service at {self.url} unreachable ({why}); retrying for up to {self.reconnect_s:g} s")

    def back(self) -> None:
        """An answer came: say so if it ends an outage."""
        if self.down_since is not None:
            self.say(f"service at {self.url} is back after {time.monotonic() - self.down_since:.0f} s; resuming")
        self.answered, self.down_since = True, None

    def statuses(self, proof_ids: list[str]) -> dict[str, dict]:
        """Each proof's status by id (GET /v1/proofs?ids=..., STATUS_IDS_MAX ids a call): a batch
        of any size is one poll, not a GET per proof."""
        out = {}
        for k in range(0, len(proof_ids), STATUS_IDS_MAX):
            chunk = proof_ids[k:k + STATUS_IDS_MAX]
            for st in self.expect("GET", "/v1/proofs?ids=" + ",".join(chunk), (200,))["proofs"]:
                out[st["proof_id"]] = st
        return out

    def expect(self, method: str, path: str, ok: tuple[int, ...], body=None) -> dict:
        code, ans = self.call(method, path, body)
        if code not in ok:
            raise RuntimeError(f"service.url={self.url}: {method} {path} answered {code}: "
                               f"{ans.get('error', ans)}")
        return ans


def request_circuit(cfg: dict, circuit, index: int) -> dict:
    """The request's circuit for the index-th proof of the batch (what a local run proves)."""
    c = cfg["circuit"]
    if circuit.kind == "snarkjs":
        out = {"kind": "snarkjs", "zkey": circuit.zkey, "witness": circuit.witness[index]}
        if circuit.r1cs:
            out["r1cs"] = circuit.r1cs
        return out
    if circuit.kind == "filecoin":  # the index-th C1 (one proof each: config.proof_count)
        return {"kind": "filecoin-c2", "c1": circuit.c1_files[index], "params": circuit.params,
                "variant": circuit.variant}
    return {"kind": "porep", "constraints": c["constraints"], "partitions": c["partitions"], "public": c["public"],
            "field_share": c["field_share"], "circuit_seed": c["circuit_seed"], "shape": c.get("shape", "default"),
            "seed": cfg["seed"], "proof": index}


def run_tag(cfg: dict, circuit) -> str:
    """What the batch's request ids start with: a hash of what the run proves and where it writes."""
    what = {"output_dir": os.path.abspath(os.path.expanduser(cfg["output_dir"])), "circuit": cfg["circuit"],
            "seed": cfg["seed"], "setup_seed": cfg["setup_seed"], "witness": list(getattr(circuit, "witness", ()))}
    return "batch-" + hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()[:16]


def run_client(cfg: dict, console: Console, scratch: bool = False) -> int:
    """jobs/prove.py with service.url: the batch proved by the service, written here."""
    from ..circuits import make_circuit
    from ..config import check_job_values
    from ..errors import Interrupted
    from ..outputs import OutputDir
    from ..signals import signal_name
    from .tokens import read_token, token_path

    check_job_values(cfg)
    circuit = make_circuit(cfg["circuit"])
    s = cfg["service"]
    token = s.get("token") or read_token(token_path(cfg))
    client = ServiceClient(s["url"], token, s.get("reconnect_s", RECONNECT_S), console.say)
    code, ans = client.call("GET", "/healthz")
    if code != 200:
        raise RuntimeError(f"service.url={client.url}: not ready ({ans.get('error', code)})")
    out = OutputDir.open(cfg["output_dir"], resume=cfg["resume"], overwrite=cfg["overwrite"])
    with out:
        console.log_to(out.path / LOG_FILE)
        try:
            return collect(cfg, circuit, client, out, console, scratch)
        except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM (signals.Terminated)
            kept = f"{len(out.entries)} verified partition(s) kept in {out.path}"
            if out.started:
                out.finish({}, {}, stopped=signal_name(e))
            raise Interrupted(f"{kept}; the service goes on proving the batch: rerun with resume=true to "
                              f"collect it") from None


def collect(cfg: dict, circuit, client: ServiceClient, out, console: Console, scratch: bool) -> int:
    """Submit every proof, follow them, write each done proof's partitions as it comes."""
    from ..config import proof_count
    from ..errors import ProofFailed
    from ..formats.native import file_sha256
    from ..formats.snarkjs_json import proof_from_json, public_from_json, verification_key_from_json
    from ..groth16.verifier import verify
    from ..keystore import insecure_line
    from ..outputs import RunIdentity

    say, t0 = console.say, time.perf_counter()
    proofs = proof_count(cfg, circuit)  # the batch job's count: one per C1 whatever proofs= says
    names = list(circuit.proof_names() or [batch_proof_id(i) for i in range(proofs)])
    tag, priority = run_tag(cfg, circuit), cfg["service"].get("priority", "normal")
    ids = []
    for i in range(proofs):
        body = {"request_id": f"{tag}-{names[i]}", "circuit": request_circuit(cfg, circuit, i), "priority": priority}
        ids.append(client.expect("POST", "/v1/proofs", (200, 202), body)["proof_id"])
    say(f"service: {proofs} proof(s) x {circuit.partitions} partition(s) of {circuit.kind} sent to {client.url} "
        f"({priority})")
    witness_sha = {w: file_sha256(w) for w in getattr(circuit, "witness", ())}
    bar = Progress(console, period=float(cfg.get("progress_s", 10.0)))
    total, shown = proofs * circuit.partitions, -1
    left, failed, key, identity = set(range(proofs)), {}, None, None
    written, progress = 0, dict.fromkeys(range(proofs), 0)  # partitions verified, per proof
    while left:
        states = client.statuses([ids[i] for i in sorted(left)])
        for i in sorted(left):
            st = states[ids[i]]
            progress[i] = st["partitions_done"]
            if st["state"] in ("failed", "cancelled"):
                failed[circuit.proof_label(i)] = st["error"] or f"{st['state']} on the service"
                left.discard(i)
            elif st["state"] == "done":
                res = client.expect("GET", f"/v1/proofs/{ids[i]}/result", (200,))
                vk = verification_key_from_json(res["verification_key"], f"{client.url} verification key")
                if identity is None:
                    identity, service_vk = service_identity(cfg, res, vk, proofs, circuit, RunIdentity), vk
                    out.start(identity, vk, len(vk.ic) - 1)
                    key = res.get("key")
                    if identity.insecure_dev_setup:  # the line a local run prints, on every run
                        say(insecure_line(key or identity.circuit_id, identity.setup_seed))
                for k, part in enumerate(res["partitions"]):
                    if (names[i], k) in out.entries:  # on disk already (resume)
                        continue
                    where = f"{client.url} proof {ids[i]} partition {k}"
                    proof, public = proof_from_json(part["proof"], where), public_from_json(part["public"], where)
                    if not verify(vk, public, proof):
                        raise ProofFailed(f"{where}: the proof does not verify with the service's verification key")
                    info = circuit.proof_info(i)
                    if "witness" in info:
                        info["witness_sha256"] = witness_sha[info["witness"]]
                    out.add(PartitionResult(names[i], k, proof, public, dict(part.get("seconds") or {}),
                                            part.get("synthesis_node"), part.get("prover_node"), True,
                                            proof_index=i), info)
                    written += 1
                left.discard(i)
        done_parts = sum(progress.values())
        if done_parts != shown:
            bar.update(done_parts, total)
            shown = done_parts
        if left:
            time.sleep(float(cfg["service"].get("poll_s", 0.5)))
    if identity is None:  # every proof failed: nothing proved, no key seen
        raise ProofFailed("; ".join(f"{label}: {why}" for label, why in sorted(failed.items())))
    info = {"circuit": identity.circuit_id, "key": key, "engine": "service", "service": client.url,
            "wall_seconds": round(time.perf_counter() - t0, 3)}
    if circuit.kind == "filecoin":  # each C1's MultiProof, verified against its inputs, as a local run writes it
        info.update(circuit.write_seal_proofs(out.path, out.entries, vk=service_vk))
    manifest = out.finish(info, failed)
    kind = "manifest" if manifest.name == "manifest.json" else "partial manifest (some proofs failed)"
    where = "" if scratch else f"; {kind}: {manifest}"
    say(f"total {time.perf_counter() - t0:.1f} s; {written} partitions proved by the service and verified here{where}")
    if failed:
        raise ProofFailed("; ".join(f"{label}: {why}" for label, why in sorted(failed.items())))
    return 0


def service_identity(cfg: dict, res: dict, vk, proofs: int, circuit, run_identity):
    """The run's identity from the service's answer (its key: development or not, and its seed),
    refused in one line when the service proves with another key than this job would."""
    run = res["run"]
    insecure, setup_seed = bool(run.get("insecure_dev_setup")), run.get("setup_seed")
    if insecure and setup_seed != cfg["setup_seed"]:
        raise ValueError(f"service.url: the service's key was made with setup_seed={setup_seed}, this job has "
                         f"setup_seed={cfg['setup_seed']}")
    witness = tuple(circuit.witness) if circuit.kind == "snarkjs" else ()
    return run_identity.for_key(vk, run["circuit_id"], cfg["seed"], proofs, circuit.partitions, witness, insecure,
                                setup_seed)
