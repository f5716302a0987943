"""Run a job on a real small tmpfs without being root on the host: `unshare -Urm` gives this
helper a private user + mount namespace where it may mount a tmpfs (of a given size, or read-only);
the mount is gone when the namespace ends, and nothing leaks to the host's mounts.

Outside: ``run_on_tmpfs(...)`` returns the job's exit code, stdout and stderr, and a copy of what
was on the tmpfs afterwards (under ``keep/disk``). Inside (``python tests/mounted.py SPEC``): mount,
run the job, optionally pause it (SIGSTOP) once its journal holds ``fill_after`` entries, fill the
file system until it is full (ENOSPC from the kernel, not simulated), resume it (SIGCONT), wait."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path


def unshare_works() -> bool:
    """True where unprivileged user + mount namespaces are allowed (``unshare -Urm``)."""
    if not shutil.which("unshare"):
        return False
    res = subprocess.run(["unshare", "-Urm", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"],
                         capture_output=True)
    return res.returncode == 0


def run_on_tmpfs(mount: Path, keep: Path, cmd: list[str], size: str = "1m", read_only: bool = False,
                 fill_after: int | None = None, journal: str | None = None, timeout: float = 300) -> dict:
    """Mount a tmpfs of ``size`` on ``mount`` (read-only if asked) in a private namespace and run
    ``cmd`` there; with ``fill_after``, fill the file system once ``journal`` (a path under the
    mount) lists that many entries. Returns {"rc", "stdout", "stderr"}; the tmpfs's files are
    copied to ``keep/disk``."""
    mount.mkdir(parents=True, exist_ok=True)
    keep.mkdir(parents=True, exist_ok=True)
    spec = {"mount": str(mount), "keep": str(keep), "cmd": cmd, "size": size, "read_only": read_only,
            "fill_after": fill_after, "journal": journal, "timeout": timeout}
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    res = subprocess.run(["unshare", "-Urm", sys.executable, __file__, json.dumps(spec)], capture_output=True,
                         text=True, timeout=timeout + 60, env=env)
    assert res.returncode == 0, f"the namespace helper failed: {res.stdout}{res.stderr}"
    return json.loads((keep / "result.json").read_text())


def _journal_entries(path: Path) -> int:
    try:
        return max(0, path.read_bytes().count(b"\n") - 1)  # the first line is the header
    except OSError:
        return 0


def _fill(mount: Path) -> int:
    """Write zeros into mount/filler until the file system is full; returns the bytes written."""
    n = 0
    with open(mount / "filler", "wb", buffering=0) as f:
        chunk = b"\0" * 4096
        try:
            while True:
                n += f.write(chunk)
        except OSError as e:
            assert e.errno == 28, e  # ENOSPC: the disk really is full now
    return n


def _inside(spec: dict) -> None:
    mount, keep = Path(spec["mount"]), Path(spec["keep"])
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={spec['size']},mode=0755", "tmpfs", str(mount)], check=True)
    if spec["read_only"]:
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
    job = subprocess.Popen(spec["cmd"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    filled = None
    if spec["fill_after"] is not None:
        journal, deadline = Path(spec["journal"]), time.monotonic() + spec["timeout"]
        while _journal_entries(journal) < spec["fill_after"] and job.poll() is None:
            if time.monotonic() > deadline:  # a safety net for a stuck job, not an assertion on speed
                break
            time.sleep(0.01)
        if job.poll() is None:
            os.kill(job.pid, signal.SIGSTOP)  # paused: the disk fills between two of its writes
            filled = _fill(mount)
            os.kill(job.pid, signal.SIGCONT)
    out, err = job.communicate(timeout=spec["timeout"])
    if filled is not None:
        (mount / "filler").unlink()  # the test's own file: what is copied out is the job's
    shutil.copytree(mount, keep / "disk", symlinks=True, dirs_exist_ok=True)
    (keep / "result.json").write_text(json.dumps({"rc": job.returncode, "stdout": out, "stderr": err,
                                                  "filled": filled}))


if __name__ == "__main__":
    _inside(json.loads(sys.argv[1]))
