"""jobs/bench_request_check.py at 2 KiB: the table it prints, each fresh request's C1 read once."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_each_request_check_reads_its_c1_once(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "jobs" / "bench_request_check.py"), "--size", "2KiB",
                        "--rounds", "2", "--work", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    rows = [line.split() for line in r.stdout.splitlines()[1:]]
    assert [row[0] for row in rows] == ["0", "1"], r.stdout
    for row in rows:
        assert row[3] == "1" and row[4] == "filecoin-stacked-StackedDrg2KiBV1_1-setup0", r.stdout
    assert not list(tmp_path.glob("request-*.json"))  # each round's copy removed
