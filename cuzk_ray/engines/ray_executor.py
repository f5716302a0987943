"""The Ray executor: a synthesis task per partition feeding prover actors.

    synth:<proof>:<partition>  Ray task (CPU, memory=, spread over nodes) -> Arrow RecordBatch
    prove:<proof>:<partition>  <Cpu|Gpu>Prover.prove, Ray actor (least loaded) -> PartitionOutcome

It only submits and reports completions; ordering, retries, budgets and verification are the
scheduler's. Tasks receive plain dicts and ObjectRefs only (never OmegaConf objects or big values).

Faults: a prove call that fails because its actor died or is restarting (RayActorError), or
because a node and its objects were lost, comes back ``interrupted`` (the scheduler resubmits it,
uncounted). The actor is then "down": it gets no work until a ready() probe answers (re-probed
every PROBE_S; Ray answers ActorUnavailableError while it restarts), and is given up as dead after
``restart_wait_s``. ``blocked()`` tells the scheduler's watchdog what cannot run and why: no
prover left, or synthesis tasks that wait for a CPU (or memory) no node has free.
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import socket
import tempfile
import threading
import time
from collections import OrderedDict

import numpy as np
import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from ..backends import cuda_backend_class
from ..circuits import split_inputs, with_share
from ..partition import Partition, to_record_batch
from .actors import CpuProver, GpuProver, NodeSampler
from .admission import expected_pw
from .memory import ProcessMemory, processes_memory, ray_node_processes
from .metrics import RayMetrics
from .ray_env import LOOPBACK_ENV, embedded
from .ray_setup import ship_package
from .types import BundleKey, Completion, DeviceRoom, KeyRef, SideOutcome, SplitShare, StoreKey, WorkItem
from .worker import limit_synthesis_threads, synthesize_witness

log = logging.getLogger(__name__)

READY_TIMEOUT_S = 600
CONNECT_TIMEOUT_S = 5  # a cluster's GCS port must accept a connection within this (issue 15: 300+ s of retries)
# Ray's session directory name (~40 characters) and sockets/plasma_store follow the temp root; a
# unix socket path has at most 107 bytes.
TEMP_DIR_MAX = 40
PROBE_S = 0.5  # how often a down prover actor is asked whether it is back
SHARES_KEPT = 16  # proofs whose split input is kept for partitions still to submit (12 MB each at 32 GiB)
REPLACE_S = 5.0  # how often the nodes are looked at for one to replace a given-up CPU prover on
# Errors that say where the attempt ran was lost (a node and the objects on it), not the partition.
LOST = (ray.exceptions.NodeDiedError, ray.exceptions.ObjectLostError, ray.exceptions.OwnerDiedError)
# Errors that say the prover cannot run the call: dead or restarting, or pinned to a node that is
# gone (ActorUnschedulableError is no RayActorError: counted as the partition's, a lost node's
# prover failed a partition three times in CI before the pool had marked it down).
DOWN = (ray.exceptions.RayActorError, ray.exceptions.ActorUnschedulableError)


def init_ray(ray_cfg: dict, object_store_bytes: int | None = None) -> bool:
    """Connect to ``ray.address`` / RAY_ADDRESS when given (its GCS port probed first: an address
    where nothing answers is one line within CONNECT_TIMEOUT_S, not Ray's minutes of retries), else
    start an embedded Ray bound to 127.0.0.1 (ray_env.prepare_env must have run before ray was
    imported: docs/SECURITY.md) with an object store of ``object_store_bytes`` (None: Ray's
    default) and its session files under ``ray.temp_dir`` (a 0700 directory). Returns True when
    this call started or connected Ray (so the caller shuts it down)."""
    if ray.is_initialized():
        return False
    kwargs = {"logging_level": logging.INFO if ray_cfg.get("verbose") else logging.WARNING, "log_to_driver": True}
    address = ray_cfg.get("address") or os.environ.get("RAY_ADDRESS")
    if ship_package(ray_cfg, address):
        # Workers on other nodes (or without the package installed) import cuzk_ray from here.
        import cuzk_ray

        kwargs["runtime_env"] = {"py_modules": [os.path.dirname(cuzk_ray.__file__)]}
    if address:
        probe_address(address)
        try:
            ray.init(address=address, **kwargs)
        except (RuntimeError, ConnectionError, TimeoutError) as e:  # something listens; no GCS answered
            first = next((ln.strip() for ln in str(e).splitlines() if ln.strip()), type(e).__name__)
            raise RuntimeError(f"ray.address={address}: no Ray cluster answered there ({first[:200]}); need a "
                               f"running head (`ray start --head`) at that address") from None
        return True
    if ray_cfg.get("temp_dir"):
        kwargs["_temp_dir"] = private_temp_dir(ray_cfg["temp_dir"])
    ray.init(address="local", num_cpus=ray_cfg.get("num_cpus"), num_gpus=ray_cfg.get("num_gpus"),
             include_dashboard=bool(ray_cfg.get("dashboard", False)), dashboard_host="127.0.0.1",
             _node_ip_address="127.0.0.1", _metrics_export_port=ray_cfg.get("metrics_export_port"),
             object_store_memory=object_store_bytes, **kwargs)
    node_ip = ray.util.get_node_ip_address()
    if node_ip != "127.0.0.1":  # ray was imported before prepare_env ran: its listeners are on node_ip
        log.warning("embedded Ray advertises %s, not 127.0.0.1: its servers listen beyond loopback "
                    "(set %s=0 before ray is imported; docs/SECURITY.md)", node_ip, LOOPBACK_ENV)
    return True


def probe_address(address: str) -> None:
    """One line (RuntimeError) when nothing accepts a TCP connection at the cluster's GCS address
    within CONNECT_TIMEOUT_S ("auto" and "local" are left to Ray)."""
    if address in ("auto", "local"):
        return
    hostport = address.split("://", 1)[-1].rstrip("/")
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit():
        raise RuntimeError(f"ray.address={address}: need host:port (the head's GCS address, e.g. 127.0.0.1:6379)")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as e:
        raise RuntimeError(f"ray.address={address}: no Ray cluster answers there ({e.strerror or e}); need a "
                           f"running head (`ray start --head`) at that address, or no ray.address for an "
                           f"embedded Ray") from None


def private_temp_dir(path: str) -> str:
    """Ray's temp root for an embedded Ray: ``<path>/t`` inside ``path`` made mode 0700 (Ray makes
    its own temp root and session directories world-writable, 0777: the 0700 parent keeps other
    users out). Ray's unix sockets live under it and a socket path has at most 107 bytes: for a
    ``path`` too long, a fresh 0700 directory in the system temp dir instead (it says so)."""
    path = os.path.abspath(os.path.expanduser(path))
    if len(path) > TEMP_DIR_MAX:
        short = tempfile.mkdtemp(prefix="cuzk-ray-")  # 0700, ours
        atexit.register(shutil.rmtree, short, ignore_errors=True)  # Ray's session files: this run's only
        log.warning("ray.temp_dir %s is too long for Ray's socket paths (> %d characters): using %s",
                    path, TEMP_DIR_MAX, short)
        path = short
    os.makedirs(path, mode=0o700, exist_ok=True)
    os.chmod(path, 0o700)
    return os.path.join(path, "t")


@ray.remote(num_cpus=1)
def synthesize_partition(spec: dict, proof_id: str, circuit_id: str, synth_fn=None, share=None, plan=None):
    """The partition's witness as an Arrow batch, with where, how long and on how many threads
    synthesis ran (as many as the CPUs Ray gave the task: worker.limit_synthesis_threads).
    ``share``: the partition's SplitShare of its proof's input (split_proof_inputs' output for
    this partition; Ray hands it over once it exists), put in the spec by circuits.with_share with
    ``plan`` (on a cluster: the circuit's synthesis plan, read from this node's object store)."""
    t0, w0 = time.perf_counter(), time.time()
    ctx = ray.get_runtime_context()
    threads = limit_synthesis_threads(ctx.get_assigned_resources().get("CPU", 1))
    witness = synthesize_witness(spec if share is None else with_share(spec, share.share, plan), synth_fn)
    extra = {"synthesis_node": ctx.get_node_id(),
             "synthesis_s": f"{time.perf_counter() - t0:.6f}", "synthesis_start": f"{w0:.6f}",
             "synthesis_pid": str(os.getpid()), "synthesis_threads": str(threads)}
    if share is not None and share.split_s is not None:
        extra["split_s"] = f"{share.split_s:.6f}"
    return to_record_batch(Partition(proof_id, spec["partition"], circuit_id, witness, extra))


@ray.remote(num_cpus=1)
def split_proof_inputs(spec: dict):
    """Each partition's share of the input a proof's spec names, one Ray object per partition
    (the task's num_returns): read once where the file is (circuits.split_inputs)."""
    t0 = time.perf_counter()
    shares = split_inputs(spec)
    seconds = time.perf_counter() - t0
    out = tuple(SplitShare(share, seconds if k == 0 else None) for k, share in enumerate(shares))
    return out if len(out) > 1 else out[0]


@ray.remote(num_cpus=0)
def run_beside(fn, args: tuple) -> SideOutcome:
    """``fn(*args)`` in a worker process (RayExecutor.beside); a user error comes back in the
    SideOutcome, not as a Ray task error (whose message is a remote traceback)."""
    return SideOutcome.of(fn, args)


class Beside:
    """A side task started by RayExecutor.beside: ``done()`` without waiting, ``result()`` (waits,
    with the GIL released: the caller's other threads run on)."""

    def __init__(self, ref):
        self.ref = ref

    def done(self) -> bool:
        ready, _ = ray.wait([self.ref], timeout=0)
        return bool(ready)

    def result(self):
        """fn's value, or the user error it raised; a lost worker raises Ray's error."""
        return ray.get(self.ref).result()


class RayExecutor:
    """The prover pool: prover actors placed on the cluster (one per GPU, or one CPU prover per
    node), serving every key added to it. A key is put in the object store once (or mapped from
    its bundle on one node), loaded on a prover by ``add_key(warm=True)`` or by its first partition
    there, and dropped by ``remove_key``; a partition goes to the least-loaded prover that holds its
    key, else to the least-loaded one (which loads it; on a full device it evicts its least
    recently used idle key first: actors.ProverActor)."""

    def __init__(self, settings):
        self.settings = settings
        self.metrics = RayMetrics()
        self.keys: dict[str, KeyRef] = {}  # the keys added (held: a restarted actor fetches them again)
        self._tag = f"{os.getpid()}-{id(self):x}"
        self.provers, self.prover_info = start_provers(settings, tag=self._tag)
        self.load = [0] * len(self.provers)
        self.held: list[dict[str, int]] = [{} for _ in self.provers]  # per prover: key id -> bytes it holds
        self.vram: dict[int, int] = {}  # per GPU prover: device bytes in use after its last partition
        self._in_flight: dict = {}  # ObjectRef of the proof -> (WorkItem, ObjectRef of its synthesis)
        self.down: dict[int, _Probe] = {}  # provers restarting (or unreachable): no work until they answer
        self.dead: dict[int, str] = {}  # provers given up: why
        self._state_api: bool | None = None  # whether ray.util.state answers here (it needs the dashboard)
        self.replaced = 0  # CPU provers started on a new node in place of one given up
        self._synth_watch: set = set()  # synthesis refs not seen finished yet (waited on with the proofs)
        self._last_synth = time.monotonic()  # when a synthesis task last finished (progress too)
        self._next_replace = 0.0
        self._node = ray.get_runtime_context().get_node_id()  # the driver's
        self._synth_pids: set[tuple[str, int]] = set()  # (node, pid) of workers that ran our synthesis
        self._samplers: dict[str, list] = {}  # node -> [NodeSampler actor, its sample() in flight or None]
        # per proof whose input is split (circuit.splits_inputs): its shares' refs, and the
        # partitions submitted from them; dropped once every partition has been (a retry splits again)
        self._shares: OrderedDict[str, tuple[list, set[int]]] = OrderedDict()
        # a cluster (ray.address): split inputs' synthesis is spread, their plans in the object
        # store; an embedded Ray is one node: pinned there, each worker maps the plan from disk
        self._cluster = not embedded(settings.ray)
        self._plans: dict[str, object] = {}  # key id -> ObjectRef of its synthesis plan (None: it has none)
        # the service loads keys in a thread of its own while its loop submits and waits: the
        # pool's state (held keys, down provers, work in flight) changes under this lock
        self._lock = threading.RLock()

    def add_key(self, key_id: str, pk, cs, warm: bool = True, concurrency: int = 0) -> KeyRef:
        """Make a key available to the pool (and, with ``warm``, resident on every prover that is
        up, kernels warm, before this returns: RuntimeError in one line when it cannot load). A
        prover killed while it loads the key is restarted and loads it again (it is down until
        then, as when it dies mid-prove). ``concurrency``: at most this many of its partitions on
        one prover at once (0: the prover's threads)."""
        ref = KeyRef(key_id, key_source(pk, cs), int(pk.nbytes + (cs.nbytes if cs is not None else 0)),
                     concurrency)
        self.keys[key_id] = ref
        if warm:
            try:
                self._warm(ref)
            except BaseException:  # the provers that did load it give its memory back
                self.remove_key(key_id)
                raise
        return ref

    def remove_key(self, key_id: str) -> None:
        """Drop a key from every prover that holds it (none of its partitions may be in flight)
        and from the pool (its object-store copy goes when nothing refers to it)."""
        with self._lock:
            self.keys.pop(key_id, None)
            self._plans.pop(key_id, None)
            for i, held in enumerate(self.held):
                if held.pop(key_id, None) is not None and i not in self.dead:
                    self.provers[i].evict.remote([key_id])  # (in order after its earlier calls; not waited for)

    def device_rooms(self) -> list[DeviceRoom]:
        """The reading of each GPU prover that is up and answers within READY_TIMEOUT_S ([] for
        CPU provers): a call waits for one of the prover's threads (a partition, at most)."""
        if self.settings.prover_placement != "gpu":
            return []
        with self._lock:
            refs = [self.provers[i].device_room.remote() for i in self._up()]
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=READY_TIMEOUT_S) if refs else ([], [])
        rooms = []
        for ref in ready:
            try:
                rooms.append(ray.get(ref))
            except ray.exceptions.RayError as e:  # lost meanwhile: its restart is the probe's business
                log.warning("a prover's device reading failed: %s", _short(e))
        return [r for r in rooms if r is not None]

    def cancel(self, proof_ids) -> None:
        """Cancel the synthesis of these proofs' partitions in flight (the watchdog found them stuck,
        e.g. waiting for a CPU): their prove calls then come back failed, and their slots free."""
        ids = set(proof_ids)
        with self._lock:
            stuck = list(self._in_flight.values())
        for work, batch in stuck:
            if work.proof_id in ids:
                ray.cancel(batch, force=False)

    def _warm(self, ref: KeyRef) -> None:
        """ready(key) on every prover that is up, together; a prover lost meanwhile goes down (its
        probe loads the key once it is back), a load that fails raises (one line)."""
        calls = {}
        with self._lock:
            for i in self._up():
                self.held[i][ref.key_id] = ref.nbytes
                calls[self.provers[i].ready.remote([ref])] = i
        kind = "GpuProver" if self.settings.prover_placement == "gpu" else "CpuProver"
        pending, end = list(calls), time.monotonic() + READY_TIMEOUT_S
        while pending:
            ready, pending = ray.wait(pending, num_returns=1, timeout=max(0.0, end - time.monotonic()))
            if not ready:
                raise RuntimeError(f"{kind}: key {ref.key_id} not loaded after {READY_TIMEOUT_S} s (is the "
                                   f"cluster short of {'GPUs' if self.settings.backend == 'cuda' else 'CPUs'}?)")
            i = calls[ready[0]]
            try:
                info = ray.get(ready[0])
                with self._lock:
                    self.prover_info[i] = info
            except ray.exceptions.OutOfMemoryError as e:  # Ray's memory monitor killed it while it loaded
                first = next((ln.strip() for ln in str(e).splitlines() if "Memory on the node" in ln), _short(e))
                raise RuntimeError(f"{kind} could not start: host memory ran out while it loaded the key "
                                   f"({first[:240]})") from None
            except ray.exceptions.RayActorError as e:
                if _creation_failed(e):
                    raise RuntimeError(f"{kind} could not start: {_start_error(e)}") from None
                with self._lock:
                    self._prover_down(i)  # killed or lost while loading: restarted, its probe loads the key
                log.warning("prover %d lost while it loaded key %s (%s): waiting for its restart", i, ref.key_id,
                            _short(e))
            except ray.exceptions.RayTaskError as e:  # e.g. the key does not fit in VRAM
                with self._lock:
                    self.held[i].pop(ref.key_id, None)
                raise RuntimeError(f"{kind} could not start: {_start_error(e)}") from None

    def pw(self, requested: int | None) -> int:
        """``requested``, or by default 2 for CPU provers and pw_per_gpu x GPUs for GPU provers
        (enough per GPU to keep synthesis ahead of the device)."""
        if requested is not None:
            return requested
        return expected_pw(self.settings, int(ray.cluster_resources().get("GPU", 0)))

    def submit(self, work: WorkItem, spec: dict) -> None:
        """Synthesis task, then the least-loaded prover that holds the partition's key on its
        output (the least-loaded prover when none that is up does: it loads the key first)."""
        with self._lock:
            self._submit(work, spec)

    def _submit(self, work: WorkItem, spec: dict) -> None:
        key = work.proof.key
        ref = self.keys[key.key_id]
        split = key.circuit.splits_inputs and work.proof.synth_fn is None
        share = self._share(work, spec) if split else None
        plan = self._plan(key) if split and self._cluster else None
        # input files (e.g. .wtns) live where the driver runs: read them there; else spread. On a
        # cluster a split input's synthesis reads no file: its share and the plan come as objects
        pinned = key.circuit.local_files and not (split and self._cluster)
        strategy = NodeAffinitySchedulingStrategy(self._node, soft=False) if pinned else "SPREAD"
        batch = synthesize_partition.options(
            name=f"synth:{work.proof_id}:{work.partition}", memory=key.part_bytes,
            scheduling_strategy=strategy).remote(spec, work.proof_id, key.circuit.circuit_id, work.proof.synth_fn,
                                                 share, plan)
        up = self._up()
        holding = [i for i in up if ref.key_id in self.held[i]] or up
        work.prover = holding[int(np.argmin([self.load[i] for i in holding]))]
        self.load[work.prover] += 1
        self.held[work.prover][ref.key_id] = ref.nbytes
        prove = self.provers[work.prover].prove.options(name=f"prove:{work.proof_id}:{work.partition}")
        self._in_flight[prove.remote(batch, ref)] = (work, batch)
        if not self._synth_watch:  # the synthesis clock starts with the first task of a quiet spell
            self._last_synth = time.monotonic()
        self._synth_watch.add(batch)

    def _plan(self, key):
        """The ref of the key's synthesis plan (circuit.synthesis_plan: Filecoin's witness plan, 0.67
        GB at 32 GiB), put in the object store on first use: on a cluster every node's synthesis
        tasks read it from there (Ray copies it to a node once), not from a partition cache that
        only the driver's node has. None where the circuit has none (the stand-in)."""
        if key.key_id not in self._plans:
            plan = key.circuit.synthesis_plan()
            self._plans[key.key_id] = None if plan is None else ray.put(plan)
        return self._plans[key.key_id]

    def _share(self, work: WorkItem, spec: dict):
        """The ref of this partition's share of its proof's input: the proof's first partition
        submitted starts one split task on the driver's node (where the input file is), the
        others reuse its outputs. Shares are kept for SHARES_KEPT proofs at most (a proof the
        scheduler submits only some partitions of never drops its own)."""
        entry = self._shares.get(work.proof_id)
        if entry is None:
            n = work.proof.key.circuit.partitions
            refs = split_proof_inputs.options(
                name=f"split:{work.proof_id}", num_returns=n,
                scheduling_strategy=NodeAffinitySchedulingStrategy(self._node, soft=False)).remote(spec)
            entry = self._shares[work.proof_id] = ([refs] if n == 1 else list(refs), set())
            while len(self._shares) > SHARES_KEPT:
                self._shares.popitem(last=False)
        refs, submitted = entry
        submitted.add(work.partition)
        if len(submitted) == len(refs):  # each synthesis task holds its own share's ref until it runs
            del self._shares[work.proof_id]
        return refs[work.partition]

    def beside(self, fn, *args, name: str) -> Beside:
        """``fn(*args)`` in a task of its own on the driver's node (where the files are), taking no
        CPU from the pool's accounting (seconds of work, not a partition): for the engine's owner
        to keep its own threads free of work that holds the GIL for long, such as a 32 GiB C1's
        json.loads (~1 s at once) in the service's engine actor, where it froze the loop and every
        request meanwhile. ``name``: the task's name (the dashboard, ray.util.state)."""
        return Beside(run_beside.options(
            name=name, scheduling_strategy=NodeAffinitySchedulingStrategy(self._node, soft=False)).remote(fn, args))

    def can_submit(self) -> bool:
        """A prover actor is up (not restarting, not dead)."""
        return bool(self._up())

    def _up(self) -> list[int]:
        return [i for i in range(len(self.provers)) if i not in self.down and i not in self.dead]

    def next_completion(self, timeout: float | None = None) -> Completion | None:
        """The first proof to come back, or why its attempt failed (actor died, task raised).
        Down provers' probes are waited on too (a prover that answers is up again)."""
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._lock:
                self._tend_probes()
                probes = {p.ref: i for i, p in self.down.items() if p.ref is not None}
                refs = [*self._in_flight, *probes, *self._synth_watch]
                left = None if end is None else max(0.0, end - time.monotonic())
                if self.down:  # look at the probes (due, overdue) at least every PROBE_S
                    left = PROBE_S if left is None else min(left, PROBE_S)
            if refs:
                # fetch_local=False: a finished synthesis batch stays where it is (the prover reads it)
                ready, _ = ray.wait(refs, num_returns=1, timeout=left, fetch_local=False)
                with self._lock:
                    if ready and ready[0] in self._synth_watch:  # a synthesis finished: progress, not a proof
                        self._synth_watch.discard(ready[0])
                        self._last_synth = time.monotonic()
                    elif ready and ready[0] in probes and probes[ready[0]] in self.down:
                        self._probe_answered(probes[ready[0]], ready[0])
                    elif ready and ready[0] in self._in_flight:
                        return self._completion(ready[0])
            elif self.down:
                time.sleep(left)
            else:
                if left:
                    time.sleep(left)
                return None
            if end is not None and time.monotonic() >= end:
                return None

    def _completion(self, ref) -> Completion:
        work, batch = self._in_flight.pop(ref)
        self._synth_watch.discard(batch)
        self.load[work.prover] -= 1
        try:
            out = ray.get(ref)
            if out.vram_peak is not None:
                self.vram[work.prover] = int(out.vram_peak)
            if out.synthesis_pid is not None and out.synthesis_node:
                self._synth_pids.add((out.synthesis_node, out.synthesis_pid))
            return Completion(work, out)
        except DOWN as e:  # the actor died, is restarting, or its node is gone: not the partition's fault
            self._prover_down(work.prover)
            return Completion(work, error=_short(e), interrupted=True)
        except LOST as e:  # a node went away with the objects on it
            return Completion(work, error=_short(e), interrupted=True)
        except (ray.exceptions.RayError, ValueError) as e:  # the task raised
            return Completion(work, error=_short(e))

    def _prover_down(self, i: int) -> None:
        if i not in self.down and i not in self.dead:
            now = time.monotonic()
            self.down[i] = _Probe(None, now, now)
            log.warning("prover %d is down (restarting or lost): no work for it until it answers", i)

    def _tend_probes(self) -> None:
        """Send the probes that are due; give up provers down longer than restart_wait_s; look
        for a node to replace a given-up CPU prover on (every REPLACE_S)."""
        now = time.monotonic()
        if self.dead and self.settings.prover_placement == "cpu" and now >= self._next_replace:
            self._next_replace = now + REPLACE_S
            self._replace_dead()
        for i, p in list(self.down.items()):
            if p.limit is not None and now - p.since > p.limit:
                self._give_up(i, f"a replacement not ready after {p.limit:g} s")
            elif p.limit is None and now - p.since > self.settings.restart_wait_s:
                self._give_up(i, f"not back after restart_wait_s={self.settings.restart_wait_s:g} s")
            elif p.ref is None and now >= p.due:  # with the key: a restarted actor loads it to answer
                p.ref = self.provers[i].ready.remote([self.keys[k] for k in self.held[i] if k in self.keys])

    def _probe_answered(self, i: int, ref) -> None:
        p = self.down[i]
        try:
            ray.get(ref)
        except ray.exceptions.ActorUnavailableError:  # still restarting: ask again
            p.ref, p.due = None, time.monotonic() + PROBE_S
            return
        except (ray.exceptions.RayError, ValueError) as e:  # dead for good (restarts used up, node gone)
            self._give_up(i, _short(e))
            return
        del self.down[i]
        self.prover_info[i] = ray.get(ref)  # where it runs now (a replacement: its new node)
        log.warning("prover %d is back after %.1f s", i, time.monotonic() - p.since)

    def _replace_dead(self) -> None:
        """A CPU prover given up because its node is gone is started again on a node that has none
        of ours and keeps a CPU for synthesis besides it (a node that joined since): hard affinity
        again. It is down (probed) until its key is loaded. A prover given up on a node that is
        still alive (restarts used up) is not replaced; neither are more than one round of
        replacements per prover and restart (they would hide a prover that cannot start from the
        watchdog)."""
        nodes = ray.nodes()
        alive = {n["NodeID"] for n in nodes if n["Alive"]}
        lost = [i for i in sorted(self.dead) if self.prover_info[i]["node_id"] not in alive]
        hosts = {self.prover_info[i]["node_id"] for i in range(len(self.provers)) if i not in self.dead}
        free = ray.available_resources().get("CPU", 0)
        for n in nodes:
            if not lost or self.replaced >= len(self.provers) * (self.settings.max_restarts + 1):
                return
            cpus = int(n["Resources"].get("CPU", 0))
            if not n["Alive"] or n["NodeID"] in hosts or cpus < 2 or free < 2:
                continue
            i = lost.pop(0)
            self.replaced += 1
            args = self.settings.backend, self.settings.cpu_threads  # the key comes with the probe's ready()
            self.provers[i] = ray.remote(CpuProver).options(
                name=f"CpuProver-{i}-r{self.replaced}-{self._tag}", max_restarts=self.settings.max_restarts,
                max_task_retries=0, num_cpus=1,
                scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)).remote(*args)
            self.prover_info[i] = dict(self.prover_info[i], node_id=n["NodeID"])
            log.warning("prover %d: a replacement starts on node %s (%d CPUs)", i, n["NodeID"][:12], cpus)
            del self.dead[i]
            now = time.monotonic()
            self.down[i] = _Probe(None, now, now, limit=READY_TIMEOUT_S)  # it loads the key: as long as at the start
            hosts.add(n["NodeID"])
            free -= 1

    def _give_up(self, i: int, why: str) -> None:
        self.down.pop(i, None)
        self.dead[i] = why
        log.warning("prover %d given up: %s", i, why)
        try:  # so a late restart does not take a CPU (or GPU) the others need
            ray.kill(self.provers[i], no_restart=True)
        except Exception:  # noqa: BLE001  already gone
            pass

    def blocked(self) -> str | None:
        """Why the submitted work cannot run (one line, need vs have), or None when it may just be
        slow: no prover actor left; synthesis tasks that wait for a CPU or memory no node has free
        while none finished for watchdog_s (confirmed by ray.util.state where the dashboard runs,
        else judged from the free resources: without the dashboard, one synthesis task running
        longer than watchdog_s on a cluster with no CPU free is taken for a waiting one)."""
        n = len(self.provers)
        if len(self.dead) == n:
            kind = "GPU" if self.settings.prover_placement == "gpu" else "CPU"
            first = next(iter(self.dead.values()))
            return (f"no prover actor left: {n} of {n} are dead ({first}); need at least one prover "
                    f"(one {kind} each) and have 0")
        if not self._up():
            return None  # restarting: waited for, up to restart_wait_s
        pending = list(self._synth_watch)
        if not pending or time.monotonic() - self._last_synth < self.settings.watchdog_s:
            return None  # synthesis done, or still finishing tasks: slow, not stuck
        states = self._synthesis_states()
        if states and not any(st.startswith("PENDING") for st in states):
            return None  # they run (or just finished): slow, not stuck
        free, total = ray.available_resources(), ray.cluster_resources()
        what = f"{len(pending)} synthesis task(s) ({', '.join(sorted(set(states)))})" if states else \
            f"{len(pending)} synthesis task(s)"
        held = (f"; the {n - len(self.dead)} CPU prover actor(s) hold one each"
                if self.settings.prover_placement == "cpu" else "")
        if free.get("CPU", 0) < 1:
            return (f"{what} wait for 1 CPU each and no node has one free: CPU {free.get('CPU', 0):g} of "
                    f"{total.get('CPU', 0):g} available{held} (add a node or CPUs, or use fewer provers)")
        need = max((w.proof.key.part_bytes for w, _b in self._in_flight.values()), default=0)
        if free.get("memory", 0) < need:
            return (f"{what} wait for memory={need} B each: {free.get('memory', 0):.0f} B of "
                    f"{total.get('memory', 0):.0f} B available")
        return None

    def _synthesis_states(self) -> list[str] | None:
        """The states of this executor's unfinished synthesis tasks from ray.util.state (None when
        the state API does not answer: it needs the dashboard, which the job leaves off by default)."""
        if self._state_api is False:
            return None
        try:
            from ray.util.state import list_tasks

            names = {f"synth:{w.proof_id}:{w.partition}" for w, _b in self._in_flight.values()}
            # this session's GCS (without an address the state API may read /tmp/ray's latest session)
            tasks = list_tasks(address=ray.get_runtime_context().gcs_address, filters=[("state", "!=", "FINISHED")],
                               limit=10000, timeout=10, raise_on_missing_output=False)
        except Exception:  # noqa: BLE001  no dashboard (RpcError, ConnectionError ...): judge from resources
            self._state_api = False
            return None
        self._state_api = True
        return [t.state for t in tasks if t.name in names and t.state not in ("FINISHED", "FAILED")]

    def sample_memory(self) -> dict[str, dict[int, ProcessMemory]]:
        """{node: {pid: ProcessMemory}} of our processes (engines.memory): on the driver's node this process,
        the raylet and workers below it (an embedded Ray: memory.ray_node_processes) and the prover
        actors and synthesis workers there, read here; on another node its prover actors and the workers that
        ran our synthesis, read by a NodeSampler actor there (num_cpus=0; its answer comes with the
        next sample: a node whose sampler has not answered yet is left out of this one). A
        synthesis worker is known from its first partition's return on: that first task's memory
        is not seen."""
        by_node: dict[str, set[int]] = {}
        for i, info in enumerate(list(self.prover_info)):
            if i not in self.dead and info.get("pid") and info.get("node_id"):
                by_node.setdefault(info["node_id"], set()).add(int(info["pid"]))
        for node, pid in list(self._synth_pids):
            by_node.setdefault(node, set()).add(pid)
        out = {self._node: processes_memory(set(ray_node_processes(os.getpid())) | by_node.pop(self._node, set()))}
        for node, pids in by_node.items():
            got = self._remote_sample(node, sorted(pids))
            if got is not None:
                out[node] = got
        return out

    def _remote_sample(self, node: str, pids: list[int]) -> dict[int, ProcessMemory] | None:
        """The last answer of ``node``'s sampler (None while none came), and the next question."""
        entry = self._samplers.get(node)
        if entry is None:
            actor = ray.remote(NodeSampler).options(
                name=f"NodeSampler-{node[:12]}-{self._tag}", num_cpus=0, max_restarts=0,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)).remote()
            entry = self._samplers[node] = [actor, None]
        got = None
        if entry[1] is not None:
            ready, _ = ray.wait([entry[1]], timeout=0)
            if not ready:
                return None
            try:
                got = {int(k): v for k, v in ray.get(entry[1]).items()}
            except ray.exceptions.RayError:  # the node went away: its workers with it
                self._samplers.pop(node, None)
                self._synth_pids = {(n, p) for n, p in self._synth_pids if n != node}
                return None
        entry[1] = entry[0].sample.remote(pids)
        return got

    def shutdown(self) -> None:
        """Kill the prover actors (no restart) and the memory samplers."""
        for a in self.provers:
            ray.kill(a, no_restart=True)
        for actor, _ in list(self._samplers.values()):
            ray.kill(actor, no_restart=True)


