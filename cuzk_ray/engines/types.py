"""Typed records at the engine's boundaries: what is asked (ProofRequest), one unit of work
(WorkItem), what a prover hands back (PartitionOutcome), what the scheduler keeps
(PartitionResult) and reports (ProofStatus, SchedulerStatus, BatchResult).

A proof id is an opaque string: the directory under proofs/ and the key of ``BatchResult.failed``.
It is never parsed; the circuit's proof number travels beside it (``ProofRequest.index``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum

from .memory import NodeMemory

ProofId = str


def batch_proof_id(index: int) -> ProofId:
    """The id of the index-th proof of a batch job ("proof-000"; its directory under proofs/)."""
    return f"proof-{index:03d}"


class Priority(IntEnum):
    """Scheduling priority of a proof; a lower value runs first (the service's request field)."""

    CRITICAL = 0
    HIGH = 1
    NORMAL = 2
    LOW = 3

    @classmethod
    def parse(cls, name: str) -> Priority:
        """'critical' | 'high' | 'normal' | 'low' -> Priority (ValueError naming the choices)."""
        try:
            return cls[name.upper()]
        except KeyError:
            raise ValueError(f"priority={name!r} is not one of critical, high, normal, low") from None


class ProofState(StrEnum):
    QUEUED = "queued"  # no partition submitted yet
    RUNNING = "running"  # partitions submitted or verified, not all of them
    DONE = "done"  # every partition verified
    FAILED = "failed"  # a partition kept failing or did not verify
    CANCELLED = "cancelled"


@dataclass(frozen=True)
class BundleKey:
    """A key bundle on the node's own disk (formats.native): prover actors memory-map it, so the
    node's actors share one page-cache copy and the object store holds none."""

    path: str


@dataclass(frozen=True)
class StoreKey:
    """The key and matrices in the object store, handed to prover actors' methods (ready, prove)
    inside this small value, never to their constructor: Ray reports actor constructor arguments
    that live in the object store (or hold ObjectRefs) with max_restarts > 0 as an error-level
    line on every run. The executor holds this value, hence the refs, for the actors' whole life,
    so a restarted actor fetches them again on its next call (actors.ProverActor)."""

    pk: object  # ray.ObjectRef of the ProvingKey
    cs: object  # ray.ObjectRef of the ConstraintSystem


@dataclass(frozen=True)
class KeyRef:
    """A key as the prover pool's actors get it: its id, where to load it from (a BundleKey or
    StoreKey, small), its bytes (the pool's accounting of what each prover holds), and at most how
    many of its partitions one prover works on at once (0: as many as the prover's threads; the
    service's provers start before a key's VRAM need is known, preflight.fit_concurrency)."""

    key_id: str
    source: BundleKey | StoreKey
    nbytes: int = 0
    concurrency: int = 0


@dataclass(frozen=True)
class DeviceRoom:
    """A GPU prover's reading of its device: which device (``device``: node and PCI bus id), the
    bytes free on it now (every process's use counted), and the bytes this prover's CuPy pool
    holds (its keys, partitions in flight and blocks cached for reuse: all of it this prover's to
    give back). engines.admission.vram_room makes of the pool's readings the VRAM one key may count on."""

    device: str
    free: int
    pool: int


@dataclass(frozen=True)
class KeyContext:
    """What the scheduler needs of the key a proof is proved with: its id (the pool sends the
    partition to a prover holding it), the circuit (synthesis specs, partitions, label), the
    verifying key (each partition's pairing check) and a partition's host bytes (the budget)."""

    key_id: str
    circuit: object
    vk: object
    part_bytes: int


@dataclass(frozen=True)
class ProofRequest:
    """One proof to make: ``index`` is the circuit's proof number (synth_spec, proof labels),
    ``seq`` the order of arrival (oldest first within a priority), ``synth_fn`` an optional
    replacement of the circuit's synthesis (tests inject failures with it)."""

    id: ProofId
    index: int
    seed: int = 0
    priority: Priority = Priority.NORMAL
    seq: int = 0
    synth_fn: Callable | None = field(default=None, compare=False, repr=False)
    key: KeyContext | None = field(default=None, compare=False, repr=False)


@dataclass
class WorkItem:
    """One partition of one proof, as the scheduler queues and submits it. Ordered by
    (priority, arrival of its proof, partition): the oldest proof first, its lowest partition first."""

    proof: ProofRequest
    partition: int
    attempts: int = 0  # failed attempts so far
    interruptions: int = 0  # attempts cut short by the prover actor (restarting, node lost): not counted
    prover: int = -1  # index of the prover it went to (set by the executor)

    @property
    def key(self) -> tuple[int, int, int]:
        return (int(self.proof.priority), self.proof.seq, self.partition)

    def __lt__(self, other: WorkItem) -> bool:
        return self.key < other.key

    @property
    def proof_id(self) -> ProofId:
        return self.proof.id


@dataclass(frozen=True)
class SplitShare:
    """One partition's share of its proof's input, as the Ray engine's split task hands it to the
    partition's synthesis task; ``split_s`` (the split's seconds) rides with partition 0's share
    only, so that the report counts it once a proof."""

    share: object
    split_s: float | None


@dataclass(frozen=True)
class SideOutcome:
    """What a side task (Engine.beside) came back with: its value, or the user error it raised
    (a bad input file: re-raised where its result is asked for, with its one-line message)."""

    value: object = None
    error: BaseException | None = None

    @classmethod
    def of(cls, fn, args: tuple) -> SideOutcome:
        """``fn(*args)`` run here: its value, or the user error (errors.user_errors, OSError) it raised."""
        from ..errors import user_errors

        try:
            return cls(fn(*args))
        except (*user_errors(), OSError) as e:
            return cls(error=e)

    def done(self) -> bool:
        """Always: it has run (the local engine's side tasks run at once)."""
        return True

    def result(self):
        """The value, or the error raised."""
        if self.error is not None:
            raise self.error
        return self.value


@dataclass
class PartitionOutcome:
    """What proving one partition returns (the worker fills the proof, the actor or the local
    executor where it ran and the synthesis time)."""

    proof_id: ProofId
    partition: int
    proof: object
    public: list[int]
    times: dict[str, float]
    spans: list = field(default_factory=list)  # (stage, start, end), epoch seconds
    vram_peak: int | None = None
    synthesis_node: str | None = None
    prover_node: str | None = None
    prover_pid: int | None = None
    synthesis_pid: int | None = None  # the Ray worker that synthesized it (its memory is measured from then on)


@dataclass
class Completion:
    """An executor's report on a submitted work item: its outcome, or why the attempt failed.
    ``interrupted``: the attempt was cut short by where it ran (its prover actor died or is
    restarting, its node was lost), not by the partition: it is resubmitted, not counted."""

    work: WorkItem
    outcome: PartitionOutcome | None = None
    error: str | None = None
    interrupted: bool = False


@dataclass
class PartitionResult:
    proof_id: ProofId
    partition: int
    proof: object
    public: list[int]
    times: dict
    synthesis_node: str | None
    prover_node: str | None
    verified: bool
    attempts: int = 1
    prover_pid: int | None = None
    prover_index: int = -1
    spans: list = field(default_factory=list)  # (stage, start, end), epoch seconds, for timelines
    vram_peak: int | None = None
    proof_index: int = 0

    @classmethod
    def verified_from(cls, out: PartitionOutcome, work: WorkItem) -> PartitionResult:
        """The result of a work item whose outcome passed the pairing check."""
        return cls(proof_id=out.proof_id, partition=out.partition, proof=out.proof, public=out.public,
                   times=out.times, synthesis_node=out.synthesis_node, prover_node=out.prover_node, verified=True,
                   attempts=work.attempts + 1, prover_pid=out.prover_pid, prover_index=work.prover,
                   spans=out.spans, vram_peak=out.vram_peak, proof_index=work.proof.index)


@dataclass
class BatchResult:
    results: list[PartitionResult]  # partitions of the proofs that completed, sorted
    failed: dict[ProofId, str]  # proof_id -> why it failed
    wall_s: float
    provers: list[dict] = field(default_factory=list)
    max_in_flight: int = 0
    host_bytes_per_partition: int = 0
    host_budget: int | None = None
    host_peak: int = 0
    retries: int = 0
    proofs: dict[ProofId, int] = field(default_factory=dict)  # proof_id -> the circuit's proof number
    host_measured: list[NodeMemory] = field(default_factory=list)  # per node: baseline, peak work memory


@dataclass(frozen=True)
class ProofStatus:
    """Where one proof stands (the service's GET /v1/proofs/{id})."""

    proof_id: ProofId
    state: ProofState
    priority: Priority
    partitions: int
    partitions_done: int
    timings: dict[str, float]  # stage -> seconds summed over the verified partitions
    error: str | None = None


@dataclass(frozen=True)
class SchedulerStatus:
    """The scheduler as a whole (the service's GET /v1/status)."""

    proofs: dict[str, int]  # state -> number of proofs
    queued_by_priority: dict[str, int]  # priority name -> partitions waiting
    in_flight: int
    host_reserved: int
    host_budget: int | None


class ProofNotDone(LookupError):
    """Results were asked for a proof that is not done (queued, running, failed or cancelled)."""
