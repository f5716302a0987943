"""Host memory budget of the engine. Ray's ``memory=`` is admission control only: nothing stops a
task from using more. The driver therefore reserves each partition's bytes here before it
submits the partition's synthesis and releases them when the partition is proved (or dropped);
``peak`` and ``violations`` make the accounting checkable."""

from __future__ import annotations

import re
import threading

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1000, "kib": 1 << 10, "m": 1 << 20, "mb": 10**6, "mib": 1 << 20,
          "g": 1 << 30, "gb": 10**9, "gib": 1 << 30, "t": 1 << 40, "tb": 10**12, "tib": 1 << 40}


def parse_bytes(value, field: str = "memory") -> int | None:
    """'64GiB', '500MB', 1234 or None (no limit) -> bytes."""
    if value is None or isinstance(value, int):
        return value
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", str(value))
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError(f"{field}={value!r}: expected a size such as 64GiB, 500MB or a number of bytes")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


class HostBudget:
    """Counts bytes reserved by in-flight partitions against a limit (None = unlimited)."""

    def __init__(self, limit: int | None):
        self.limit = limit
        self.reserved = 0
        self.peak = 0
        self.violations = 0
        self._lock = threading.Lock()

    def fits(self, nbytes: int) -> bool:
        return self.limit is None or self.reserved + nbytes <= self.limit

    def reserve(self, nbytes: int) -> None:
        with self._lock:
            if not self.fits(nbytes):  # the engine checks fits() first: this is a bug, not bad input
                self.violations += 1
                raise AssertionError(f"host budget: reserving {nbytes} B would exceed {self.limit} B "
                                     f"({self.reserved} B reserved)")
            self.reserved += nbytes
            self.peak = max(self.peak, self.reserved)

    def release(self, nbytes: int) -> None:
        with self._lock:
            self.reserved -= nbytes
            assert self.reserved >= 0, "host budget released more than it reserved"
