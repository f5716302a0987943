"""An engine = the scheduler + an executor (local or Ray), for one circuit and key; and
``open_engine``, the one wiring from settings to a running engine that every job uses.

``ProvingEngine`` (Ray) and ``LocalEngine`` (in-process) are the same Engine built from keyword
settings; ``Engine.run`` proves a batch and returns its BatchResult."""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import contextmanager, nullcontext

from .admission import (
    HostBudget,
    bounded_pw,
    check_budget,
    expected_pw,
    object_store_bytes,
    partition_host_bytes,
    vram_room,
)
from .memory import MemoryWatch, measurable
from .scheduler import Progress, Scheduler
from .settings import EngineSettings
from .types import BatchResult, KeyContext


class Engine:
    """Proves proofs as ``settings`` say (engine=ray|local): a prover pool (the executor) and the
    one scheduler. Made with a key (``pk``, ``cs``, ``circuit``: the batch job's, the scheduler's
    default), or without one and keys added and removed as they come (the service)."""

    DEFAULT_KEY = "key"

    def __init__(self, settings: EngineSettings, pk=None, cs=None, circuit=None, budget: HostBudget | None = None):
        """``budget``: the host budget to reserve partitions from (default a fresh one of
        ``settings.host_budget``)."""
        self.settings, self.circuit, self.pk = settings, circuit, pk
        self.backend = settings.backend
        self.budget = HostBudget(settings.host_budget) if budget is None else budget
        self.executor = _make_executor(settings)
        self.pw = self.executor.pw(settings.pw)
        self.memory = MemoryWatch(self.executor.sample_memory) if measurable() else None
        self.scheduler = Scheduler(self.executor, self.budget, self.pw, settings.max_attempts,
                                   watchdog_s=settings.watchdog_s, backoff_s=settings.retry_backoff_s,
                                   backoff_max_s=settings.retry_backoff_max_s, memory=self.memory)
        self.key: KeyContext | None = None
        self.part_bytes = 0
        try:
            if pk is not None:
                self.key = self.scheduler.default_key = self.add_key(self.DEFAULT_KEY, pk, cs, circuit)
                self.part_bytes = self.key.part_bytes
                self.pw = self.scheduler.pw = bounded_pw(self.pw, settings.host_budget, self.part_bytes)
        except BaseException:
            self.executor.shutdown()
            raise
        # host memory measured once the provers are up and warm (the first sample is the baseline)
        if self.memory is not None:
            self.memory.start(self.scheduler.load)

    def add_key(self, key_id: str, pk, cs, circuit, warm: bool = True, concurrency: int = 0) -> KeyContext:
        """Make a key available to the pool (resident on the provers with ``warm``); the context
        a proof of it is added to the scheduler with. Refused in one line when one partition of
        the circuit cannot fit the host budget, or the key cannot load. ``concurrency``: at most
        this many of its partitions on one GPU prover at once (0: settings.gpu_concurrency)."""
        part_bytes = partition_host_bytes(circuit, pk.domain_size, self.settings.backend)
        check_budget(self.settings.host_budget, part_bytes, circuit.circuit_id)
        self.executor.add_key(key_id, pk, cs, warm=warm, concurrency=concurrency)
        if self.memory is not None and self.memory.running and self.scheduler.idle:
            self.memory.sample()  # idle: the baseline takes the key in (it is not partitions' work)
        return KeyContext(key_id, circuit, pk.vk, part_bytes)

    def remove_key(self, key_id: str) -> None:
        """Drop a key from the pool (none of its proofs may be in the scheduler)."""
        self.executor.remove_key(key_id)

    def beside(self, fn, *args, name: str):
        """``fn(*args)`` off the caller's threads where the executor can (Ray: a task on the
        driver's node; local: now); an object with ``done()`` and ``result()`` (the value, or the
        user error fn raised)."""
        return self.executor.beside(fn, *args, name=name)

    def device_room(self) -> int | None:
        """The VRAM a key may count on in this pool (admission.vram_room of the GPU provers'
        readings: a key held alone on the tightest device); None with CPU provers."""
        return vram_room(self.executor.device_rooms())

    @property
    def provers(self) -> list:
        return self.executor.provers

    @property
    def prover_info(self) -> list[dict]:
        return self.executor.prover_info

    def run(self, proofs: int | Sequence[int], seed: int = 0, progress: Progress | None = None,
            synth_fn=None, names: Sequence[str] | None = None) -> BatchResult:
        """Prove ``proofs`` proofs (a count: proofs 0..n-1; or the proof indices to prove, e.g. the
        ones a resumed run still lacks) of circuit.partitions partitions each; every partition verified.

        ``progress(result, done, total)`` is called after each verified partition (the batch job
        writes its files there, as it verifies).
        ``synth_fn`` replaces the circuit's synthesis (tests use it to inject failures).
        ``names``: the proof id of each proof index (None: proof-000, ...; circom proofs are named
        after their witness files: circuits.witness_names)."""
        t0 = time.perf_counter()
        if self.memory is not None and self.scheduler.idle:  # idle: the baseline absorbs the last batch's leftovers
            self.memory.sample()
        self.scheduler.reset_peak()
        indices = range(proofs) if isinstance(proofs, int) else list(proofs)
        if len(set(indices)) != len(indices):  # checked before any is added: a refusal leaves no state behind
            raise ValueError(f"proofs={list(indices)}: each proof index at most once")
        ids = [self.scheduler.add(p, seed, synth_fn=synth_fn, proof_id=names[p] if names else None) for p in indices]
        try:
            self.scheduler.run_until(ids, progress)
            if self.memory is not None:  # a batch shorter than the sampling period still gets a sample
                self.memory.sample(rebase=False)
            return self.scheduler.batch(ids, time.perf_counter() - t0, self.prover_info)
        finally:  # also after an exception: the next run may use the same batch ids
            for pid in ids:
                self.scheduler.cancel(pid)  # (a finished proof keeps its state)
                self.scheduler.forget(pid)

    def shutdown(self) -> None:
        """Stop the memory watch and the provers."""
        if self.memory is not None:
            self.memory.stop()
        self.executor.shutdown()


