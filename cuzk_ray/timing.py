"""Named stage timers: one name per proving phase ("synthesis", "h", "msm_a", ...), so logs,
metrics and benchmark tables use the same words as the algorithm."""

from __future__ import annotations

import time
from contextlib import contextmanager


class StageTimes(dict):
    """stage name -> seconds (accumulated when a stage runs more than once)."""

    @contextmanager
    def stage(self, name: str):
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self[name] = self.get(name, 0.0) + time.perf_counter() - t0

    def merge(self, other: dict) -> "StageTimes":
        for k, v in other.items():
            self[k] = self.get(k, 0.0) + v
        return self
