"""Opening an input file only when it is a regular file.

``open(path)`` on a FIFO waits for a writer (forever, if none comes), on a character device it may
read without end, and a directory fails later with a less useful message. The readers of input
files (BinFile for .zkey/.wtns/.r1cs, file_sha256) open with ``O_NONBLOCK`` (a FIFO opens at once
instead of waiting) and check the opened descriptor's type with fstat: the check and the read are
of the same file, so a path swapped for a FIFO after an earlier check cannot block either."""

from __future__ import annotations

import os
import stat
from typing import BinaryIO

KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
         (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


class NotRegularFile(ValueError):
    """The path names a directory, a FIFO, a device or a socket; the message names it."""


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words ("a FIFO", ...)."""
    return next((name for test, name in KINDS if test(mode)), "not a regular file")


def open_regular(path) -> BinaryIO:
    """``path`` opened for reading in binary mode (blocking reads, as usual), or NotRegularFile
    without reading from it; FileNotFoundError / PermissionError as ``open`` raises them."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(f"{os.fspath(path)}: {kind_of(mode)}, not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