class ProvingEngine(Engine):
    """The Ray engine from keyword settings (see EngineSettings; ``threads`` is cpu_threads)."""

    def __init__(self, pk, cs, circuit, backend: str = "auto", pw: int | None = 2, threads: int = 2, **settings):
        super().__init__(EngineSettings(engine="ray", backend=backend, pw=pw, cpu_threads=threads, **settings),
                         pk, cs, circuit)


class LocalEngine(Engine):
    """The in-process engine from keyword settings (no Ray; one partition at a time)."""

    def __init__(self, pk, cs, circuit, backend: str = "auto", threads: int = 2, **settings):
        super().__init__(EngineSettings(engine="local", backend=backend, cpu_threads=threads, **settings),
                         pk, cs, circuit)


def _make_executor(settings: EngineSettings):
    if settings.engine == "auto":
        raise ValueError("engine=auto must be resolved first (open_engine does, or engines.choice.choose_engine)")
    if settings.engine == "local":
        from .local import LocalExecutor

        return LocalExecutor(settings)
    from .ray_executor import RayExecutor

    return RayExecutor(settings)


@contextmanager
def open_engine(settings: EngineSettings, pk, cs, circuit, around=None):
    """A running Engine for the job, shut down on exit (engine=auto: engines.choice decides, for one
    proof of ``circuit``). For engine=ray, Ray is started or
    connected first (imported only then: a local run does not pay for it) and shut down on exit
    if this call started it. ``around``: a context manager entered once Ray is up and held over
    the engine's whole life (jobs/bench.py's memory sampler)."""
    started = False
    if settings.engine == "auto":  # jobs resolve it themselves (and say why); others get the same rule for one proof
        from .choice import choose_engine, resolved

        settings = resolved(settings, choose_engine(settings, circuit.partitions, pk.domain_size))
    if settings.engine == "ray":
        from ..backends import visible_gpus
        from ..signals import reinstall
        from .choice import cluster_address
        from .ray_env import prepare_env, restore_env
        from .ray_lines import quiet_ray_lines
        from .ray_setup import prepare_embedded_auth

        # both before ray is first imported (ray_executor imports it)
        prepare_embedded_auth(cluster_address(settings), bool(settings.ray.get("verbose")))
        added = prepare_env(settings.ray)
        from .ray_executor import init_ray

        # An embedded Ray is one node: a key mapped from a bundle reaches the actors as its path
        # (ray_executor.key_source), else one copy goes in the object store, sized for it.
        in_store = 0 if pk.meta.get("bundle_path") else pk.nbytes + cs.nbytes
        store = object_store_bytes(in_store, circuit.partition_batch_bytes(),
                                   expected_pw(settings, visible_gpus() if settings.backend == "cuda" else 0),
                                   settings.ray.get("object_store_memory"))
        try:
            started = init_ray(settings.ray, store)
        finally:
            restore_env(added)
        reinstall()  # ray.init replaced a job's SIGTERM handler with its own (a stack dump, exit 15)
        quiet_ray_lines(bool(settings.ray.get("verbose")))  # Ray's repeated disk warning, once in our words
    try:
        with around if around is not None else nullcontext():
            engine = Engine(settings, pk, cs, circuit)
            try:
                yield engine
            finally:
                engine.shutdown()
    finally:
        if started:
            import ray

            ray.shutdown()