class _Probe:
    """A down prover's ready() probe: the call in flight (None: next one due at ``due``), since when
    down, and how long it may stay down (None: restart_wait_s)."""

    def __init__(self, ref, since: float, due: float, limit: float | None = None):
        self.ref, self.since, self.due, self.limit = ref, since, due, limit


def key_source(pk, cs):
    """What the prover actors get for the key: on one node, a key memory-mapped from a bundle is
    passed as its path (BundleKey: the actors map the same file, one page-cache copy in all, none
    in the object store: at 2^26 a second ~50 GiB copy ran the H200 box out of memory); else the
    key and matrices are put in the object store once (each node fetches one copy), their refs
    wrapped in a StoreKey."""
    path = pk.meta.get("bundle_path")
    one_node = len([n for n in ray.nodes() if n["Alive"]]) == 1
    if path and cs is not None and one_node and os.path.isfile(os.path.join(path, "manifest.json")):
        return BundleKey(path)
    return StoreKey(ray.put(pk), ray.put(cs))  # refs inside a value: see StoreKey


def start_provers(settings, tag: str) -> tuple[list, list[dict]]:
    """Create the prover actors (no key yet: RayExecutor.add_key loads keys) and wait until each
    answers: (actor handles, their ready() info). An actor killed meanwhile is asked again once
    Ray restarted it (up to restart_wait_s); one clear RuntimeError when they cannot start."""
    cls, placements = _placements(settings)
    actors = [ray.remote(cls).options(name=f"{cls.__name__}-{i}-{tag}", **p).remote(
        settings.backend, settings.cpu_threads) for i, p in enumerate(placements)]
    info: list[dict] = [{} for _ in actors]
    calls = {a.ready.remote(): i for i, a in enumerate(actors)}
    start = time.monotonic()
    end = start + READY_TIMEOUT_S
    try:
        while calls:
            ready, _ = ray.wait(list(calls), num_returns=1, timeout=max(0.0, end - time.monotonic()))
            if not ready:
                raise RuntimeError(f"{cls.__name__}: actors not ready after {READY_TIMEOUT_S} s (is the cluster "
                                   f"short of {'GPUs' if settings.backend == 'cuda' else 'CPUs'}?)")
            i = calls.pop(ready[0])
            try:
                info[i] = ray.get(ready[0])
            except ray.exceptions.RayActorError as e:
                if _creation_failed(e) or time.monotonic() - start > settings.restart_wait_s:
                    raise RuntimeError(f"{cls.__name__} could not start: {_start_error(e)}") from None
                time.sleep(PROBE_S)  # killed or lost while starting: Ray restarts it (max_restarts)
                calls[actors[i].ready.remote()] = i
            except ray.exceptions.RayTaskError as e:
                raise RuntimeError(f"{cls.__name__} could not start: {_start_error(e)}") from None
    except BaseException:
        _kill(actors)
        raise
    return actors, info


