"""What a job shows a person: its own lines on stdout (plain, in order), the same lines with a
timestamp in ``output_dir/prove.log``, warnings as ``warning: ...`` on stderr, and progress as a
bar with rate and ETA on a terminal or as plain periodic lines elsewhere (a pipe, a file, the Ray
job log, where a bar rewritten with carriage returns reads as one endless line)."""

from __future__ import annotations

import logging
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

LOGGER = "cuzk_ray"  # every cuzk_ray.* logger reports through the handlers set here
LOG_FILE = "prove.log"
PERIOD_S = 10.0  # seconds between plain progress lines (not a tty)
BAR = 24  # characters of the progress bar


class _Plain(logging.Formatter):
    """INFO lines as they are; warnings and errors prefixed with their level (``warning: ...``)."""

    def format(self, record: logging.LogRecord) -> str:
        msg = record.getMessage()
        return msg if record.levelno < logging.WARNING else f"{record.levelname.lower()}: {msg}"


class _Below(logging.Filter):
    def __init__(self, level: int):
        super().__init__()
        self.level = level

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno < self.level


class Console:
    """The job's lines: ``say`` for ours (stdout), cuzk_ray.* warnings (stderr); both also go to
    the log file once ``log_to`` names it. ``verbose``: DEBUG from cuzk_ray.* too."""

    def __init__(self, verbose: bool = False, stream=None, err=None):
        self.verbose = verbose
        self.stream = stream or sys.stdout
        self.log = logging.getLogger(f"{LOGGER}.job")
        root = logging.getLogger(LOGGER)
        self._saved = (root.level, root.propagate)  # restored by close(): a test or a caller may share the process
        root.setLevel(logging.DEBUG if verbose else logging.INFO)
        root.propagate = False  # our lines are ours: not Hydra's or Ray's handlers
        for h in list(root.handlers):
            if getattr(h, "_cuzk_console", False):
                root.removeHandler(h)
                h.close()
        out = logging.StreamHandler(self.stream)
        out.addFilter(_Below(logging.WARNING))
        errh = logging.StreamHandler(err or sys.stderr)
        errh.setLevel(logging.WARNING)
        for h in (out, errh):
            h.setFormatter(_Plain())
            h._cuzk_console = True
            root.addHandler(h)
        self._handlers = [out, errh]
        self._file: logging.Handler | None = None

    def say(self, line: str) -> None:
        """One of the job's lines: stdout now (flushed), and the log file."""
        self.log.info(line)
        self.stream.flush()

    def log_to(self, path) -> Path:
        """Append every line from now on to ``path`` too (``output_dir/prove.log``), with a timestamp."""
        path = Path(path)
        h = logging.FileHandler(path, mode="a", encoding="utf-8", delay=False)
        h.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        h._cuzk_console = True
        logging.getLogger(LOGGER).addHandler(h)
        self._file = h
        self._handlers.append(h)
        return path

    def file_only(self, line: str) -> None:
        """A line for the log file alone (what a terminal bar showed, once it is done)."""
        if self._file is not None:
            self._file.handle(self.log.makeRecord(self.log.name, logging.INFO, __file__, 0, line, None, None))

    def close(self) -> None:
        """Remove this console's handlers (the log file closed) and restore the logger as it was."""
        root = logging.getLogger(LOGGER)
        for h in self._handlers:
            root.removeHandler(h)
            h.close()
        self._handlers, self._file = [], None
        root.setLevel(self._saved[0])
        root.propagate = self._saved[1]


def _duration(s: float) -> str:
    s = max(0, int(round(s)))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


@dataclass
class Progress:
    """Partitions verified so far: ``update(done, total)`` after each one. On a terminal, one bar
    rewritten in place (``[####....] 3/10 partitions verified  0.52/s  ETA 13 s``); elsewhere a
    plain line at the first partition, then at most every ``period`` seconds, and at the end
    (``  3/10 partitions verified (0.52/s, ETA 13 s)``). Rate and ETA count from the batch's
    start, so they include the pipeline's fill."""

    console: Console
    tty: bool | None = None
    period: float = PERIOD_S
    clock: object = time.monotonic
    t0: float = field(default=0.0, init=False)
    _last: float | None = field(default=None, init=False)

    def __post_init__(self):
        if self.tty is None:
            self.tty = bool(getattr(self.console.stream, "isatty", lambda: False)())
        self.t0 = self.clock()

    def line(self, done: int, total: int) -> str:
        """The progress text for ``done`` of ``total``."""
        dt = max(self.clock() - self.t0, 1e-9)
        rate = done / dt
        tail = f"ETA {_duration((total - done) / rate)}" if 0 < done < total else f"in {_duration(dt)}"
        return f"{done}/{total} partitions verified ({rate:.2f}/s, {tail})"

    def update(self, done: int, total: int) -> None:
        now = self.clock()
        text = self.line(done, total)
        if self.tty:
            fill = BAR * done // max(total, 1)
            bar = f"\r  [{'#' * fill}{'.' * (BAR - fill)}] {text}\x1b[K"
            self.console.stream.write(bar + ("\n" if done >= total else ""))
            self.console.stream.flush()
            if done >= total:
                self.console.file_only(f"  {text}")
            return
        if done >= total or self._last is None or now - self._last >= self.period:
            self._last = now
            self.console.say(f"  {text}")
