"""Admission control: what a partition in flight costs the host, and the budget the scheduler
reserves it against. Ray's ``memory=`` is admission control only (nothing stops a task from
using more), so the scheduler reserves each partition's estimated bytes here before it submits
the partition and releases them when the partition comes back; ``peak`` and ``violations`` make
the accounting checkable."""

from __future__ import annotations

import os
import re
import threading

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1000, "kib": 1 << 10, "m": 1 << 20, "mb": 10**6, "mib": 1 << 20,
          "g": 1 << 30, "gb": 10**9, "gib": 1 << 30, "t": 1 << 40, "tb": 10**12, "tib": 1 << 40}

INT_BYTES = 72  # a reduced Fr value as a Python int in an object array: 8 B pointer + ~60 B object


def parse_bytes(value, field: str = "memory") -> int | None:
    """'64GiB', '500MB', 1234 or None (no limit) -> bytes; a size below one byte is refused."""
    if value is None:
        return value
    if isinstance(value, int):
        nbytes = value
    else:
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", str(value))
        if not m or m.group(2).lower() not in _UNITS:
            raise ValueError(f"{field}={value!r}: expected a size such as 64GiB, 500MB or a number of bytes")
        nbytes = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    if nbytes < 1:  # -1 or 0 was taken as a limit no partition fits (or none)
        raise ValueError(f"{field}={value!r}: expected a size of at least 1 byte")
    return nbytes


def format_bytes(n: int) -> str:
    """Bytes for a person: 1.2 GiB, 310.0 MiB, 81.2 KiB, 100 B."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.1f} {unit}"
    return f"{n} B"


def partition_host_bytes(circuit, domain_size: int | None = None, backend: str = "cpu") -> int:
    """Estimated peak host bytes of one partition in flight. An estimate for admission control,
    not a measurement.

    The partition travels compact (cuzk_ray.witness): ``circuit.partition_batch_bytes()``, the
    compact witness as the circuit's layout sizes it (built-in circuits: every wire that can hold
    a field element counted as one; snarkjs: the largest witness file as load_key read it, the
    full size plus two bitmaps before any is read). First its synthesis task's heap
    (``circuit.synthesis_bytes()``: the working arrays, the caches a fresh worker process keeps);
    then, cuda: a, b, c and h live in VRAM and the witness is expanded there; the host holds the
    compact witness twice (the Arrow batch and its pinned staging copy). cpu: the Arrow batch, the
    witness expanded to limbs and as ints, a, b, c as ints and h as limbs. The two phases are
    added (an upper bound: a worker keeps its caches after the task)."""
    domain = domain_size or circuit.domain_size()
    batch = circuit.partition_batch_bytes()
    synthesis = circuit.synthesis_bytes()
    if backend == "cuda":
        return synthesis + 2 * batch
    wires = circuit.witness_bytes() // 32
    return synthesis + batch + wires * (32 + INT_BYTES) + domain * (3 * INT_BYTES + 32)


def check_budget(host_budget: int | None, part_bytes: int, circuit_id: str) -> None:
    """Refuse a budget that cannot hold even one partition (one line: need vs have)."""
    if host_budget is not None and host_budget < part_bytes:
        raise ValueError(f"memory.host_budget={host_budget} B is below one partition "
                         f"({part_bytes} B for {circuit_id})")


OBJECT_STORE_MARGIN = 2 << 30  # Ray's own objects and fragmentation beside the key and batches


def expected_pw(settings, n_gpus: int) -> int:
    """The pw a run will use before Ray is up: as asked, else as the executors pick it (1 in
    process, 2 with CPU provers, pw_per_gpu x GPUs with GPU provers)."""
    if settings.engine == "local":
        return 1
    if settings.pw is not None:
        return max(1, int(settings.pw))
    return int(settings.pw_per_gpu) * max(1, n_gpus) if settings.prover_placement == "gpu" else 2


def ray_default_object_store() -> int:
    """Ray's default object store for a node: 30 % of its memory (Ray also caps it by /dev/shm)."""
    return int(0.3 * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def object_store_need(key_bytes: int, batch_bytes: int, pw: int) -> int:
    """One copy of the key and matrices, pw partitions' Arrow batches (``batch_bytes`` each: the
    circuit's partition_batch_bytes), and a margin."""
    return key_bytes + pw * batch_bytes + OBJECT_STORE_MARGIN


def object_store_bytes(key_bytes: int, batch_bytes: int, pw: int, configured=None) -> int | None:
    """The object store an embedded Ray is started with: ``configured`` (ray.object_store_memory)
    when given; else None (Ray's default) when the need fits in it, else the need (the preflight
    has checked that /dev/shm holds it: an explicit size beyond /dev/shm makes ray.init fail)."""
    if configured is not None:
        return parse_bytes(configured, "ray.object_store_memory")
    need = object_store_need(key_bytes, batch_bytes, pw)
    return None if need <= ray_default_object_store() else need


def bounded_pw(pw: int, host_budget: int | None, part_bytes: int) -> int:
    """Partitions in flight: at least 1, and no more than the budget holds."""
    pw = max(1, int(pw))
    return pw if host_budget is None else min(pw, host_budget // part_bytes)


class HostBudget:
    """Counts bytes reserved by in-flight partitions against a limit (None = unlimited)."""

    def __init__(self, limit: int | None):
        self.limit = limit
        self.reserved = 0
        self.peak = 0
        self.violations = 0
        self._lock = threading.Lock()

    def fits(self, nbytes: int) -> bool:
        """Whether ``nbytes`` more stay within the limit."""
        return self.limit is None or self.reserved + nbytes <= self.limit

    def reserve(self, nbytes: int) -> None:
        """Count ``nbytes`` as in use; the caller checked fits() first (else: a bug, counted)."""
        with self._lock:
            if not self.fits(nbytes):
                self.violations += 1
                raise AssertionError(f"host budget: reserving {nbytes} B would exceed {self.limit} B "
                                     f"({self.reserved} B reserved)")
            self.reserved += nbytes
            self.peak = max(self.peak, self.reserved)

    def release(self, nbytes: int) -> None:
        """Give back bytes reserved earlier."""
        with self._lock:
            self.reserved -= nbytes
            assert self.reserved >= 0, "host budget released more than it reserved"


def vram_room(rooms) -> int | None:
    """The VRAM one key may count on, from the GPU provers' readings (types.DeviceRoom): on each
    device what is free plus what the provers on it hold (their keys, partitions and cached
    blocks, theirs to give back: a prover evicts idle keys for a new one, engines.actors), the
    smallest over the devices: the room of a key held alone on the tightest card, other
    processes' use counted. None without a reading (CPU provers, or none up)."""
    free: dict[str, int] = {}
    pools: dict[str, int] = {}
    for r in rooms:
        free[r.device] = min(free.get(r.device, r.free), r.free)
        pools[r.device] = pools.get(r.device, 0) + r.pool
    return min((free[d] + pools[d] for d in free), default=None)
