"""Values out of range are refused in one line naming the value and the range, never clamped
(issue 15): job-level values (config.check_job_values), sizes (admission.parse_bytes), the
circuit's seed and size (circuits.from_config). The engine's counts are tests/test_settings.py's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cuzk_ray.circuits import make_circuit
from cuzk_ray.config import check_job_values
from cuzk_ray.engines.admission import parse_bytes

ROOT = Path(__file__).resolve().parent.parent
JOB = {"proofs": 1, "seed": 0, "setup_seed": 0}


@pytest.mark.parametrize("change,message", [
    ({"proofs": 0}, "proofs=0: must be at least 1"),
    ({"seed": -1}, "seed=-1: must be at least 0"),
    ({"setup_seed": -3}, "setup_seed=-3: must be at least 0"),
    ({"warmup": -1}, "warmup=-1: must be at least 0"),
    ({"sample_s": 0.0}, "sample_s=0.0: must be above 0 (seconds between host memory samples)"),
])
def test_job_values_out_of_range_are_refused(change, message):
    with pytest.raises(ValueError) as e:
        check_job_values({**JOB, **change})
    assert str(e.value) == message
    # twin: the boundary itself is accepted (and nothing is changed)
    ok = {**JOB, "proofs": 1, "seed": 0, "setup_seed": 0, "warmup": 0, "sample_s": 0.01}
    check_job_values(ok)
    assert ok == {**JOB, "warmup": 0, "sample_s": 0.01}


@pytest.mark.parametrize("value,message", [
    (0, "memory.host_budget=0: expected a size of at least 1 byte"),
    (-5, "memory.host_budget=-5: expected a size of at least 1 byte"),
    ("0GiB", "memory.host_budget='0GiB': expected a size of at least 1 byte"),
    ("-1GiB", "memory.host_budget='-1GiB': expected a size such as 64GiB, 500MB or a number of bytes"),
])
def test_sizes_below_one_byte_are_refused(value, message):
    with pytest.raises(ValueError) as e:
        parse_bytes(value, "memory.host_budget")
    assert str(e.value) == message
    assert parse_bytes("1GiB", "memory.host_budget") == 1 << 30 and parse_bytes(1, "x") == 1
    assert parse_bytes(None, "x") is None


@pytest.mark.parametrize("circuit,message", [
    ({"circuit_seed": -1}, "circuit.circuit_seed=-1: must be at least 0"),
    ({"constraints": (1 << 31) + 1}, "circuit.constraints=2147483649: must be at most 2^31 = 2147483648 (the QAP "
                                     "domain needs the 2n-th roots of unity; Fr has them up to 2^32)"),
    ({"constraints": 1 << 40, "shape": "filecoin"}, "circuit.constraints=1099511627776: must be at most 2^31"),
])
def test_circuit_values_out_of_range_are_refused(circuit, message):
    with pytest.raises(ValueError) as e:
        make_circuit({"kind": "porep", **circuit})
    assert str(e.value).startswith(message), str(e.value)
    # twin: the largest allowed size is accepted (sizes only: nothing is built)
    assert make_circuit({"kind": "porep", "constraints": 1 << 31, "circuit_seed": 0}).layout().n_wires > 1 << 31


def test_negative_seed_is_one_line_before_any_work(tmp_path):
    """seed=-1 used to fail every partition three times, after the key was made."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    out = tmp_path / "out"
    res = subprocess.run([sys.executable, str(ROOT / "jobs" / "prove.py"), "seed=-1", "circuit.constraints=256",
                          f"output_dir={out}", f"cache_dir={tmp_path / 'cache'}"], capture_output=True, text=True,
                         timeout=120, env=env)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr.strip().splitlines()[-1] == "error: seed=-1: must be at least 0"
    assert not (tmp_path / "cache").exists() and not (out / "manifest.json").exists()
