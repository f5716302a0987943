"""The proving service's core, owned by the engine actor (engine_actor.py): the durable store,
the resident keys, the one prover pool (an engines.Engine: one GPU prover per GPU, or one CPU
prover per node, each serving every resident key) with its one scheduler, and the loop thread
that drives it.

    handlers (any thread)  submit / proof / result / cancel / status / preload / evict / health
                           -> a Reply; a request is in the store (committed) before it is answered
    loop thread            recover the store's queued and running proofs; preload the config's key;
                           then: feed accepted proofs to the scheduler in global order
                           (priority, then arrival), loading a key when the next proof needs one
                           (in a thread of its own, one key at a time; idle keys evicted
                           least-recently-used under service.key_budget);
                           step the scheduler; write each verified partition into
                           output_dir/<proof_id>/ (outputs.OutputDir); finish proofs (manifest
                           last, then the store; a filecoin-c2 proof once its MultiProof, made
                           by a side task of the pool, is on disk); the watchdog: work that cannot run for
                           watchdog_s (no CPU for synthesis, no prover left) fails the proofs
                           it holds, in one line, and the rest goes on

Order across keys: a proof is handed to the scheduler only when every proof before it (by
priority, then arrival) has been; the head of the queue waiting for its key to load (room under
the budget is made when busy keys drain) holds back the proofs behind it. The scheduler orders
what it was handed by (priority, arrival, partition), whatever the key, and sends each partition
to a prover that holds its key (engines.ray_executor.RayExecutor).

Work that holds the GIL for long runs in side tasks of the pool (Engine.beside: a Ray task on
this node), not in this process: a filecoin-c2 request's C1 read (json.loads of 38.6 MB at 32 GiB:
~1 s without a pause) and its MultiProof (the C1 again, ten pairing checks). Here they froze the
loop and every request meanwhile.

Ray is not imported here: the engines import it (engines.ray_executor), the actor wraps this.
"""

from __future__ import annotations

import dataclasses
import heapq
import logging
import os
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from ..circuits.filecoin import check_c1_file
from ..engines import Engine
from ..engines.admission import HostBudget, parse_bytes
from ..engines.settings import EngineSettings
from ..engines.types import ProofState
from ..errors import user_errors
from ..formats.native import file_sha256
from ..keystore import insecure_line
from ..outputs import MANIFEST, OutputDir, RunIdentity
from .checks import ServiceLocks, check_request, message
from .keys import KeyRing, ResidentKey, estimate_bytes, make_resident
from .models import (
    FILE_KEYS,
    STATUS_IDS_MAX,
    Conflict,
    Gone,
    Invalid,
    NotFound,
    ProofRecord,
    Reply,
    SubmitRequest,
    one_line,
    parse_circuit,
    parse_key_request,
    parse_submit,
)
from .results import read_result
from .store import Store

log = logging.getLogger("cuzk_ray.service")

IDLE_WAIT_S = 0.2  # the loop's wait with nothing to step (a submission wakes it at once)
STEP_S = 0.2  # the scheduler's step timeout
METRICS_S = 1.0


@dataclass(frozen=True)
class ServicePaths:
    """Where the service keeps its state and results, and what requests may name."""

    db: Path
    output_dir: Path
    input_roots: tuple[Path, ...]

    @classmethod
    def from_config(cls, cfg: dict) -> ServicePaths:
        s, cache = cfg["service"], Path(os.path.expanduser(cfg["cache_dir"]))
        db = Path(os.path.expanduser(s["db"])) if s.get("db") else cache / "service" / "service.db"
        out = Path(os.path.expanduser(s["output_dir"])) if s.get("output_dir") else cache / "service" / "proofs"
        roots = s.get("input_roots") or [str(cache), os.getcwd()]
        return cls(db.absolute(), out.absolute(), tuple(Path(os.path.realpath(os.path.expanduser(r))) for r in roots))


def service_settings(cfg: dict) -> EngineSettings:
    """The engine settings of the job's config, on Ray (the service's engines are Ray engines)."""
    settings = EngineSettings.from_config(cfg)
    if settings.engine == "local":
        raise ValueError("engine=local: the service proves on Ray (engine=ray or auto)")
    return dataclasses.replace(settings, engine="ray")


