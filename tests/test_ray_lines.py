"""Ray's repeated disk warning kept out of the job's output (issue 28): the filter on the raylet's
real line (as the H200 run of 2026-12-01 printed it, docs/gpu-runs/2026-12-01-issue14-s5/call1/
bench-p27.log), through Ray's own print function; the job's one line instead; --verbose and other
lines untouched; the preflight's figures at start."""

from __future__ import annotations

import io
import logging
import re

import pytest

from cuzk_ray.engines import ray_lines
from cuzk_ray.preflight import disk_over_ray_limit

pytestmark = pytest.mark.ray

REAL = ("[2026-12-01 20:28:23,354 E 4982 5006] (raylet) file_system_monitor.cc:116: /root/.cache/cuzk-ray/ray/t/"
        "session_2026-12-01_20-28-11_100203_4784 is over 95% full, available space: 4.61396 GB; capacity: 251.972 "
        "GB. Object creation will fail if spilling is required.")
OTHER = "[2026-12-01 20:28:23,354 E 4982 5006] (raylet) node_manager.cc:1: Worker 42 died unexpectedly"


@pytest.fixture
def quiet(monkeypatch):
    import ray._private.worker as worker

    monkeypatch.setattr(ray_lines, "DISK", ray_lines.DiskWarning())
    assert ray_lines.quiet_ray_lines() is True
    yield worker
    ray_lines.loud_ray_lines()
    assert not getattr(worker.print_worker_logs, "cuzk_filtered", False)


def printed(worker, *lines: str) -> str:
    """What Ray's driver prints for a batch of raylet lines (its own print function, after the filter)."""
    sink = io.StringIO()
    worker.print_worker_logs({"lines": list(lines), "pid": "raylet", "ip": "127.0.0.1", "is_err": True}, sink)
    return sink.getvalue()


def test_rays_disk_warning_is_said_once_in_our_words_and_then_dropped(quiet, caplog):
    with caplog.at_level(logging.WARNING, logger="cuzk_ray.engines.ray_lines"):
        out = printed(quiet, REAL, OTHER)
        out += printed(quiet, REAL.replace("4.61396", "4.61395"), REAL)  # the next 10 s
    assert "Object creation will fail" not in out and "is over 95% full" not in out
    assert "Worker 42 died unexpectedly" in out  # negative twin: other raylet lines still pass
    ours = [r.getMessage() for r in caplog.records]
    assert ours == ["disk: /root/.cache/cuzk-ray/ray/t/session_2026-12-01_20-28-11_100203_4784 is 98.2% full "
                    "(4.6 GiB free of 252.0 GiB), over Ray's spilling limit: should the object store fill up, Ray "
                    "cannot spill objects there (said once; Ray repeats it every 10 s in its logs and with --verbose)"]


def test_verbose_leaves_rays_lines_as_ray_prints_them(monkeypatch):
    import ray._private.worker as worker

    before = worker.print_worker_logs
    assert ray_lines.quiet_ray_lines(verbose=True) is False
    assert worker.print_worker_logs is before
    assert "Object creation will fail" in printed(worker, REAL)


def test_the_start_line_comes_from_the_disk_figures(monkeypatch, tmp_path, caplog):
    monkeypatch.setattr(ray_lines, "DISK", ray_lines.DiskWarning())
    monkeypatch.setenv("RAY_local_fs_capacity_threshold", "0.000001")  # any disk in use is over it
    full = disk_over_ray_limit(str(tmp_path / "not" / "made"))
    assert full is not None and full[0] == str(tmp_path) and full[3] > full[2] >= 0
    with caplog.at_level(logging.WARNING, logger="cuzk_ray.engines.ray_lines"):
        assert ray_lines.warn_full_disk(str(tmp_path)) is True
        assert ray_lines.warn_full_disk(str(tmp_path)) is False  # once
        assert ray_lines.drop(REAL) is True  # Ray's own line then dropped without a second one of ours
    assert len(caplog.records) == 1
    assert re.fullmatch(rf"disk: {re.escape(str(tmp_path))} is [\d.]+% full \([\d.]+ GiB free of [\d.]+ GiB\), .*",
                        caplog.records[0].getMessage())
    # negative twin: under Ray's limit nothing is said
    monkeypatch.setenv("RAY_local_fs_capacity_threshold", "1.0")
    monkeypatch.setattr(ray_lines, "DISK", ray_lines.DiskWarning())
    assert disk_over_ray_limit(str(tmp_path)) is None and ray_lines.warn_full_disk(str(tmp_path)) is False
