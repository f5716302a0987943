"""Ray's own lines in the job's output: the driver prints what Ray's log monitor forwards from the
raylet and the workers (``log_to_driver``); a few of them repeat without news and are kept out.

The raylet's disk warning (``<dir> is over 95% full, available space: 4.6 GB; capacity: 252.0
GB. Object creation will fail if spilling is required.``) comes every 10 s for as long as the
disk stays that full: 18 lines in a 3-minute run on the H200, hiding the job's own. The job says
it once, in its words with the numbers (the preflight's figures at start, or Ray's first line on
a cluster), and drops Ray's repeats. ``--verbose`` leaves Ray's lines as Ray prints them, and
Ray's logs (``session_*/logs/raylet.out``) keep every one.

Ray has no public hook for this: the filter wraps ``ray._private.worker.print_worker_logs``, the
function its log thread prints each batch of forwarded lines with (looked up at every call).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

log = logging.getLogger(__name__)

DISK_FULL = re.compile(r"(?P<path>\S+) is over (?P<pct>[\d.]+)% full, available space: (?P<free>[\d.]+) ?GB; "
                       r"capacity: (?P<cap>[\d.]+) ?GB\. Object creation will fail if spilling is required")


@dataclass
class DiskWarning:
    """Whether the disk warning was said in this process (once is enough)."""

    said: bool = False


DISK = DiskWarning()


def disk_line(path: str, percent: float, free_gib: float, capacity_gib: float) -> str:
    """The job's one line for a disk over Ray's limit (no "warning: " prefix: the logger adds it).
    Ray's line says "GB" for GiB (251.972 GB for a 270.6e9-byte disk): the job says GiB."""
    return (f"disk: {path} is {percent:.1f}% full ({free_gib:.1f} GiB free of {capacity_gib:.1f} GiB), over Ray's "
            f"spilling limit: should the object store fill up, Ray cannot spill objects there (said once; Ray "
            f"repeats it every 10 s in its logs and with --verbose)")


def warn_full_disk(path: str) -> bool:
    """At start: say the disk line once when the file system of Ray's temp dir ``path`` is over
    Ray's limit (the preflight's figures); True when said."""
    from ..preflight import disk_over_ray_limit

    full = disk_over_ray_limit(path)
    if full is None or DISK.said:
        return False
    DISK.said = True
    log.warning(disk_line(*full))
    return True


def drop(line: str) -> bool:
    """Whether Ray's ``line`` stays out of the job's output; the first disk warning of the process
    is said in the job's words instead (unless the job said it at start)."""
    m = DISK_FULL.search(line)
    if m is None:
        return False
    if not DISK.said:
        DISK.said = True
        free, cap = float(m["free"]), float(m["cap"])
        log.warning(disk_line(m["path"], 100 * (1 - free / cap) if cap else 100.0, free, cap))
    return True


def quiet_ray_lines(verbose: bool = False) -> bool:
    """Keep the repeated lines (``drop``) out of what this driver prints; once Ray is imported (the
    caller has set up the environment Ray reads at import). Nothing with ``verbose``. Returns
    whether the filter is in place."""
    if verbose:
        return False
    import ray._private.worker as worker

    original = worker.print_worker_logs
    if getattr(original, "cuzk_filtered", False):
        return True

    def filtered(data, print_file, ignore_prefix: bool = False):
        lines = [ln for ln in data.get("lines", ()) if not drop(ln)]
        if lines:
            original(dict(data, lines=lines), print_file, ignore_prefix)

    filtered.cuzk_filtered = True
    filtered.cuzk_original = original
    worker.print_worker_logs = filtered
    return True


def loud_ray_lines() -> None:
    """Undo quiet_ray_lines (a caller that shares the process, a test)."""
    import ray._private.worker as worker

    worker.print_worker_logs = getattr(worker.print_worker_logs, "cuzk_original", worker.print_worker_logs)
