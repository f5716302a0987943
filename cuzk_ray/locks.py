"""Exclusive lock files: one process at a time owns a directory or a database.

A lock is an ``fcntl.flock`` on a small file that holds the owner's pid (for the refusal's
message); the kernel drops it when the owner's descriptor closes or the process dies, so a
crashed owner never leaves a stale lock. The file itself stays: removing it would let two
processes lock two different files of the same name. The batch job locks its output_dir
(outputs.OutputDir), the service its database and its output_dir (service.checks). A cache that
the first process to need it fills, while the others wait, is filled under ``waiting_lock``
(the Filecoin partition cache's replay plan)."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from pathlib import Path

from .errors import OutputError


def os_error(path, e: OSError) -> OutputError:
    """One line for an OSError on ``path``: the path, the reason and its errno name."""
    name = errno.errorcode.get(e.errno, "") if e.errno else ""
    return OutputError(f"{path}: {e.strerror or e}" + (f" ({name})" if name else ""))


def hold_lock(lock: Path, owner: str, advice: str) -> int:
    """Create ``lock`` if needed, lock it exclusively and write this pid into it; returns the
    descriptor (close it to release). OutputError at once when another process holds it:
    ``{owner} is in use by another job (pid N holds {lock}): {advice}``."""
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise os_error(lock, e) from None
    try:
        _flock(fd, lock, owner, advice)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)  # who holds it, for the refusal
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextlib.contextmanager
def waiting_lock(lock: Path):
    """Hold ``lock`` exclusively for the ``with`` block, waiting while another process holds it:
    for a cache the first process to need it fills while the others wait (OutputError in one line
    when the lock file cannot be opened)."""
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise os_error(lock, e) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # the lock goes with the descriptor


def check_unlocked(lock: Path, owner: str, advice: str) -> None:
    """Refuse (OutputError, as hold_lock) if another process holds ``lock``; creates nothing, holds
    nothing. For a check before anything is started; the lock itself is taken by hold_lock."""
    try:
        fd = os.open(lock, os.O_RDONLY)
    except OSError:
        return  # no lock file (or no directory): nobody holds it
    try:
        _flock(fd, lock, owner, advice)
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _flock(fd: int, lock: Path, owner: str, advice: str) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
        raise OutputError(f"{owner} is in use by another job (pid {holder} holds {lock}): {advice}") from None
    except OSError as e:
        raise os_error(lock, e) from None
