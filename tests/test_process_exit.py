"""cuzk_ray.process_exit: a command that recorded its exit code leaves without the interpreter's
teardown, after every other exit handler and with its output flushed; without one, as usual."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = """
import atexit, sys
from cuzk_ray import process_exit
process_exit.install()
atexit.register(lambda: open(sys.argv[1], "w").write("ran"))  # registered later: runs first

class Teardown:
    def __del__(self):
        sys.stdout.write("teardown\\n")  # only when the interpreter frees the module's objects

kept = Teardown()
sys.stdout.write("buffered, not flushed")
try:
    sys.exit(int(sys.argv[2]))
except SystemExit as e:
    if sys.argv[3] == "record":
        process_exit.exit_code(e.code)
    raise
"""


def run(tmp_path: Path, code: int, record: bool) -> tuple[subprocess.CompletedProcess, Path]:
    marker = tmp_path / f"handler-{record}"
    p = subprocess.run([sys.executable, "-c", SCRIPT, str(marker), str(code), "record" if record else "no"],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    return p, marker


def test_recorded_exit_code_skips_teardown_after_the_other_handlers_and_flushes(tmp_path):
    p, marker = run(tmp_path, 3, record=True)
    assert p.returncode == 3 and marker.read_text() == "ran"
    assert p.stdout == "buffered, not flushed"  # flushed, and no teardown ran


def test_without_a_recorded_code_the_interpreter_ends_as_usual(tmp_path):
    p, marker = run(tmp_path, 3, record=False)  # negative twin: the same script, no code recorded
    assert p.returncode == 3 and marker.read_text() == "ran"
    assert p.stdout == "buffered, not flushedteardown\n"
