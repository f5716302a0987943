"""Turning expected failures into one-line messages for the command-line jobs."""

from __future__ import annotations

import errno
import sys

# OSErrors that mean "this path cannot be written here" (a full, read-only or forbidden disk, a
# file where a directory should be): the user's to fix, so one line naming the path, not a trace.
PATH_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR,
                         errno.EISDIR, errno.EFBIG})
INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a job ended by Ctrl-C


class ProofFailed(RuntimeError):
    """One or more proofs of a batch failed; the message names them and why."""


class Stalled(RuntimeError):
    """No progress for the watchdog's limit and work that cannot run: the message names the
    missing resource (need vs have)."""


class OutputError(RuntimeError):
    """output_dir (or cache_dir) cannot be used or written: the message names the path and why."""


class Interrupted(Exception):
    """The job was interrupted (SIGINT); the message says what was kept."""


def user_errors() -> tuple[type, ...]:
    """Exception types that mean bad input or configuration, not a bug."""
    from .formats.native import KeyBundleError
    from .formats.snarkjs_json import JsonFormatError
    from .r1cs import UnsatisfiedConstraint

    return (ValueError, FileNotFoundError, RuntimeError, KeyBundleError, JsonFormatError,
            UnsatisfiedConstraint, ProofFailed)


def exit_with_error(e: BaseException) -> int:
    """Print ``error: <message>`` as the last line and return exit code 2 for user errors (and
    OSErrors of PATH_ERRNOS, naming the path), ``interrupted: <message>`` and 130 for Interrupted;
    re-raise anything else (a bug should keep its traceback)."""
    if isinstance(e, Interrupted):
        print(f"interrupted: {e}", file=sys.stderr)
        return INTERRUPTED
    if isinstance(e, OSError) and e.errno in PATH_ERRNOS:
        name = errno.errorcode.get(e.errno, "")
        print(f"error: {e.filename or '?'}: {e.strerror} ({name})", file=sys.stderr)
        return 2
    if isinstance(e, user_errors()):
        print(f"error: {e}", file=sys.stderr)
        return 2
    raise e
