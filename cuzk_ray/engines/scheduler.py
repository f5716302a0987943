"""The one scheduling loop, over any executor (in-process or Ray):

    add(proof) -> its partitions join a heap: priority, then oldest proof, then lowest partition
    step():  submit from the heap while fewer than ``pw`` are in flight and the host budget holds
             one more partition (reserve its bytes; Ray does not enforce memory=) by the estimates
             and by what is measured (engines.memory: the work memory of the busiest node plus the
             next partition's estimate; never fewer than 1 in flight), then take one
             completion from the executor: release its bytes; a failed attempt is retried up to
             ``max_attempts``, after a backoff (1, 2, 4 ... s, capped), back in its place in the
             heap; an attempt its prover actor cut short (restarting, node lost) is resubmitted at
             once and not counted (the executor sends it to a prover that is up); an outcome is
             verified (pairing check, timed as "verify"); a partition that keeps failing, or whose
             proof does not verify, fails its proof while the others go on
    run_until(ids): step until those proofs are done, failed or cancelled (the batch job); a
             watchdog stops it (Stalled, one line) when nothing completed for ``watchdog_s`` and
             the executor names work that cannot run (a resource no node has free, no prover left)

The service drives the same object: ``add`` / ``cancel`` / ``status`` / ``results`` from its
request handlers, ``step(timeout)`` from one loop thread. Every method takes the scheduler's
lock except the executor's wait, so handlers answer while a partition is being proved.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

from ..errors import Stalled
from ..groth16.verifier import verify
from .admission import HostBudget, format_bytes
from .memory import MemoryWatch, ProcessMemory
from .metrics import Metrics
from .types import (
    BatchResult,
    Completion,
    KeyContext,
    PartitionResult,
    Priority,
    ProofId,
    ProofNotDone,
    ProofRequest,
    ProofState,
    ProofStatus,
    SchedulerStatus,
    WorkItem,
    batch_proof_id,
)

log = logging.getLogger(__name__)

Progress = Callable[[PartitionResult, int, int], None]  # (result, done, total)


class Executor(Protocol):
    """Runs work items (synthesis, then proving of one partition) and reports completions."""

    provers: list
    prover_info: list[dict]
    metrics: Metrics

    def pw(self, requested: int | None) -> int:
        """Partitions in flight it takes: ``requested``, or its default for None."""

    def add_key(self, key_id: str, pk, cs, warm: bool = True, concurrency: int = 0) -> object:
        """Make a key available to its provers (resident on them now with ``warm``; at most
        ``concurrency`` of its partitions on one prover at once, 0: no limit of its own)."""

    def remove_key(self, key_id: str) -> None:
        """Drop a key from its provers (none of its partitions in flight)."""

    def device_rooms(self) -> list:
        """Each GPU prover's reading of its device (types.DeviceRoom; [] for CPU provers)."""

    def submit(self, work: WorkItem, spec: dict) -> None:
        """Start ``work`` (``spec``: the circuit's synthesis spec for it); sets ``work.prover``."""

    def can_submit(self) -> bool:
        """A prover is up to take work now (False while every one is restarting or dead)."""

    def next_completion(self, timeout: float | None = None) -> Completion | None:
        """The next finished work item (None when none finished within ``timeout``; waits up to
        ``timeout`` also with nothing in flight, e.g. for a restarting prover)."""

    def sample_memory(self) -> dict[str, dict[int, ProcessMemory]]:
        """{node: {pid: ProcessMemory}} of our processes now (engines.memory; called from the memory watch's thread)."""

    def blocked(self) -> str | None:
        """Why submitted work cannot run, in one line naming the missing resource (need vs have),
        or None when nothing is known to be stuck (work may just be slow)."""

    def cancel(self, proof_ids: Iterable[ProofId]) -> None:
        """Stop these proofs' work in flight where it can (their completions come back failed)."""

    def shutdown(self) -> None:
        """Stop the provers."""


class _Proof:
    """A proof's mutable state (this module's own)."""

    def __init__(self, request: ProofRequest, partitions: int):
        self.request, self.partitions = request, partitions
        self.results: list[PartitionResult] = []
        self.state = ProofState.QUEUED
        self.error: str | None = None
        self.retries = 0

    @property
    def finished(self) -> bool:
        return self.state in (ProofState.DONE, ProofState.FAILED, ProofState.CANCELLED)

    def fail(self, why: str) -> None:
        if not self.finished:
            self.state, self.error = ProofState.FAILED, why