def _creation_failed(e: BaseException) -> bool:
    """Whether a RayActorError says the actor's constructor raised (it will not come back), not
    that its process was killed or lost (it restarts)."""
    return "creation task" in str(e) and "error raised in" in str(e)


def _kill(actors) -> None:
    for a in actors:
        ray.kill(a, no_restart=True)


def _placements(settings) -> tuple[type, list[dict]]:
    """The prover class and each actor's options: GPU provers one per GPU x
    gpu_workers_per_device (num_cpus=0); CPU provers one per node, round-robin beyond."""
    opts = {"max_restarts": settings.max_restarts, "max_task_retries": 0}  # the scheduler re-runs partitions
    if settings.prover_placement == "gpu":
        n_gpus = _gpus_for(settings.backend)
        gpw = max(1, int(settings.gpu_workers_per_device))
        # max_concurrency: partitions on threads of one actor, so one's upload, host work and
        # assembly overlap another's kernels (the backend runs one partition's kernels at a time).
        one = dict(opts, num_gpus=1.0 / gpw, num_cpus=0, max_concurrency=settings.gpu_concurrency)
        return GpuProver, [one] * (settings.provers or n_gpus * gpw)
    nodes = [n for n in ray.nodes() if n["Alive"] and n["Resources"].get("CPU", 0) >= 1]
    count = settings.provers or len(nodes)
    cpus = sum(int(n["Resources"].get("CPU", 0)) for n in nodes)  # whole CPUs per node: what a prover can hold
    if cpus < count + 1:  # each CPU prover holds a CPU; synthesis tasks need one more, or wait forever
        raise RuntimeError(f"ray: the cluster has {cpus} CPU(s) and the {count} CPU prover(s) take {count}; "
                           f"synthesis needs at least one more (ray.num_cpus>={count + 1}, or fewer provers)")
    # Hard affinity: a restarted CPU prover comes back on its own node or not at all; with a soft
    # one, the prover of a lost node took the head's last CPU and synthesis waited forever (issue 15).
    room = {n["NodeID"]: int(n["Resources"]["CPU"]) for n in nodes}
    slots: list[str] = []  # round-robin over the nodes, never more provers on a node than its CPUs
    while len(slots) < count:
        for n in nodes:
            if room[n["NodeID"]] > 0 and len(slots) < count:
                slots.append(n["NodeID"])
                room[n["NodeID"]] -= 1
    return CpuProver, [dict(opts, num_cpus=1, scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False))
                       for node in slots]