@dataclass
class Fed:
    """A proof handed to its key's scheduler, with its open output directory."""

    record: ProofRecord
    key_id: str
    out: OutputDir
    state: ProofState = ProofState.QUEUED
    info: dict = field(default_factory=dict)  # the entries' circuit fields (snarkjs: the witness and its SHA-256)


class ProvingService:
    """The service (see the module docstring); ``cfg``: the job's config as a plain dict."""

    def __init__(self, cfg: dict):
        self.cfg = cfg
        self.settings = service_settings(cfg)
        self.paths = ServicePaths.from_config(cfg)
        self.paths.output_dir.mkdir(parents=True, exist_ok=True)
        self.locks = ServiceLocks(self.paths.db, self.paths.output_dir)
        self.locks.take()  # held until stop (or this process's end): one service per db and output_dir
        self.store = Store(self.paths.db)
        self.keys = KeyRing(parse_bytes(cfg["service"].get("key_budget"), "service.key_budget"))
        self.budget = HostBudget(self.settings.host_budget)
        self.engine: Engine | None = None  # the prover pool and its scheduler (made in the loop thread)
        self.vram_room: int | None = None  # what a key may count on (the GPU provers' reading: _measure_room)
        self.stalled: list[str] = []  # the watchdog's lines so far (the last few; /v1/status)
        self.metrics = None  # ray.util.metrics objects, made in the loop thread (the actor's process)
        self.ready, self.phase, self.start_error = False, "recovering the store", None
        self.key_errors: dict[str, str] = {}
        self._lock = threading.RLock()
        self._pending: list[tuple[int, int, str]] = []  # heap of (priority, seq, proof_id): accepted, not fed
        self._records: dict[str, ProofRecord] = {}  # the pending proofs' records
        self._fed: dict[str, Fed] = {}
        self._sealing: dict[str, tuple[Fed, object]] = {}  # proof id -> (its Fed, the side task making its MultiProof)
        self._loads: list[tuple[str, dict]] = []  # preloads asked for: (key_id, circuit)
        self._loading: str | None = None  # the key being made resident (one at a time, in its own thread)
        self._wake, self._stop = threading.Event(), threading.Event()
        self._thread = threading.Thread(target=self._run, name="cuzk-service-loop", daemon=True)
        self._last_metrics = 0.0

    # -- life ----------------------------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop the loop, close the output directories (their journals hold every verified
        partition: a restart resumes them) and stop every engine's provers."""
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=60)
        with self._lock:
            for f in [*self._fed.values(), *(f for f, _ in self._sealing.values())]:
                f.out.close()  # (a MultiProof being made is made again on restart: its partitions are all on disk)
            self._fed.clear()
            self._sealing.clear()
            for kid in list(self.keys.keys):
                self._evict(kid, "service stopping")
            if self.engine is not None:
                self.engine.shutdown()
        self.store.close()
        self.locks.release()

    def health(self) -> Reply:
        if self.ready:
            return Reply(200, {"status": "ok"})
        if self.start_error:
            return Reply(503, {"error": f"not ready: {self.start_error}"})
        return Reply(503, {"error": f"starting: {self.phase}"})

    # -- handlers ------------------------------------------------------------------------------

    def submit(self, body) -> Reply:
        """POST /v1/proofs."""
        req = parse_submit(body, self.cfg)
        req = dataclasses.replace(req, circuit=self._resolved(req.circuit))
        earlier = self.store.by_request(req.request_id)
        if earlier is None:
            kid, partitions = self._check_inputs(req.circuit)  # reads files: not under the lock
            with self._lock:
                rec = self.store.insert(uuid.uuid4().hex, req, kid, partitions)  # committed: now acknowledged
                if rec is not None:
                    self._enqueue(rec)
            if rec is not None:
                log.info("proof %s request %s: accepted (%s, %s, %d partition(s))", rec.proof_id, rec.request_id,
                         req.priority.name.lower(), kid, partitions)
                self._wake.set()
                return Reply(202, {"proof_id": rec.proof_id, "state": rec.state.value})
            earlier = self.store.by_request(req.request_id)  # the same request_id, accepted meanwhile
        return self._same_request(earlier, req)

    def _same_request(self, earlier: ProofRecord, req: SubmitRequest) -> Reply:
        if earlier.body_sha256 != req.body_sha256:
            raise Conflict(f"request_id {req.request_id!r} was accepted with another body (proof "
                           f"{earlier.proof_id}); use a new request_id for another proof")
        return Reply(200, {"proof_id": earlier.proof_id, "state": earlier.state.value})

    def proof(self, proof_id: str) -> Reply:
        """GET /v1/proofs/{proof_id}."""
        return Reply(200, self._record(proof_id).view())

    def proofs(self, ids: str) -> Reply:
        """GET /v1/proofs?ids=A,B,...: what GET /v1/proofs/{id} answers for each proof, in the order
        asked, in one call (a client following many proofs polls once, not once per proof); 404
        naming the first unknown id."""
        wanted = [p for p in ids.split(",") if p]
        if not wanted:
            raise Invalid("ids: the proof ids to report, comma-separated (GET /v1/proofs?ids=A,B)")
        if len(wanted) > STATUS_IDS_MAX:
            raise Invalid(f"ids: {len(wanted)} proof ids, at most {STATUS_IDS_MAX} per call")
        return Reply(200, {"proofs": [self._record(p).view() for p in wanted]})

    def result(self, proof_id: str) -> Reply:
        """GET /v1/proofs/{proof_id}/result: the partitions' files, from output_dir (also after a restart)."""
        rec = self._record(proof_id)
        if rec.state is not ProofState.DONE:
            raise Conflict(f"proof {proof_id} is {rec.state.value}: its result is there once it is done")
        d = self.paths.output_dir / proof_id
        if not (d / MANIFEST).is_file():
            raise Gone(f"proof {proof_id} is done but {d / MANIFEST} is gone (its results were removed)")
        return Reply(200, read_result(d, proof_id))  # Gone / Damaged naming a file changed on disk

    def cancel(self, proof_id: str) -> Reply:
        """DELETE /v1/proofs/{proof_id}: a queued proof is dropped; a running one gets no more
        partitions submitted and the ones in flight are discarded as they come back."""
        with self._lock:
            rec = self._record(proof_id)
            if rec.state is ProofState.CANCELLED:
                return Reply(200, {"state": ProofState.CANCELLED.value})
            if rec.finished_state:
                raise Conflict(f"proof {proof_id} is {rec.state.value}: only a queued or running proof can be "
                               f"cancelled")
            if proof_id in self._records:  # not handed to an engine yet
                del self._records[proof_id]
                self._pending = [p for p in self._pending if p[2] != proof_id]
                heapq.heapify(self._pending)
            elif proof_id in self._sealing:  # every partition verified: its MultiProof is being made
                raise Conflict(f"proof {proof_id} is done: only a queued or running proof can be cancelled")
            elif proof_id in self._fed:
                f = self._fed[proof_id]
                sched = self.engine.scheduler
                if sched.cancel(proof_id) is ProofState.DONE:  # its last partition verified just now
                    raise Conflict(f"proof {proof_id} is done: only a queued or running proof can be cancelled")
                sched.forget(proof_id)
                del self._fed[proof_id]
                f.out.finish(self._info(f), {}, stopped="cancelled")
                f.out.close()
            self.store.set_state(proof_id, ProofState.CANCELLED)
            self._log_change(self.store.get(proof_id), rec.state)
        return Reply(200, {"state": ProofState.CANCELLED.value})

    def status(self) -> Reply:
        """GET /v1/status."""
        with self._lock:
            provers = self._provers_view()
            keys = [rk.view(sum(rk.key_id in p["keys"] for p in provers)) for rk in self.keys.keys.values()]
            body = {"ready": self.ready, "engine": {"pid": os.getpid(), "db": str(self.paths.db)},
                    "queue": self.store.queued_by_priority(), "proofs": self.store.counts(),
                    "provers": provers, "keys": keys, "key_bytes": self.keys.nbytes, "key_budget": self.keys.budget,
                    "host": {"reserved": self.budget.reserved, "budget": self.budget.limit,
                             "nodes": self._host_view()},
                    "loading": self._loading, "key_errors": dict(self.key_errors), "stalled": list(self.stalled)}
        return Reply(200, body)

    def _provers_view(self) -> list[dict]:
        """The pool's provers: where each runs, the keys it holds, its work, its device memory."""
        if self.engine is None:
            return []
        ex = self.engine.executor  # a RayExecutor: the service proves on Ray
        out = []
        for i, info in enumerate(self.engine.prover_info):
            state = "dead" if i in ex.dead else "down" if i in ex.down else "up"
            out.append({"node": info.get("node_id"), "pid": info.get("pid"), "backend": info.get("backend"),
                        "gpu": info.get("gpu_ids", []), "state": state, "keys": sorted(ex.held[i]),
                        "busy": ex.load[i] > 0, "in_flight": ex.load[i],
                        "vram_used": ex.vram.get(i, info.get("vram_used")), "vram_total": info.get("vram_total")})
        return out

    def _host_view(self) -> list[dict]:
        """Host memory measured per node (engines.memory): our processes now, at rest, at peak."""
        memory = self.engine.memory if self.engine is not None else None
        if memory is None:
            return []
        return [{"node": n.node, "bytes": n.now, "baseline": n.baseline, "peak": n.peak_total,
                 "processes": n.processes} for n in memory.nodes()]

    def preload(self, body) -> Reply:
        """POST /v1/keys: make a key resident (in the loop thread; /v1/status shows it once there)."""
        circuit = self._resolved(parse_key_request(body, self.cfg))
        kid, _ = self._check_inputs(circuit, key_only=True)
        with self._lock:
            if self.keys.get(kid) is not None:
                return Reply(200, {"key_id": kid, "state": "resident"})
            self.key_errors.pop(kid, None)
            self._loads.append((kid, circuit))
        self._wake.set()
        return Reply(202, {"key_id": kid, "state": "loading"})

    def evict(self, kid: str) -> Reply:
        """DELETE /v1/keys/{key_id}: stop its provers and drop it (409 while proofs use it)."""
        with self._lock:
            if kid not in self.keys.keys:
                raise NotFound(f"key {kid!r} is not resident")
            busy = [f.record.proof_id for f in self._fed.values() if f.key_id == kid]
            if busy:
                raise Conflict(f"key {kid} has {len(busy)} proof(s) running (e.g. {busy[0]}): cancel them or wait")
            self._evict(kid, "asked for")
        return Reply(200, {"key_id": kid, "state": "evicted"})

    # -- checks --------------------------------------------------------------------------------

    def _record(self, proof_id: str) -> ProofRecord:
        rec = self.store.get(proof_id)
        if rec is None:
            raise NotFound(f"no proof {proof_id!r}")
        return rec

    def _resolved(self, circuit: dict) -> dict:
        """Paths made absolute (from the service's working directory) before they are hashed and stored."""
        return {k: (os.path.abspath(os.path.expanduser(v)) if k in FILE_KEYS and isinstance(v, str) else v)
                for k, v in circuit.items()}

    def _check_inputs(self, circuit: dict, key_only: bool = False) -> tuple[str, int]:
        """(key id, partitions) of a request's circuit, or the ServiceError refusing it (checks.py)."""
        with self._lock:
            resident = set(self.keys.keys)
        return check_request(circuit, self.cfg, self.settings, self.paths.input_roots, key_only, resident,
                             self.vram_room, read_c1=self._read_c1)

    def _read_c1(self, path: str) -> str:
        """A request's C1 read and checked (check_c1_file) in a side task of the prover pool, not in
        this process: json.loads of a 32 GiB C1 holds the GIL for ~1 s at once, which froze the
        loop and every other request (one read per C1: c1_proof_type remembers it)."""
        engine = self.engine
        if engine is None:  # the pool is not up yet: read here
            return check_c1_file(path)
        return engine.beside(check_c1_file, path, name=f"c1-check:{os.path.basename(path)}").result()

    # -- the loop ------------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._recover()
            self.phase = "starting the prover pool"
            self.engine = Engine(self.settings, budget=self.budget)
            log.info("prover pool: %d x %s prover(s), pw=%d", len(self.engine.provers), self.settings.backend,
                     self.engine.pw)
            self._measure_room()
            if self.cfg["service"].get("preload", True):
                self.phase = "loading the config's key"
                circuit = self._resolved(parse_circuit(config_circuit(self.cfg), self.cfg, key_only=True))
                kid, _ = self._check_inputs(circuit, key_only=True)
                self._make_resident(kid, circuit)
            self.ready, self.phase = True, "ready"
            log.info("service ready: %d key(s) resident, %d proof(s) to complete", len(self.keys.keys),
                     len(self._pending))
        except Exception as e:  # noqa: BLE001  /healthz says why (one line) and the loop still serves
            self.start_error = one_line(message(e))
            log.error("service start failed: %s", self.start_error)
        while not self._stop.is_set():
            try:
                self._tick()
            except Exception:  # noqa: BLE001  a bug: logged with its traceback, the loop goes on
                log.exception("service loop")
                time.sleep(1.0)

    def _recover(self) -> None:
        """The store's queued and running proofs, back in the queue (a running one resumes from
        its output directory's journal)."""
        todo = self.store.unfinished()
        with self._lock:
            for rec in todo:
                self._enqueue(rec)
        if todo:
            running = sum(r.state is ProofState.RUNNING for r in todo)
            log.info("store %s: %d queued and %d running proof(s) to complete", self.paths.db,
                     len(todo) - running, running)

    def _enqueue(self, rec: ProofRecord) -> None:
        self._records[rec.proof_id] = rec
        heapq.heappush(self._pending, (int(rec.priority), rec.seq, rec.proof_id))

    def _tick(self) -> None:
        self._do_loads()
        self._feed()
        self._publish_metrics()
        if (not self._fed and not self._sealing) or self.engine is None:
            self._wake.wait(IDLE_WAIT_S)
            self._wake.clear()
            return
        sched = self.engine.scheduler
        res = sched.step(STEP_S)
        with self._lock:
            if res is not None:
                self._written(res)
            self._watchdog(sched)
            self._sync()
            self._sealed()

    def _watchdog(self, sched) -> None:
        """The batch job's rule in the loop: work that cannot run for watchdog_s (the executor
        names the resource) fails the proofs it holds, in one line; the rest goes on."""
        why = sched.stalled()
        if why is None:
            return
        failed = sched.fail_stalled(why)
        self.stalled = [*self.stalled[-4:], why]
        log.error("watchdog: %s; failing %d proof(s): %s", why, len(failed), ", ".join(failed))

    def _do_loads(self) -> None:
        """Start the next preload asked for (POST /v1/keys), unless a key is loading already."""
        with self._lock:
            while self._loads and self._loading is None:
                kid, circuit = self._loads.pop(0)
                if kid not in self.keys.keys:
                    self._load_async(kid, circuit)

    def _load_async(self, kid: str, circuit: dict) -> None:
        """Make ``kid`` resident in a thread of its own, one key at a time (under the lock): the
        loop goes on stepping the other keys' schedulers meanwhile (a 2^27 key takes tens of
        seconds: its mapping, the provers' start and upload)."""
        self._loading = kid
        threading.Thread(target=self._load_worker, args=(kid, circuit), name="cuzk-key-load", daemon=True).start()

    def _load_worker(self, kid: str, circuit: dict) -> None:
        try:
            self._make_resident(kid, circuit)
        except Exception as e:  # noqa: BLE001  /v1/status says why; the proofs waiting for it fail with it
            why = one_line(message(e))
            self.key_errors[kid] = why
            log.error("key %s: %s", kid, why)
            self._fail_pending(kid, why)
        finally:
            with self._lock:
                self._loading = None
            self._wake.set()

    def _make_resident(self, kid: str, circuit: dict) -> ResidentKey:
        """Load a key, evicting idle keys least-recently-used first so that it fits the budget;
        a key that cannot fit (with every idle key evicted) is refused in one line."""
        if self.engine is None:  # the pool did not start (/healthz says why): nothing can hold a key
            raise RuntimeError(f"no prover pool: {self.start_error or 'not started yet'}")
        with self._lock:
            busy = {f.key_id for f in self._fed.values()}
            est = estimate_bytes(circuit)
            victims = self.keys.victims(est, busy)
            if victims is None:
                raise RuntimeError(self._no_room(kid, est, busy))
            for v in victims:
                self._evict(v, f"least recently used: room for {kid}")
        rk = make_resident(kid, circuit, self.engine, self.cfg, self._measure_room())
        if rk.insecure:  # as the batch job says it, on every load (a cached key's too)
            log.warning(insecure_line(rk.source, rk.setup_seed))
        if self._metrics():
            self.metrics["key_load_seconds"].observe(rk.load_seconds)
        with self._lock:
            if self._stop.is_set():  # stopped while it loaded
                self.engine.remove_key(kid)
                raise RuntimeError("the service is stopping")
            busy = {f.key_id for f in self._fed.values()}  # (proofs of other keys were fed meanwhile)
            self.keys.add(rk)
            victims = self.keys.victims(0, busy, keep=kid)  # the real size may be above the estimate
            if victims is None:
                self._evict(kid, "above service.key_budget")
                raise RuntimeError(self._no_room(kid, rk.nbytes, busy))
            for v in victims:
                self._evict(v, f"least recently used: room for {kid}")
        return rk

    def _measure_room(self) -> int | None:
        """The VRAM a key may count on now, as the GPU provers read it (Engine.device_room: a key
        held alone on the tightest card; the service's own process opens no CUDA context for
        it), kept for the requests' checks; None with CPU provers. Read before any kernel ran
        (the pool's start) it is higher by what each CUDA context keeps once they have (~270 MiB
        a prover on an H100 after 2^14 partitions), within the preflight's VRAM margin."""
        self.vram_room = self.engine.device_room()
        if self.vram_room is not None:
            log.info("GPU provers: room for a key %.1f GiB (the tightest card, idle keys evictable)",
                     self.vram_room / 2**30)
        return self.vram_room

    def _no_room(self, kid: str, need: int, busy: set) -> str:
        return (f"key {kid} needs {need} B and service.key_budget={self.keys.budget} B cannot hold it"
                + (f" beside the busy key(s) {', '.join(sorted(busy))}" if busy else ""))

    def _evict(self, kid: str, why: str) -> None:
        rk = self.keys.pop(kid)
        if rk is not None:
            self.engine.remove_key(kid)
            log.info("key %s evicted (%s)", kid, why)

    def _feed(self) -> None:
        """Hand accepted proofs to their keys' schedulers, in order (see the module docstring)."""
        while True:
            with self._lock:
                if not self._pending:
                    return
                rec = self._records[self._pending[0][2]]
                rk = self.keys.get(rec.key_id)
                if rk is not None:
                    heapq.heappop(self._pending)
                    del self._records[rec.proof_id]
                    self._start(rec, rk)
                    continue
                if self._loading is not None:
                    return  # a key loads (this one, or a preload): the queue waits behind its head
                busy = {f.key_id for f in self._fed.values()}
                if self.keys.victims(estimate_bytes(rec.circuit), busy) is None and busy:
                    return  # room is made when the busy keys drain: the queue waits behind its head
                self._load_async(rec.key_id, rec.circuit)  # (one that cannot fit fails its proofs there)
                return

    def _fail_pending(self, kid: str, why: str) -> None:
        with self._lock:
            for pid in [p for p, r in self._records.items() if r.key_id == kid]:
                rec = self._records.pop(pid)
                self.store.set_state(pid, ProofState.FAILED, f"key {kid}: {why}")
                self._log_change(self.store.get(pid), rec.state)
            self._pending = [p for p in self._pending if p[2] in self._records]
            heapq.heapify(self._pending)

    def _start(self, rec: ProofRecord, rk: ResidentKey) -> None:
        """Open the proof's output directory (resumed: partitions in its journal are not proved
        again) and add the rest to the key's scheduler."""
        c, pid = rec.circuit, rec.proof_id
        witness, out = ((c["witness"],) if c["kind"] == "snarkjs" else ()), None
        try:
            out = OutputDir.open(self.paths.output_dir / pid, resume=True)
            identity = RunIdentity.for_key(rk.pk.vk, rk.circuit.circuit_id, c.get("seed", 0), 1, rec.partitions,
                                           witness, rk.insecure, rk.setup_seed)
            out.start(identity, rk.pk.vk, rk.pk.n_public)
            info = {"witness": c["witness"], "witness_sha256": file_sha256(c["witness"])} if witness else {}
        except (*user_errors(), OSError) as e:  # output_dir unusable, a witness file gone since
            if out is not None:
                out.close()
            self.store.set_state(pid, ProofState.FAILED, one_line(message(e)))
            self._log_change(self.store.get(pid), rec.state)
            return
        f = Fed(rec, rk.key_id, out, rec.state, info)
        self._fed[pid] = f
        left = [k for k in range(rec.partitions) if (pid, k) not in out.entries]
        if out.entries:
            log.info("proof %s: %d of %d partition(s) already on disk (%s), proving %d", pid, len(out.entries),
                     rec.partitions, out.path, len(left))
        if not left:
            self._done(f)
            return
        if c["kind"] == "snarkjs":
            index = rec.seq
            rk.circuit.witness_of[index] = c["witness"]
        elif c["kind"] == "filecoin-c2":
            index = rec.seq
            rk.circuit.c1_of[index] = c["c1"]
        else:
            index = c["proof"]
        self.engine.scheduler.add(index, c.get("seed", 0), rec.priority, proof_id=pid, partitions=left,
                                  key=rk.context)

    def _written(self, res) -> None:
        """A verified partition: its files and journal line, then the store's count."""
        f = self._fed.get(res.proof_id)
        if f is None:  # cancelled meanwhile
            return
        f.out.add(dataclasses.replace(res, proof_index=0), f.info)
        entries = [e for (p, _k), e in f.out.entries.items() if p == res.proof_id]
        timings: dict[str, float] = {}
        for e in entries:
            for st, sec in e.seconds.items():
                timings[st] = round(timings.get(st, 0.0) + sec, 6)
        self.store.set_progress(res.proof_id, len(entries), timings)

    def _sync(self) -> None:
        """Follow the scheduler's states of the fed proofs into the store (and the log)."""
        sched = self.engine.scheduler
        for pid, f in list(self._fed.items()):
            st = sched.status(pid)
            if st.state is ProofState.RUNNING and f.state is ProofState.QUEUED:
                self.store.set_state(pid, ProofState.RUNNING)
                self._log_change(self.store.get(pid), f.state)
                f.state = ProofState.RUNNING
            elif st.state is ProofState.DONE:
                sched.forget(pid)
                self._done(f)
            elif st.state is ProofState.FAILED:
                sched.forget(pid)
                self._finish(f, st.state, st.error)

    def _done(self, f: Fed) -> None:
        """A proof with every partition verified and on disk: finished now, or, for a filecoin-c2
        proof, once its MultiProof is made (the C1 read, ten pairing checks: ~2 s at 32 GiB, which
        held the loop and the lock) by a side task of the pool (_sealed)."""
        rk = self.keys.keys.get(f.key_id)
        if f.record.circuit["kind"] != "filecoin-c2" or rk is None:
            self._finish(f, ProofState.DONE)
            return
        pid = f.record.proof_id
        self._fed.pop(pid, None)
        c1 = rk.circuit.for_c1(f.record.circuit["c1"])  # the MultiProof, verified against the C1, written
        self._sealing[pid] = (f, self.engine.beside(c1.write_seal_proofs, f.out.path, f.out.entries, (pid,),
                                                    name=f"seal-proof:{pid}"))

    def _sealed(self) -> None:
        """Finish the proofs whose MultiProof came back (or failed: the proof fails, naming why)."""
        for pid, (f, job) in list(self._sealing.items()):
            if not job.done():
                continue
            del self._sealing[pid]
            try:
                seal, error = job.result(), None
            except Exception as e:  # noqa: BLE001  a bad C1 (user error), or the task's worker lost
                seal, error = None, f"MultiProof: {one_line(message(e))}"
            self._finish(f, ProofState.FAILED if error else ProofState.DONE, error, seal)

    def _finish(self, f: Fed, state: ProofState, error: str | None = None, seal: dict | None = None) -> None:
        """The manifest first (manifest.json when done; ``seal``: its MultiProof's record), then the store."""
        pid = f.record.proof_id
        self._fed.pop(pid, None)
        try:
            f.out.finish({**self._info(f), **(seal or {})}, {pid: error} if state is ProofState.FAILED else {})
        except (*user_errors(), OSError) as e:
            state, error = ProofState.FAILED, f"output_dir: {one_line(message(e))}"
        finally:
            f.out.close()
        self.store.set_state(pid, state, error)
        self._log_change(self.store.get(pid), f.state)

    def _info(self, f: Fed) -> dict:
        rk = self.keys.keys.get(f.key_id)
        return {"circuit": rk.circuit.circuit_id if rk else None, "key": rk.source if rk else None,
                "engine": "service", "proof_id": f.record.proof_id, "request_id": f.record.request_id}

    def _log_change(self, rec: ProofRecord, before: ProofState) -> None:
        """One line per state change, with the request's timings so far."""
        parts = [f"proof {rec.proof_id} request {rec.request_id}: {before.value} -> {rec.state.value}"]
        if rec.started and before is ProofState.QUEUED:
            parts.append(f"queued {rec.started - rec.created:.2f} s")
            self._observe("queued", rec.started - rec.created)
        if rec.finished:
            parts.append(f"total {rec.finished - rec.created:.2f} s, {rec.partitions_done}/{rec.partitions} "
                         f"partition(s)")
            self._observe("total", rec.finished - rec.created)
            if rec.started:
                self._observe("proving", rec.finished - rec.started)
        if rec.timings:
            parts.append("stages " + ", ".join(f"{k} {v:.3f} s" for k, v in sorted(rec.timings.items())))
        if rec.error:
            parts.append(f"error: {rec.error}")
        log.info("; ".join(parts))

    # -- metrics -------------------------------------------------------------------------------

    def _metrics(self) -> bool:
        if self.metrics is None:
            try:
                from ..engines.metrics import service_metrics

                self.metrics = service_metrics()
            except Exception:  # noqa: BLE001  no Ray metrics here (the core driven without Ray)
                self.metrics = {}
        return bool(self.metrics)

    def _observe(self, phase: str, seconds: float) -> None:
        if self._metrics():
            self.metrics["request_seconds"].observe(max(0.0, seconds), tags={"phase": phase})

    def _publish_metrics(self) -> None:
        now = time.monotonic()
        if now - self._last_metrics < METRICS_S or not self._metrics():
            return
        self._last_metrics = now
        for pr, n in self.store.queued_by_priority().items():
            self.metrics["queue_depth"].set(n, tags={"priority": pr})
        for st, n in self.store.counts().items():
            self.metrics["proofs"].set(n, tags={"state": st})
        self.metrics["resident_key_bytes"].set(self.keys.nbytes)
        with self._lock:
            host, provers = self._host_view(), self._provers_view()
        for n in host:
            self.metrics["host_bytes"].set(n["bytes"], tags={"node": n["node"][:12]})
        for i, p in enumerate(provers):
            if p["vram_used"] is not None:
                self.metrics["vram_bytes"].set(p["vram_used"], tags={"prover": f"{i}:{'/'.join(p['gpu'])}"})


def config_circuit(cfg: dict) -> dict:
    """The service config's own circuit as a request's circuit (what service.preload loads)."""
    c = cfg["circuit"]
    if c.get("kind", "porep") == "snarkjs":
        return {"kind": "snarkjs", "zkey": c.get("zkey"), "r1cs": c.get("r1cs")}
    if c.get("kind") == "filecoin":
        return {"kind": "filecoin-c2", "c1": c.get("c1"), "params": c.get("params"), "variant": c.get("variant")}
    return {"kind": "porep"}


__all__ = ["ProvingService", "ServicePaths", "service_settings"]
