"""Named stage timers: one name per proving phase ("synthesis", "h", "msm_a", ...), so logs,
metrics and benchmark tables use the same words as the algorithm."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager


class StageTimes(dict):
    """stage name -> seconds (accumulated when a stage runs more than once); ``spans`` keeps
    (stage, start, end) in wall-clock seconds since the epoch for timelines."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.spans: list[tuple[str, float, float]] = []
        self._lock = threading.Lock()  # stages of one partition run on several threads

    @contextmanager
    def stage(self, name: str):
        t0, w0 = time.perf_counter(), time.time()
        try:
            yield
        finally:
            dt = time.perf_counter() - t0
            with self._lock:
                self[name] = self.get(name, 0.0) + dt
                self.spans.append((name, w0, w0 + dt))
