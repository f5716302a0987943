"""How the batch job stops: SIGTERM (what ``timeout``, systemd and ``ray job stop`` send) ends it
the way Ctrl-C does, with the partial manifest written, finished proofs kept and one line.

Python turns SIGINT into KeyboardInterrupt; SIGTERM's default kills the process at once. The job
installs a handler that raises ``Terminated`` (a KeyboardInterrupt, so every ``except
KeyboardInterrupt`` that cleans up handles it too). Ray's driver installs its own C++ handler
for SIGTERM when ``ray.init`` connects (it prints a stack dump and exits 15), so whoever starts
Ray calls ``reinstall`` afterwards: ours is put back only where the job installed it.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_installed = threading.Event()  # set while a job holds the SIGTERM handler (reinstall puts it back)


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: the job stops as it does for Ctrl-C."""


def _raise_terminated(signum, frame) -> None:
    raise Terminated


def signal_name(e: BaseException) -> str:
    """The signal that stopped the job, from the exception it raised."""
    return "SIGTERM" if isinstance(e, Terminated) else "SIGINT"


@contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """While held (main thread only), SIGTERM raises Terminated; the previous handler is restored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    _installed.set()
    try:
        yield
    finally:
        _installed.clear()
        signal.signal(signal.SIGTERM, previous)


def reinstall() -> None:
    """Put the job's SIGTERM handler back after Ray replaced it (``ray.init``); nothing when no job
    holds it (the service, a library caller) or off the main thread."""
    if _installed.is_set() and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_terminated)


@contextmanager
def stop_signals_deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back while a partition's files and journal line are written, so a
    stop never leaves files on disk that the journal does not list; each is delivered right after
    to the handler that was there before (main thread only: elsewhere signals are not delivered)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    # a handler Python did not install (Ray's C++ one: getsignal is None) could not be put back: left alone
    held = [s for s in STOP_SIGNALS if signal.getsignal(s) is not None]
    previous = {s: signal.signal(s, lambda signum, _frame: caught.append(signum)) for s in held}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    for s in dict.fromkeys(caught):
        signal.raise_signal(s)
