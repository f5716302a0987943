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
    ({"watchdog_s": 0}, "watchdog_s=0: must be above 0"),
    ({"restart_wait_s": -1}, "restart_wait_s=-1: must be above 0"),
    ({"retry_backoff_max_s": 0}, "retry_backoff_max_s=0: must be above 0"),
    ({"retry_backoff_s": -0.5}, "retry_backoff_s=-0.5: must be at least 0"),
])
def test_counts_below_their_minimum_are_refused(kw, message):
    with pytest.raises(ValueError, match=f"^{message}$"):
        EngineSettings(backend="cpu", **kw)


def test_valid_settings_pass_unchanged():
    s = EngineSettings(backend="cpu", pw=1, provers=1, max_attempts=1, cpu_threads=1, max_restarts=0,
                       ray={"num_cpus": 1, "num_gpus": 0})
    assert (s.pw, s.provers, s.max_attempts, s.cpu_threads) == (1, 1, 1, 1)
    assert EngineSettings(backend="cpu").pw is None  # unset: the engine's default


def test_fault_settings_and_the_ray_temp_dir_come_from_the_job_config():
    """conf/config.yaml's watchdog_s, retry_backoff_s, retry_backoff_max_s, restart_wait_s and
    max_restarts reach EngineSettings; the embedded Ray's temp dir defaults to <cache_dir>/ray.
    The twin: a config without them keeps the defaults, and ray.temp_dir set is kept."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from cuzk_ray.config import register

    register()
    conf = str(Path(__file__).resolve().parent.parent / "conf")
    with initialize_config_dir(config_dir=conf, version_base="1.3"):
        cfg = OmegaConf.to_container(compose("config", overrides=[
            "watchdog_s=7", "retry_backoff_s=0.25", "retry_backoff_max_s=4", "restart_wait_s=9", "max_restarts=1",
            "cache_dir=/c"]), resolve=True)
        plain = OmegaConf.to_container(compose("config", overrides=["ray.temp_dir=/t"]), resolve=True)
    s = EngineSettings.from_config(cfg)
    assert (s.watchdog_s, s.retry_backoff_s, s.retry_backoff_max_s, s.restart_wait_s, s.max_restarts) == (
        7, 0.25, 4, 9, 1)
    assert s.ray["temp_dir"] == "/c/ray"
    d = EngineSettings.from_config(plain)
    assert (d.watchdog_s, d.retry_backoff_s, d.retry_backoff_max_s, d.restart_wait_s, d.max_restarts) == (
        60, 1, 30, 120, 3)
    assert d.ray["temp_dir"] == "/t"


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


def test_register_stores_the_schemas_once_per_config_store(monkeypatch):
    """A prove command calls register() twice (jobs/prove.py, precheck_argv's compose): the second
    stores nothing. The twin: a store that lacks a schema gets it."""
    from hydra.core.config_store import ConfigStore

    from cuzk_ray.config import register

    register()
    stored = []
    real = ConfigStore.store
    monkeypatch.setattr(ConfigStore, "store", lambda self, **kw: stored.append(kw["name"]) or real(self, **kw))
    register()
    assert stored == []
    cs = ConfigStore.instance()  # the twin: a store that lost one schema (restored after the test)
    monkeypatch.setattr(cs, "repo", {k: v for k, v in cs.repo.items() if k != "prove_schema.yaml"})
    register()
    assert stored == ["prove_schema"] and "prove_schema.yaml" in cs.list("/")
