"""Ctrl-C in the middle of a running batch job (tests of the batch job and of the `cuzk-ray`
command share it): wait for k partitions on disk, then SIGINT while the job is stopped, so the
interrupt lands mid-batch and never after the end. The job is started by ``start`` with SIGINT at
its default: a shell without job control (a CI runner's background step, `cmd &` in a script)
starts its children with SIGINT ignored (POSIX), which Python keeps, and the test would then
depend on the interrupt landing while a partition is being written."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(cmd: list[str], **kwargs) -> subprocess.Popen:
    """subprocess.Popen(cmd, text pipes, **kwargs) with SIGINT at its default in the child (as
    for a job run in the foreground of a terminal, whatever started this test)."""
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_default_sigint, **kwargs)


def wait_for_entries(out: Path, k: int, job: subprocess.Popen) -> None:
    """Until the running job's journal lists k partitions (a condition, not a time)."""
    deadline = time.monotonic() + 300  # a safety net only
    while job.poll() is None and time.monotonic() < deadline:
        try:
            if (out / "journal.jsonl").read_text().count("\n") - 1 >= k:
                return
        except OSError:
            pass
        time.sleep(0.01)
    raise AssertionError(f"the job ended (rc {job.poll()}) before {k} partitions were on disk")


def interrupt_mid_batch(job: subprocess.Popen, out: Path, k: int = 3,
                        sig: int = signal.SIGINT) -> tuple[str, str, int]:
    """SIGINT (or ``sig``: SIGTERM ends the job the same way) once k partitions are on disk;
    checks exit 130, no traceback and the one last line, and returns (stdout, stderr, partitions
    the line says were kept)."""
    wait_for_entries(out, k, job)
    os.kill(job.pid, signal.SIGSTOP)  # deterministic: the signal lands mid-batch, never after the end
    os.kill(job.pid, sig)
    os.kill(job.pid, signal.SIGCONT)
    stdout, stderr = job.communicate(timeout=300)
    assert job.returncode == 130, stdout + stderr
    assert "Traceback" not in stderr
    last = stderr.strip().splitlines()[-1]
    m = re.fullmatch(rf"interrupted: (\d+) verified partition\(s\) kept in {re.escape(str(out))}, listed in "
                     rf"{re.escape(str(out / 'manifest.partial.json'))}; rerun with resume=true to prove the rest",
                     last)
    assert m, last
    return stdout, stderr, int(m.group(1))
