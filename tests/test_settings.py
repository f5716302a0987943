"""EngineSettings refuse counts below their minimum (one line naming the setting), where they
were silently clamped or crashed later (pw=0, provers=-1, ray.num_cpus=0); valid values pass."""

import subprocess
import sys
from pathlib import Path

import pytest

from cuzk_ray.engines import EngineSettings


@pytest.mark.parametrize("kw, message", [
    ({"pw": 0}, "pw=0: must be at least 1"),
    ({"pw": -1}, "pw=-1: must be at least 1"),
    ({"provers": 0}, "provers=0: must be at least 1"),
    ({"provers": -1}, "provers=-1: must be at least 1"),
    ({"max_attempts": 0}, "max_attempts=0: must be at least 1"),
    ({"cpu_threads": 0}, "cpu_threads=0: must be at least 1"),
    ({"gpu_concurrency": 0}, "gpu_concurrency=0: must be at least 1"),
    ({"gpu_workers_per_device": 0}, "gpu_workers_per_device=0: must be at least 1"),
    ({"pw_per_gpu": 0}, "pw_per_gpu=0: must be at least 1"),
    ({"max_restarts": -1}, "max_restarts=-1: must be at least 0"),
    ({"ray": {"num_cpus": 0}}, "ray.num_cpus=0: must be at least 1"),
    ({"ray": {"num_gpus": -1}}, "ray.num_gpus=-1: must be at least 0"),
])
def test_counts_below_their_minimum_are_refused(kw, message):
    with pytest.raises(ValueError, match=f"^{message}$"):
        EngineSettings(backend="cpu", **kw)


def test_valid_settings_pass_unchanged():
    s = EngineSettings(backend="cpu", pw=1, provers=1, max_attempts=1, cpu_threads=1, max_restarts=0,
                       ray={"num_cpus": 1, "num_gpus": 0})
    assert (s.pw, s.provers, s.max_attempts, s.cpu_threads) == (1, 1, 1, 1)
    assert EngineSettings(backend="cpu").pw is None  # unset: the engine's default


def test_prove_job_refuses_pw_0_in_one_line(tmp_path):
    root = Path(__file__).resolve().parent.parent
    res = subprocess.run([sys.executable, str(root / "jobs" / "prove.py"), "pw=0", f"output_dir={tmp_path / 'o'}",
                          f"cache_dir={tmp_path / 'c'}"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and res.stderr.strip().splitlines()[-1] == "error: pw=0: must be at least 1"
    assert "Traceback" not in res.stderr and not (tmp_path / "c").exists()


@pytest.mark.ray
def test_one_cpu_for_provers_and_synthesis_is_refused_not_a_hang(tmp_path):
    """ray.num_cpus=1: the CPU prover takes the only CPU and synthesis would wait forever; the job
    says so in one line instead (its twin: every job test that runs with 2 CPUs)."""
    root = Path(__file__).resolve().parent.parent
    res = subprocess.run([sys.executable, str(root / "jobs" / "prove.py"), "ray.num_cpus=1", "backend=cpu",
                          "circuit.constraints=256", "circuit.partitions=2", f"output_dir={tmp_path / 'o'}",
                          f"cache_dir={tmp_path / 'c'}"], capture_output=True, text=True, timeout=300)
    assert res.returncode == 2, res.stderr[-2000:]
    assert res.stderr.strip().splitlines()[-1] == ("error: ray: the cluster has 1 CPU(s) and the 1 CPU prover(s) "
                                                   "take 1; synthesis needs at least one more (ray.num_cpus>=2, "
                                                   "or fewer provers)")