def _gpus_for(backend: str) -> int:
    """The cluster's GPU count, or one line saying why GPU provers cannot run."""
    n_gpus = int(ray.cluster_resources().get("GPU", 0))
    if backend == "cuda" and cuda_backend_class() is None:
        raise RuntimeError("backend=cuda: the CUDA proving backend is not available in this build; "
                           "use backend=cpu (or backend=auto)")
    if n_gpus == 0:
        raise RuntimeError(f"backend={backend}: the Ray cluster has no GPUs; use backend=cpu or add GPU nodes")
    return n_gpus


def _start_error(e: BaseException) -> str:
    """The error an actor's constructor raised (MemoryError: GPU memory ...), from Ray's report."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    for ln in reversed(lines):  # the remote traceback ends with "<Type>: <message>"
        head = ln.split(":", 1)[0]
        if head.endswith(("Error", "Exception")) and " " not in head:
            return ln[:300]
    return _short(e)


def _short(e: BaseException) -> str:
    """The last meaningful line of a (possibly remote) exception."""
    cause = getattr(e, "cause", None)
    if cause is not None and not isinstance(cause, ray.exceptions.RayError):
        return f"{type(cause).__name__}: {cause}"
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return f"{type(e).__name__}: {lines[0] if lines else ''}"[:300]
