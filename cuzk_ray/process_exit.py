"""A command's process ends without the interpreter's teardown, once its work is done.

After the last line of a prove, CPython's finalization (every module and object freed: numba's
LLVM state, the MSM tables' mappings, Hydra's and OmegaConf's objects) took ~0.25 s of a 2 s
BN254 proof on two cores, and does nothing a finished command needs. ``install()`` registers
an exit handler first thing, so that it runs after every other one (atexit runs them last
registered first: logging's, Ray's shutdown, tempfile's finalizers all run before it); once the
command has said how it ends (``exit_code(code)``), the handler flushes the standard streams and
logging and leaves with ``os._exit(code)``. Without a recorded code (an uncaught exception, a
command that never finished) the interpreter ends as usual.

    process_exit.install()          # at the top of the command, before other imports
    ...
    except SystemExit as e:
        process_exit.exit_code(e.code)
        raise
"""

from __future__ import annotations

import atexit
import logging
import os
import sys

_code: list[int] = []  # the command's exit status, once known


def install() -> None:
    """Register the fast exit (first: atexit runs handlers in reverse order of registration)."""
    atexit.register(_exit_now)


def exit_code(code) -> None:
    """Record how the command ends (a SystemExit's code: None is 0, an int as it is); a message
    (a str code, printed by the interpreter as it exits with 1) leaves the usual exit."""
    if code is None or isinstance(code, int):
        _code[:] = [int(code or 0)]


def _exit_now() -> None:
    if not _code:
        return
    logging.shutdown()  # its own exit handler may have been registered before ours: flush it here
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):  # closed or replaced streams: nothing to flush
            pass
    os._exit(_code[0])
