"""Turning expected failures into one-line messages for the command-line jobs."""

from __future__ import annotations

import sys


class ProofFailed(RuntimeError):
    """One or more proofs of a batch failed; the message names them and why."""


def user_errors() -> tuple[type, ...]:
    """Exception types that mean bad input or configuration, not a bug."""
    from .formats.native import KeyBundleError
    from .formats.snarkjs_json import JsonFormatError
    from .r1cs import UnsatisfiedConstraint

    return (ValueError, FileNotFoundError, RuntimeError, KeyBundleError, JsonFormatError,
            UnsatisfiedConstraint, ProofFailed)


def exit_with_error(e: BaseException) -> int:
    """Print ``error: <message>`` as the last line and return exit code 2 for user errors;
    re-raise anything else (a bug should keep its traceback)."""
    if isinstance(e, user_errors()):
        print(f"error: {e}", file=sys.stderr)
        return 2
    raise e
