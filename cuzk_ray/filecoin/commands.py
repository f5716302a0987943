"""``cuzk-ray filecoin VERB ...``: Filecoin's vocabulary on the command line (docs/FILECOIN.md).

Each verb is a function ``(args) -> exit code`` registered in ``VERBS`` with the function that
adds its arguments. Errors are one line (``error: ...``, exit 2), never a traceback."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from .c2_commands import C2_VERBS
from .seal_commands import SEAL_VERBS
from .sector_commands import SECTOR_VERBS
from .selftest import SELFTEST_VERBS

# verb -> (help, add_arguments(parser), run(args) -> exit code)
VERBS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]] = {}
VERBS.update(SECTOR_VERBS)  # comm-d, inputs, verify
VERBS.update(SEAL_VERBS)  # seal, verify-c1
VERBS.update(C2_VERBS)  # c2
VERBS.update(SELFTEST_VERBS)  # selftest


class OneLineParser(argparse.ArgumentParser):
    """argparse with the CLI's error rule: a missing or unknown flag is one line ``error: ...``, exit 2
    (argparse's own prints the usage first; ``--help`` still shows it)."""

    def error(self, message: str):
        self.exit(2, f"error: {self.prog}: {message}\n")


def parser() -> argparse.ArgumentParser:
    ap = OneLineParser(prog="cuzk-ray filecoin", description=__doc__.split("\n\n")[0].replace("``", ""))
    sub = ap.add_subparsers(dest="verb", metavar="VERB")
    for name, (text, add_arguments, _run) in VERBS.items():
        add_arguments(sub.add_parser(name, help=text, description=text))
    return ap


def main(argv: list[str] | None = None) -> int:
    """Parse and run one verb; bad input is one line on stderr and exit 2."""
    from ..errors import exit_with_error

    ap = parser()
    args = ap.parse_args(sys.argv[1:] if argv is None else argv)
    if args.verb is None:
        ap.print_help()
        return 2
    try:
        return VERBS[args.verb][2](args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except (ValueError, OSError) as e:
        return exit_with_error(e)