class Scheduler:
    """Proves partitions of proofs through ``executor``, each proof with its own key (a
    KeyContext: the service's pool serves several keys; ``default_key`` is the batch job's one)."""

    def __init__(self, executor: Executor, budget: HostBudget, pw: int, max_attempts: int,
                 watchdog_s: float = 60.0, backoff_s: float = 1.0, backoff_max_s: float = 30.0,
                 memory: MemoryWatch | None = None, default_key: KeyContext | None = None):
        self.executor, self.default_key = executor, default_key
        self.memory = memory  # measured work memory per node (None: the estimates only)
        self._submitted = 0  # submissions so far (the memory watch tells idle samples by it)
        self._said: set[str] = set()  # the budget's one-time lines said (held; a node where one partition is over)
        self.budget, self.pw, self.max_attempts = budget, pw, max_attempts
        self.watchdog_s, self.backoff_s, self.backoff_max_s = watchdog_s, backoff_s, backoff_max_s
        self.metrics = executor.metrics
        self.max_in_flight = 0  # the most partitions in flight at once since reset_peak()
        self._proofs: dict[ProofId, _Proof] = {}
        self._queue: list[WorkItem] = []
        self._delayed: list[tuple[float, int, WorkItem]] = []  # retries waiting out their backoff: (due, seq, item)
        self._tie = itertools.count()  # orders delayed retries due at the same time
        self._last_progress = time.monotonic()  # when a completion last came back (the watchdog's clock)
        self._in_flight = 0
        self._running: dict[ProofId, int] = {}  # partitions in flight per proof
        self._seq = 0
        self._lock = threading.RLock()

    # -- what the service and the jobs call ----------------------------------------------------

    def add(self, index: int, seed: int = 0, priority: Priority = Priority.NORMAL, proof_id: ProofId | None = None,
            synth_fn=None, partitions: Sequence[int] | None = None, key: KeyContext | None = None) -> ProofId:
        """Queue the index-th proof of the key's circuit (witness ``seed``; ``key``: default_key);
        returns its id (default "proof-<index>"). ``synth_fn(spec)`` replaces the circuit's synthesis
        for this proof. ``partitions``: which of its partitions to prove (the service: a proof's own
        partition count, less those already on disk after a restart); default all of the circuit's."""
        pid = batch_proof_id(index) if proof_id is None else proof_id
        key = key or self.default_key
        if key is None:
            raise ValueError(f"proof id {pid!r}: no key given and the scheduler has no default key")
        parts = list(range(key.circuit.partitions)) if partitions is None else sorted(set(partitions))
        if not parts:
            raise ValueError(f"proof id {pid!r}: no partition to prove")
        with self._lock:
            if pid in self._proofs:
                raise ValueError(f"proof id {pid!r} is already scheduled")
            request = ProofRequest(pid, index, seed, Priority(priority), self._seq, synth_fn, key)
            self._seq += 1
            self._proofs[pid] = _Proof(request, len(parts))
            for k in parts:
                heapq.heappush(self._queue, WorkItem(request, k))
        return pid

    def cancel(self, proof_id: ProofId) -> ProofState:
        """Cancel a queued or running proof: its queued partitions are dropped, the ones in flight
        are discarded when they come back. A finished proof keeps its state; returns the state."""
        with self._lock:
            proof = self._get(proof_id)
            if not proof.finished:
                proof.state = ProofState.CANCELLED
            return proof.state

    def status(self, proof_id: ProofId) -> ProofStatus:
        """Where one proof stands (KeyError for an unknown id)."""
        with self._lock:
            p = self._get(proof_id)
            timings: dict[str, float] = {}
            for r in p.results:
                for st, sec in r.times.items():
                    timings[st] = timings.get(st, 0.0) + sec
            return ProofStatus(proof_id, p.state, p.request.priority, p.partitions, len(p.results), timings, p.error)

    def summary(self) -> SchedulerStatus:
        """Proofs by state, queued partitions by priority, partitions in flight, host bytes in use."""
        with self._lock:
            by_state = {s.value: 0 for s in ProofState}
            for p in self._proofs.values():
                by_state[p.state.value] += 1
            queued = {pr.name.lower(): 0 for pr in Priority}
            for w in self._waiting():  # (retries in their backoff too; not a forgotten proof's leftovers)
                if self._runnable(w):
                    queued[w.proof.priority.name.lower()] += 1
            return SchedulerStatus(by_state, queued, self._in_flight, self.budget.reserved, self.budget.limit)

    def results(self, proof_id: ProofId) -> list[PartitionResult]:
        """The verified partitions of a done proof, in partition order (ProofNotDone otherwise)."""
        with self._lock:
            p = self._get(proof_id)
            if p.state is not ProofState.DONE:
                raise ProofNotDone(f"{proof_id} is {p.state.value}")
            return sorted(p.results, key=lambda r: r.partition)

    def forget(self, proof_id: ProofId) -> None:
        """Drop a finished proof's state and results (the service, once they are stored)."""
        with self._lock:
            if not self._get(proof_id).finished:
                raise ValueError(f"{proof_id} is not finished")
            del self._proofs[proof_id]

    @property
    def idle(self) -> bool:
        """Nothing queued that can run and nothing in flight."""
        with self._lock:
            return self._in_flight == 0 and not any(self._runnable(w) for w in self._waiting())

    def _waiting(self) -> Iterable[WorkItem]:
        yield from self._queue
        yield from (w for _due, _seq, w in self._delayed)

    def _runnable(self, work: WorkItem) -> bool:
        """A queued item whose proof is still known and not finished (cancelled or forgotten
        proofs leave their items in the heap until they are popped)."""
        proof = self._proofs.get(work.proof_id)
        return proof is not None and not proof.finished and proof.request is work.proof

    def step(self, timeout: float | None = None) -> PartitionResult | None:
        """Submit what fits, then settle one completion; returns the partition it verified, if any.
        With nothing in flight but retries in their backoff (or no prover up), it waits up to
        ``timeout`` (and no longer than the next retry is due)."""
        with self._lock:
            self._admit()
            if self._in_flight == 0:
                if self.idle:
                    return None
                wait = 1.0 if timeout is None else timeout
                if self._delayed:
                    wait = min(wait, max(0.0, self._delayed[0][0] - time.monotonic()))
                timeout = wait
        done = self.executor.next_completion(timeout)
        if done is None:
            return None
        with self._lock:
            self._last_progress = time.monotonic()
            return self._settle(done)

    def run_until(self, proof_ids: Iterable[ProofId], progress: Progress | None = None) -> None:
        """Step until every proof in ``proof_ids`` is done, failed or cancelled.
        ``progress(result, done, total)`` is called after each verified partition of them."""
        ids = set(proof_ids)
        total = sum(self._get(p).partitions for p in ids)
        n_done = 0
        self._last_progress = time.monotonic()
        tick = min(1.0, self.watchdog_s / 4)  # step returns this often, so the watchdog can look
        while not all(self._get(p).finished for p in ids) and not self.idle:
            res = self.step(tick)
            if res is not None and res.proof_id in ids:
                n_done += 1
                if progress:
                    progress(res, n_done, total)
            self._watch()
        while self._in_flight_of(ids):  # a failed proof's partitions still running: wait them out
            self.step(tick)
            self._watch()
        self.metrics.in_flight(self._in_flight)
        self.metrics.host_bytes(self.budget.reserved)

    def batch(self, proof_ids: Iterable[ProofId], wall_s: float, provers: list[dict]) -> BatchResult:
        """The BatchResult of finished proofs: the partitions of the done ones sorted by (proof,
        partition), why each failed one failed."""
        with self._lock:
            proofs = [self._get(p) for p in proof_ids]
            results = sorted((r for p in proofs if p.state is ProofState.DONE for r in p.results),
                             key=lambda r: (r.proof_id, r.partition))
            failed = {p.request.id: p.error for p in proofs if p.state is ProofState.FAILED}
            part_bytes = self.default_key.part_bytes if self.default_key else 0
            return BatchResult(results, failed, wall_s, provers, self.max_in_flight, part_bytes,
                               self.budget.limit, self.budget.peak, sum(p.retries for p in proofs),
                               {p.request.id: p.request.index for p in proofs},
                               self.memory.nodes() if self.memory is not None else [])

    def load(self) -> tuple[int, int]:
        """(partitions in flight, submissions so far): the memory watch's view of the scheduler."""
        with self._lock:
            return self._in_flight, self._submitted

    def stalled(self) -> str | None:
        """Why the work in flight cannot run, in one line, when nothing came back for watchdog_s
        and the executor names a reason (a resource no node has free, no prover left); None while
        work is only slow (the executor knows no reason) or nothing is in flight."""
        quiet = time.monotonic() - self._last_progress
        if quiet < self.watchdog_s or (self._in_flight == 0 and self.idle):
            return None
        why = self.executor.blocked()
        return None if why is None else f"no progress for {quiet:.0f} s (watchdog_s={self.watchdog_s:g}): {why}"

    def fail_stalled(self, why: str) -> list[ProofId]:
        """Fail the proofs that have partitions in flight (the work the watchdog found stuck) with
        ``why``; the watchdog's clock starts again. Returns their ids (the service's loop: the
        rest of the queue goes on)."""
        with self._lock:
            ids = [pid for pid, n in self._running.items() if n and pid in self._proofs]
            for pid in ids:
                self._proofs[pid].fail(why)
            self._last_progress = time.monotonic()
        self.executor.cancel(ids)  # their stuck tasks give their slots back
        return ids

    def _watch(self) -> None:
        """Raise Stalled when stalled() says why (the batch job: the run stops)."""
        why = self.stalled()
        if why is not None:
            raise Stalled(why)

    def _in_flight_of(self, ids: set) -> bool:
        with self._lock:
            return any(self._running.get(p, 0) for p in ids)

    def reset_peak(self) -> None:
        """Start counting max_in_flight, the reserved and measured peaks afresh (each batch reports its own)."""
        with self._lock:
            self.max_in_flight = self._in_flight
            self.budget.peak = self.budget.reserved
            self._said.clear()  # the budget's lines: once per batch
        if self.memory is not None:
            self.memory.reset_peaks()

    # -- the loop's two halves -----------------------------------------------------------------

    def _get(self, proof_id: ProofId) -> _Proof:
        try:
            return self._proofs[proof_id]
        except KeyError:
            raise KeyError(f"unknown proof id {proof_id!r}") from None

    def _admit(self) -> None:
        now = time.monotonic()
        while self._delayed and self._delayed[0][0] <= now:  # retries whose backoff is over
            heapq.heappush(self._queue, heapq.heappop(self._delayed)[2])
        self._say_over()
        while (self._queue and self._in_flight < self.pw and self.budget.fits(self._queue[0].proof.key.part_bytes)
               and self._measured_fits(self._queue[0].proof.key.part_bytes) and self.executor.can_submit()):
            work = heapq.heappop(self._queue)
            if not self._runnable(work):  # its proof finished, or was forgotten (its id may be a new proof's)
                continue
            proof = self._proofs[work.proof_id]
            try:
                spec = work.proof.key.circuit.synth_spec(work.proof.seed, work.proof.index, work.partition)
                self.executor.submit(work, spec)
            except Exception as e:  # noqa: BLE001  e.g. a synth_fn Ray cannot pickle: this proof fails
                proof.fail(f"partition {work.partition} could not be submitted: {type(e).__name__}: {e}")
                continue
            self.budget.reserve(work.proof.key.part_bytes)
            proof.state = ProofState.RUNNING
            self._in_flight += 1
            self._submitted += 1
            self._running[work.proof_id] = self._running.get(work.proof_id, 0) + 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
        self.metrics.in_flight(self._in_flight)
        self.metrics.host_bytes(self.budget.reserved)

    def _say_over(self) -> None:
        """One line per node the first time a sample taken with one partition in flight measures
        more work memory than the whole budget (the run goes on, one partition at a time: failing
        would throw away proofs the machine can make; the line says what to raise)."""
        limit = self.budget.limit
        if limit is None or self.memory is None:
            return
        node, work = self.memory.work()
        if work > limit and self.memory.last_in_flight == 1 and f"over:{node}" not in self._said:
            self._said.add(f"over:{node}")
            log.warning("memory.host_budget=%s: one partition alone measures %s on node %s (our processes "
                        "above their %s at rest; its estimate: %s); going on with one partition in flight "
                        "(raise memory.host_budget for more)", format_bytes(limit), format_bytes(work),
                        _node_label(node), format_bytes(self.memory.baseline(node)),
                        format_bytes(self.default_key.part_bytes if self.default_key else 0))

    def _measured_fits(self, part_bytes: int) -> bool:
        """Whether one more partition (``part_bytes`` by its estimate) fits the budget by what is
        measured: the busiest node's work memory (its processes now minus at rest) plus the next
        partition's estimate (the reserved estimates are checked beside it: together,
        max(measured, reserved) + the next estimate).
        With nothing in flight it always fits (progress). Says once, in one line, when the
        measurement holds partitions back."""
        limit = self.budget.limit
        if limit is None or self.memory is None:
            return True
        if self._in_flight == 0:
            return True
        if any(s.startswith("over:") for s in self._said):
            # one partition alone measured above the whole budget (_say_over): one at a time until
            # reset_peak (the batch's end; the service's scheduler: its life, whatever the key),
            # not only while the last sample shows it: a sample in a trough (its synthesis done,
            # its proving not yet at peak) would let a second in to peak beside it
            return False
        node, work = self.memory.work()
        if work + part_bytes <= limit:
            return True
        if "held" not in self._said:
            self._said.add("held")
            log.warning("memory.host_budget=%s: measured work memory %s on node %s + the next partition's %s "
                        "estimate exceed it: holding partitions in flight at %d (the estimates allow %d)",
                        format_bytes(limit), format_bytes(work), _node_label(node), format_bytes(part_bytes),
                        self._in_flight, self.pw)
        return False

    def _settle(self, done: Completion) -> PartitionResult | None:
        work = done.work
        self._in_flight -= 1
        left = self._running.pop(work.proof_id) - 1
        if left:
            self._running[work.proof_id] = left
        self.budget.release(work.proof.key.part_bytes)
        proof = self._proofs.get(work.proof_id)
        # cancelled or failed meanwhile, or a forgotten proof's late completion whose id a new proof
        # now has (a batch stopped by the watchdog, rerun): nothing to verify, retry or attribute
        if proof is None or proof.finished or proof.request is not work.proof:
            return None
        if done.error is not None and done.interrupted:  # not the partition's fault: again, uncounted
            work.interruptions += 1
            log.warning("%s partition %d: attempt cut short by its prover (%s); resubmitting", work.proof_id,
                        work.partition, done.error)
            heapq.heappush(self._queue, work)
            return None
        if done.error is not None:
            self._retry_or_fail(proof, work, done.error)
            return None
        res = self._verified(done)
        if res is None:
            label = work.proof.key.circuit.key_label
            proof.fail(f"partition {work.partition}: the proof does not verify with {label}: the witness does not "
                       f"satisfy the circuit, or the key is not this circuit's")
            return None
        self.metrics.partition_done(res.times, work.proof.key.circuit.circuit_id)
        proof.results.append(res)
        if len(proof.results) == proof.partitions and not proof.finished:
            proof.state = ProofState.DONE
            self.metrics.proof_done(work.proof.key.circuit.circuit_id)
        return res

    def _retry_or_fail(self, proof: _Proof, work: WorkItem, reason: str) -> None:
        self.metrics.partition_failed(work.proof.key.circuit.circuit_id)
        work.attempts += 1
        if work.attempts < self.max_attempts:  # (a failed proof's retry is dropped when popped)
            proof.retries += 1
            # backoff: what failed (a lost object, a node going away) gets time to come back
            delay = min(self.backoff_max_s, self.backoff_s * 2 ** (work.attempts - 1))
            log.warning("%s partition %d: attempt %d failed (%s); retrying in %.0f s", work.proof_id,
                        work.partition, work.attempts, reason, delay)
            heapq.heappush(self._delayed, (time.monotonic() + delay, next(self._tie), work))
        else:
            proof.fail(f"partition {work.partition} failed {work.attempts} times: {reason}")

    def _verified(self, done: Completion) -> PartitionResult | None:
        """The partition's result after a pairing check (timed as "verify"), or None if it fails."""
        out = done.outcome
        t0 = time.perf_counter()
        ok = verify(done.work.proof.key.vk, out.public, out.proof)
        out.times["verify"] = time.perf_counter() - t0
        return PartitionResult.verified_from(out, done.work) if ok else None


def _node_label(node: str | None) -> str:
    """A Ray node id shortened to 12 characters ("local" as it is)."""
    return (node or "?")[:12]
